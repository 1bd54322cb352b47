/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// UnprivilegedUser returns the identity a server that refuses to run as root
// (PostgreSQL, MariaDB) runs as: the system user name, created when missing,
// for root; nil (the caller) for anyone else. why says which script creates
// the user, for the error.
func UnprivilegedUser(name, why string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		out, addErr := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if addErr != nil && !bytes.Contains(out, []byte("already exists")) {
			return nil, fmt.Errorf("creating user %s (%s): %v: %s", name, why, addErr, out)
		}
		if u, err = user.Lookup(name); err != nil {
			return nil, fmt.Errorf("looking up user %s: %w", name, err)
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
