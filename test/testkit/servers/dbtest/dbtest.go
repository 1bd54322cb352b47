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

// Package dbtest holds what the database test servers (pgtest for
// PostgreSQL, mariadbtest for MariaDB) share: one server per test binary
// started from TestMain, free loopback ports, random passwords and
// per-test database names.
package dbtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Run starts a server with start into *srv, runs the tests and stops the
// server; it returns the exit code for os.Exit. A server that cannot start
// fails the run with the reason; what names the server in messages.
func Run[S interface{ Stop() error }](m *testing.M, what string, srv *S, start func() (S, error)) int {
	s, err := start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting %s: %v\n", what, err)
		return 1
	}
	*srv = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping %s: %v\n", what, err)
	}
	return code
}

// FreePort returns a free TCP port on host.
func FreePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RandomHex returns n random bytes in hex (a password).
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// DatabaseName is a database name made of prefix (a test's name: lower
// case, [a-z0-9_] only, at most 40 characters) and a sequence number.
func DatabaseName(prefix string, seq int64) string {
	name := unsafeChars.ReplaceAllString(strings.ToLower(prefix), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("%s_%d", strings.Trim(name, "_"), seq)
}
