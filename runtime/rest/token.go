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

package rest

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// DefaultTokenRecheck is how often a token file is looked at again: a
// rotated token (a Secret volume updated in place) is accepted, and the old
// one refused, within this long.
const DefaultTokenRecheck = time.Second

// TokenCheck holds the bearer token a server accepts: a fixed one, or one
// read from a file and read again when the file changes, so rotating the
// Secret behind it needs no restart. The token is kept only as its SHA-256,
// compared in constant time (hashing first keeps its length from leaking
// through timing). Surrounding whitespace of the file is ignored.
type TokenCheck struct {
	path    string
	recheck time.Duration
	log     *slog.Logger
	now     func() time.Time

	mu        sync.Mutex
	sum       [sha256.Size]byte
	set       bool
	checked   time.Time
	stamp     fileStamp
	lastError string
}

type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

// StaticToken accepts exactly token; an empty token accepts nothing.
func StaticToken(token string) *TokenCheck {
	t := &TokenCheck{}
	if token = strings.TrimSpace(token); token != "" {
		t.sum, t.set = sha256.Sum256([]byte(token)), true
	}
	return t
}

// FileToken accepts the token held in path, read now (an error if it
// cannot be read or is empty) and again whenever the file changes, looked
// at no more often than every recheck (DefaultTokenRecheck when zero). A
// later unreadable or empty file keeps the last good token and is logged.
func FileToken(path string, recheck time.Duration, log *slog.Logger) (*TokenCheck, error) {
	if recheck <= 0 {
		recheck = DefaultTokenRecheck
	}
	if log == nil {
		log = slog.Default()
	}
	t := &TokenCheck{path: path, recheck: recheck, log: log, now: time.Now}
	tok, err := ReadTokenFile(path)
	if err != nil {
		return nil, err
	}
	t.sum, t.set, t.checked, t.stamp = sha256.Sum256([]byte(tok)), true, t.now(), stampOf(path)
	return t, nil
}

// Token returns the current token (for the worker's own forwarded calls).
func (t *TokenCheck) Token() string {
	if t == nil || t.path == "" {
		return ""
	}
	tok, err := ReadTokenFile(t.path)
	if err != nil {
		return ""
	}
	return tok
}

// Enabled reports whether a token is required.
func (t *TokenCheck) Enabled() bool { return t != nil && (t.set || t.path != "") }

// Accepts reports whether header ("Bearer <token>") carries the token.
func (t *TokenCheck) Accepts(header string) bool {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	want, set := t.current()
	return set && subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func (t *TokenCheck) current() ([sha256.Size]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.path == "" {
		return t.sum, t.set
	}
	now := t.now()
	if now.Sub(t.checked) < t.recheck {
		return t.sum, t.set
	}
	t.checked = now
	st := stampOf(t.path)
	if st == t.stamp {
		return t.sum, t.set
	}
	tok, err := ReadTokenFile(t.path)
	if err != nil {
		if msg := err.Error(); msg != t.lastError {
			t.lastError = msg
			t.log.Warn("REST token file changed but cannot be used; keeping the previous token", "file", t.path, "err", err)
		}
		return t.sum, t.set
	}
	t.lastError = ""
	t.sum, t.set, t.stamp = sha256.Sum256([]byte(tok)), true, st
	return t.sum, t.set
}

// stampOf identifies a file's content cheaply: Kubernetes updates a Secret
// volume by swapping a symbolic link, which changes all three.
func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}
}
