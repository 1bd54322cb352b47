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

package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	took := Eventually(t, time.Second, "three looks", func() (bool, string) {
		return n.Add(1) >= 3, fmt.Sprint(n.Load())
	})
	if n.Load() != 3 || took <= 0 {
		t.Fatalf("looked %d times in %v, want 3", n.Load(), took)
	}
}

// recorder catches Fatalf so the failing paths can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

func catch(r *recorder, f func()) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	f()
}

func TestEventuallyFailsAtTheDeadlineNamingWhatItSaw(t *testing.T) {
	r := &recorder{TB: t}
	catch(r, func() { Eventually(r, 30*time.Millisecond, "never", func() (bool, string) { return false, "seen-7" }) })
	if r.failed == "" || !strings.Contains(r.failed, "seen-7") || !strings.Contains(r.failed, "never") {
		t.Fatalf("failure message %q should name the wait and the last seen value", r.failed)
	}
}

func TestConsistentlyFailsWhenTheConditionBreaks(t *testing.T) {
	r := &recorder{TB: t}
	var n atomic.Int32
	catch(r, func() {
		Consistently(r, time.Second, "stays below 3", func() (bool, string) { return n.Add(1) < 3, fmt.Sprint(n.Load()) })
	})
	if r.failed == "" {
		t.Fatal("Consistently did not fail when its condition broke")
	}
	Consistently(t, 30*time.Millisecond, "always", func() (bool, string) { return true, "" })
}

func TestEventuallyNoErrorNamesTheLastError(t *testing.T) {
	var n atomic.Int32
	EventuallyNoError(t, time.Second, "the third call", func() error {
		if n.Add(1) < 3 {
			return fmt.Errorf("call %d", n.Load())
		}
		return nil
	})
	r := &recorder{TB: t}
	catch(r, func() {
		EventuallyNoError(r, 30*time.Millisecond, "never", func() error { return fmt.Errorf("refused-9") })
	})
	if !strings.Contains(r.failed, "refused-9") {
		t.Fatalf("failure message %q should name the last error", r.failed)
	}
}

func TestUniqueNamesEachRun(t *testing.T) {
	if Unique(t, "orders") != Unique(t, "orders") {
		t.Fatal("one run gave two names")
	}
	got := Unique(t, "orders")
	want := "orders"
	if n := Run(t); n > 1 {
		want = fmt.Sprintf("orders-%d", n)
	}
	if got != want {
		t.Fatalf("run %d: Unique = %q, want %q", Run(t), got, want)
	}
}

// TestUntilRetriesErrorsAndNamesTheLastOne: an error with ok=false is retried; at
// the deadline the error names what was awaited and the last error, and wraps the
// context's.
func TestUntilRetriesErrorsAndNamesTheLastOne(t *testing.T) {
	var n atomic.Int32
	err := Until(context.Background(), time.Second, "the third look", func(context.Context) (bool, error) {
		if n.Add(1) < 3 {
			return false, fmt.Errorf("look %d", n.Load())
		}
		return true, nil
	})
	if err != nil || n.Load() != 3 {
		t.Fatalf("Until = %v after %d looks, want nil after 3", err, n.Load())
	}
	err = Until(context.Background(), 50*time.Millisecond, "a thing that never holds", func(context.Context) (bool, error) {
		return false, errors.New("still not")
	})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "a thing that never holds") || !strings.Contains(err.Error(), "still not") {
		t.Fatalf("Until = %v, want the deadline naming what and the last error", err)
	}
}

// TestUntilEndsWithItsContext: a cancelled parent context ends the wait at once.
func TestUntilEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err := Until(ctx, time.Minute, "nothing", func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("Until = %v after %v, want context.Canceled at once", err, time.Since(start))
	}
}
