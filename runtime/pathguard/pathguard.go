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

// Package pathguard confines the files a distributed worker opens on a
// connector's behalf to the directories the cluster's owner granted. Every
// check is made on the real path, after symbolic links are followed, and
// an opened file is checked again through the descriptor the kernel gave,
// so a link swapped in between the check and the open is refused too.
package pathguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WorkerOwn are the directories a connector never reaches, whatever the
// owner granted: the worker's own credentials (its config, REST and metrics
// tokens and Kafka credentials under /etc/conveyor, the ServiceAccount
// token) and the process's view of itself and of the machine (/proc holds
// /proc/self/environ, /dev the log stream on /dev/stdout).
var WorkerOwn = []string{"/etc/conveyor", "/var/run/secrets", "/run/secrets", "/proc", "/sys", "/dev"}

// ErrRefused marks a path outside the granted directories.
var ErrRefused = errors.New("path not allowed")

// Guard decides which paths may be opened. The zero Guard (or a nil one)
// allows every path: standalone mode, where whoever runs the worker owns
// the machine.
type Guard struct {
	confined bool
	allowed  []string // as granted, cleaned
	never    []string
}

// Confine returns a Guard that allows only paths under allowed (files or
// directories) and never a path under never or [WorkerOwn]. An empty
// allowed list allows nothing.
func Confine(allowed, never []string) *Guard {
	g := &Guard{confined: true}
	for _, a := range allowed {
		if a = strings.TrimSpace(a); a != "" {
			g.allowed = append(g.allowed, filepath.Clean(a))
		}
	}
	for _, n := range append(append([]string{}, WorkerOwn...), never...) {
		if n = strings.TrimSpace(n); n != "" {
			g.never = append(g.never, filepath.Clean(n))
		}
	}
	return g
}

// Confined reports whether the guard restricts paths at all.
func (g *Guard) Confined() bool { return g != nil && g.confined }

// Allowed returns the granted directories as configured.
func (g *Guard) Allowed() []string {
	if g == nil {
		return nil
	}
	return append([]string(nil), g.allowed...)
}

// Check returns the real path of path (links followed; for a file that does
// not exist yet, its directory's real path and its name) and an error
// wrapping [ErrRefused] when that real path is not under an allowed
// directory's real path, or is under a never-readable one.
func (g *Guard) Check(path string) (string, error) {
	if !g.Confined() {
		return path, nil
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: %s is not an absolute path", ErrRefused, path)
	}
	real, err := RealPath(path)
	if err != nil {
		return "", err
	}
	return real, g.checkReal(path, real)
}

// CheckDir checks a directory that globs or listings start from: it must
// itself lie under an allowed directory (a listing of a parent of one
// would show files outside it).
func (g *Guard) CheckDir(dir string) error {
	_, err := g.Check(dir)
	return err
}

func (g *Guard) checkReal(path, real string) error {
	for _, n := range g.never {
		rn := realOr(n)
		if Within(rn, real) || Within(n, real) {
			return fmt.Errorf("%w: %s is among the worker's own files (%s), which connectors may never open", ErrRefused, shown(path, real), n)
		}
	}
	for _, a := range g.allowed {
		if Within(realOr(a), real) {
			return nil
		}
	}
	if len(g.allowed) == 0 {
		return fmt.Errorf("%w: %s: no directory is granted to file connectors on this cluster", ErrRefused, shown(path, real))
	}
	return fmt.Errorf("%w: %s is outside the granted directories (%s)", ErrRefused, shown(path, real), strings.Join(g.allowed, ", "))
}

// CheckOpened checks the file the kernel actually opened, through
// /proc/self/fd: path was checked before the open, but a link swapped in
// since would have been followed. Where /proc is not mounted, the check
// made before the open stands.
func (g *Guard) CheckOpened(path string, f *os.File) error {
	if !g.Confined() {
		return nil
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return nil
	}
	return g.checkReal(path, real)
}

// Open opens path with flag and perm after checking it, and checks the
// opened file again; a refused file is closed and the error wraps
// [ErrRefused].
func (g *Guard) Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	if _, err := g.Check(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	if err := g.CheckOpened(path, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// RealPath follows every link of path. For a path that does not exist, it
// resolves the nearest existing directory above it and keeps the rest, so a
// file to be created is judged by where it would land; a dangling link is
// refused, as creating through it would land wherever it points.
func RealPath(path string) (string, error) {
	path = filepath.Clean(path)
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	if fi, lerr := os.Lstat(path); lerr == nil {
		if fi.Mode()&os.ModeSymlink == 0 {
			// Not a link: the file was created between the two looks (two
			// tasks opening one file at once). It exists now: resolve again.
			if real, err := filepath.EvalSymlinks(path); err == nil {
				return real, nil
			}
		}
		return "", fmt.Errorf("%w: %s is a link to a path that does not exist", ErrRefused, path)
	}
	dir, base := filepath.Split(path)
	if dir == path || base == "" {
		return path, nil
	}
	rdir, err := RealPath(filepath.Clean(dir))
	if err != nil {
		return "", err
	}
	return filepath.Join(rdir, base), nil
}

// Within reports whether path is dir or lies under it (both clean).
func Within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realOr is the real path of p, or p when it cannot be resolved.
func realOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func shown(path, real string) string {
	if filepath.Clean(path) == real {
		return path
	}
	return path + " (really " + real + ")"
}
