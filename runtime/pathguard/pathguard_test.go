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

package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfineFollowsLinksAndRefusesOwnFiles tries the members of the class
// "a file connector reaches the worker's own files": a path outside, `..`,
// a link inside the granted directory to outside, a dangling link, a link
// swapped in after the check, /proc/self/environ, and the worker's own
// token file inside the granted directory.
func TestConfineFollowsLinksAndRefusesOwnFiles(t *testing.T) {
	root := t.TempDir()
	granted, outside := filepath.Join(root, "granted"), filepath.Join(root, "outside")
	for _, d := range []string{granted, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(granted, "in.txt"))
	write(filepath.Join(outside, "secret.txt"))
	token := filepath.Join(granted, "rest-token")
	write(token)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(granted, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(granted, "dangling.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(granted, "dirlink")); err != nil {
		t.Fatal(err)
	}
	g := Confine([]string{granted}, []string{token})

	for _, ok := range []string{filepath.Join(granted, "in.txt"), filepath.Join(granted, "new-file.txt"), granted} {
		if _, err := g.Check(ok); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", ok, err)
		}
	}
	for _, bad := range []string{
		filepath.Join(outside, "secret.txt"),
		filepath.Join(granted, "..", "outside", "secret.txt"),
		filepath.Join(granted, "link.txt"),
		filepath.Join(granted, "dangling.txt"),
		filepath.Join(granted, "dirlink", "secret.txt"),
		filepath.Join(granted, "dirlink", "not-yet.txt"),
		"/proc/self/environ",
		"/etc/conveyor/worker.properties",
		"relative.txt",
		token,
	} {
		if _, err := g.Check(bad); !errors.Is(err, ErrRefused) {
			t.Errorf("Check(%s) = %v, want a refusal", bad, err)
		}
		if f, err := g.Open(bad, os.O_RDONLY, 0); err == nil {
			f.Close()
			t.Errorf("Open(%s) succeeded", bad)
		}
	}
	if _, err := g.Check(token); err == nil || !strings.Contains(err.Error(), "worker's own files") {
		t.Errorf("token refusal = %v, want it to say the worker's own files", err)
	}

	// A link swapped in after the check: the opened file is judged by the
	// descriptor the kernel gave.
	swapped := filepath.Join(granted, "swapped.txt")
	write(swapped)
	if _, err := g.Check(swapped); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(swapped); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), swapped); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(swapped)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := g.CheckOpened(swapped, f); !errors.Is(err, ErrRefused) {
		t.Errorf("CheckOpened after the swap = %v, want a refusal", err)
	}

	// Nothing granted: nothing allowed. Nil: everything (standalone).
	if _, err := Confine(nil, nil).Check(filepath.Join(granted, "in.txt")); !errors.Is(err, ErrRefused) {
		t.Errorf("empty grant allowed a file: %v", err)
	}
	var none *Guard
	if _, err := none.Check("/proc/self/environ"); err != nil {
		t.Errorf("nil guard refused: %v", err)
	}
}
