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

package guard

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A panic in f becomes an error carrying the value and the stack; f's own
// error is wrapped; Go hands either to fail instead of ending the process.
func TestCallAndGoRecoverPanics(t *testing.T) {
	err := Call("polling", func() error { var m map[string]int; m["x"] = 1; return nil })
	if !IsPanic(err) || !strings.Contains(err.Error(), "polling: panic: assignment to entry in nil map") {
		t.Fatalf("Call: %v", err)
	}
	if tr := Trace(err); !strings.Contains(tr, "guard_test.go") {
		t.Errorf("trace has no stack of the panicking function:\n%s", tr)
	}
	plain := errors.New("db gone")
	if err := Call("put", func() error { return plain }); !errors.Is(err, plain) || IsPanic(err) || Trace(err) != "put: db gone" {
		t.Errorf("Call with an error: %v", err)
	}
	got := make(chan error, 2)
	Go("task goroutine", func() error { panic("boom") }, func(err error) { got <- err })
	Go("task goroutine", func() error { return nil }, func(err error) { got <- err })
	select {
	case err := <-got:
		if !IsPanic(err) || !strings.Contains(err.Error(), "boom") {
			t.Errorf("Go: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Go's panic never reached fail")
	}
	select {
	case err := <-got:
		t.Errorf("a goroutine that returned nil failed with %v", err)
	case <-time.After(100 * time.Millisecond):
	}
}

// crashEnv makes the test binary crash as a worker would (see
// TestCrashReportNamesTheConnector).
const crashEnv = "GUARD_TEST_CRASH"

func TestMain(m *testing.M) {
	if mode := os.Getenv(crashEnv); mode != "" {
		crash(mode)
	}
	os.Exit(m.Run())
}

// crash keeps crash reports in $CONVEYOR_CRASH_FILE and ends the process
// from a goroutine labelled as task 2 of connector "bad".
func crash(mode string) {
	if _, err := KeepCrashReports(CrashFile()); err != nil {
		panic(err)
	}
	Label(context.Background(), "bad", 2)
	done := make(chan struct{})
	go func() { // inherits the labels
		switch mode {
		case "panic":
			panic("a goroutine outside Call panicked")
		case "fatal":
			var mu sync.Mutex
			mu.Unlock() // a fatal error: no recover catches it
		}
		close(done)
	}()
	<-done
	os.Exit(0)
}

// The runtime's report of a process that crashed names the connector and
// task whose goroutine crashed, for an unrecovered panic and for a fatal
// error alike, and the next process reads it back.
func TestCrashReportNamesTheConnector(t *testing.T) {
	for _, c := range []struct{ mode, head string }{
		{"panic", "panic: a goroutine outside Call panicked"},
		{"fatal", fatalHead},
	} {
		file := filepath.Join(t.TempDir(), "crash")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+c.mode, "CONVEYOR_CRASH_FILE="+file)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%s: the process did not crash:\n%s", c.mode, out)
		}
		t.Setenv("CONVEYOR_CRASH_FILE", file)
		report, err := KeepCrashReports(CrashFile())
		if err != nil {
			t.Fatal(err)
		}
		cr, ok := ParseCrash(report)
		if !ok || cr.Head != c.head || cr.Connector != "bad" || cr.Task != 2 || !strings.Contains(cr.Stack, "guard_test.go") {
			t.Errorf("%s: parsed %+v (ok %v) from:\n%s", c.mode, cr, ok, report)
		}
	}
	if _, ok := ParseCrash(nil); ok {
		t.Error("an empty report parsed as a crash")
	}
}
