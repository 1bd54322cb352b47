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

// Package testkit holds the test helpers every tier shares: waits with
// deadlines (Until, Eventually, Consistently), golden files with one refresh flag,
// and a log buffer safe for concurrent writers. It links no Kubernetes
// package, so runtime tests may use it; envtest start-up lives in
// test/testkit/envkit.
package testkit

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Update is the one refresh flag of every golden file: go test ./pkg -update.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// Poll is how often Consistently looks, and how soon Until and Eventually
// look again after their first look.
const Poll = 10 * time.Millisecond

// MaxPoll bounds Until's interval: it doubles from Poll up to this,
// so a quick condition is seen at once and a slow one (an API server read)
// does not load a shared machine with a hundred reads a second.
const MaxPoll = 100 * time.Millisecond

// Until is the one poll of the test kit: it calls cond until it returns
// true, ctx ends or timeout passes, looking again after Poll and then at
// doubling intervals up to MaxPoll. The error names what it waited for and
// cond's last error (an error with ok=false is remembered and retried).
// Code without a testing.TB (harnesses, a TestMain, tools) uses it;
// Eventually is the same wait for a test.
func Until(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	interval := Poll
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("after %v still waiting for %s: %w (last error: %v)", timeout, what, ctx.Err(), last)
			}
			return fmt.Errorf("after %v still waiting for %s: %w", timeout, what, ctx.Err())
		case <-time.After(interval):
		}
		interval = min(2*interval, MaxPoll)
	}
}

// Eventually polls cond (with Until) until it holds, and fails the test
// when timeout passes first. cond returns what it saw, for the failure
// message. It returns how long the wait took.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var seen string
	err := Until(context.Background(), timeout, what, func(context.Context) (bool, error) {
		var ok bool
		ok, seen = cond()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("after %v still waiting for %s; last seen: %s", timeout, what, seen)
	}
	return time.Since(start)
}

// EventuallyNoError is Eventually for a check that returns an error: it
// waits until f returns nil, and the failure names the last error.
func EventuallyNoError(t testing.TB, timeout time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	return Eventually(t, timeout, what, func() (bool, string) {
		err := f()
		return err == nil, fmt.Sprint(err)
	})
}

// EventuallyTrue is Eventually for a condition with nothing to report.
func EventuallyTrue(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return Eventually(t, timeout, what, func() (bool, string) { return cond(), "false" })
}

// Consistently checks cond for the whole of d and fails the test the first
// time it does not hold: the "nothing happens" assertion, instead of a
// sleep followed by one look.
func Consistently(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if ok, seen := cond(); !ok {
			t.Fatalf("%s stopped holding: %s", what, seen)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(Poll)
	}
}

// Golden compares got with the file at path (relative to the test's
// package), or rewrites the file when -update is set.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file %s (run go test with -update to create it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (check the change, then run go test with -update):\n%s", path, LineDiff(string(want), string(got)))
	}
}

// LineDiff shows the first ten lines that differ between want and got.
func LineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, a, b))
			if len(out) == 10 {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

var runs = struct {
	sync.Mutex
	last  map[string]testing.TB
	count map[string]int
}{last: map[string]testing.TB{}, count: map[string]int{}}

// Run is which run of t this is in the process: 1, then 2 and on with
// go test -count=N (every test of a package runs once before any runs again).
func Run(t testing.TB) int {
	runs.Lock()
	defer runs.Unlock()
	if runs.last[t.Name()] != t {
		runs.last[t.Name()] = t
		runs.count[t.Name()]++
	}
	return runs.count[t.Name()]
}

// Unique is base on a test's first run and base-N on its N-th (-count), for
// names that live outside the test (Kafka topics, group ids, objects in a
// shared API server) and must not meet an earlier run's.
func Unique(t testing.TB, base string) string {
	if n := Run(t); n > 1 {
		return fmt.Sprintf("%s-%d", base, n)
	}
	return base
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (loggers of
// several goroutines) and readers.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
