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
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
)

// What Call cannot recover: a fatal error of the Go runtime (out of
// memory, a stack overflow, an unlock of an unlocked mutex, concurrent map
// writes) or a panic on a goroutine that did not go through Call ends the
// worker process. The worker then keeps the runtime's crash report in a
// file (debug.SetCrashOutput) that outlives the process (the pod's /tmp,
// an emptyDir), and goroutines that run a connector's code carry labels
// naming it (Label), which the report prints (GODEBUG tracebacklabels=1,
// which KeepCrashReports sets). The restarted worker reads the
// report (ParseCrash) and holds the connector FAILED, so it does not crash
// the next worker it would move to.

// Label keys of the goroutines that run a connector's code.
const (
	LabelConnector = "conveyor.connector"
	LabelTask      = "conveyor.task"
)

// Label labels the calling goroutine, and the goroutines it starts from
// now on, with the connector (and the task, when task >= 0) whose code
// runs on them.
func Label(ctx context.Context, connector string, task int) {
	kv := []string{LabelConnector, connector}
	if task >= 0 {
		kv = append(kv, LabelTask, strconv.Itoa(task))
	}
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(kv...)))
}

// CrashFile is where the worker keeps the runtime's crash report:
// $CONVEYOR_CRASH_FILE; in a pod (KUBERNETES_SERVICE_HOST set)
// /tmp/conveyor-worker.crash, on the worker Deployment's /tmp emptyDir,
// which outlives a container; otherwise "" (none: workers sharing a
// host's /tmp would read each other's reports).
func CrashFile() string {
	if f := os.Getenv("CONVEYOR_CRASH_FILE"); f != "" {
		return f
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return "/tmp/conveyor-worker.crash"
	}
	return ""
}

// KeepCrashReports returns the crash report the previous process left in
// path (nil when it ended without one) and makes the runtime write this
// process's report there, with goroutine labels.
func KeepCrashReports(path string) ([]byte, error) {
	if g := os.Getenv("GODEBUG"); !strings.Contains(g, "tracebacklabels=") {
		// The runtime re-reads GODEBUG when it changes.
		_ = os.Setenv("GODEBUG", strings.TrimPrefix(g+",tracebacklabels=1", ","))
	}
	prev, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("reading the previous crash report %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return prev, fmt.Errorf("opening the crash report file %s: %w", path, err)
	}
	defer f.Close() // SetCrashOutput keeps its own descriptor
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		return prev, fmt.Errorf("setting the crash report file %s: %w", path, err)
	}
	return prev, nil
}

// Crash is what a crash report says about the process's end.
type Crash struct {
	// Head is the first line: "panic: ..." or "fatal error: ...".
	Head string
	// Connector and Task name the connector code the crashing goroutine
	// ran (Task -1: the connector itself); Connector is "" when its labels
	// name none.
	Connector string
	Task      int
	// Stack is the crashing goroutine's stack, at most a few KB.
	Stack string
}

var (
	goroutineHeader = regexp.MustCompile(`(?m)^goroutine \d+ .*\]:$`)
	labelPair       = regexp.MustCompile(`"((?:[^"\\]|\\.)*)": "((?:[^"\\]|\\.)*)"`)
)

// fatalHead stands for the message of a fatal error, which the runtime
// writes to standard error but not to the crash output.
const fatalHead = "fatal error (the message is in the log of the container that crashed)"

// maxCrashStack bounds the stack kept from a crash report.
const maxCrashStack = 4 << 10

// ParseCrash reads a crash report of the Go runtime: its first line and
// the first goroutine it shows, the one that crashed, with its labels.
func ParseCrash(report []byte) (Crash, bool) {
	text := strings.TrimSpace(string(report))
	if text == "" {
		return Crash{}, false
	}
	c := Crash{Task: -1}
	c.Head, _, _ = strings.Cut(text, "\n")
	if strings.HasPrefix(c.Head, "goroutine ") {
		// A fatal error's message goes to standard error only.
		c.Head = fatalHead
	}
	loc := goroutineHeader.FindStringIndex(text)
	if loc == nil {
		return c, true
	}
	header := text[loc[0]:loc[1]]
	for _, m := range labelPair.FindAllStringSubmatch(header, -1) {
		k, _ := strconv.Unquote(`"` + m[1] + `"`)
		v, _ := strconv.Unquote(`"` + m[2] + `"`)
		switch k {
		case LabelConnector:
			c.Connector = v
		case LabelTask:
			if n, err := strconv.Atoi(v); err == nil {
				c.Task = n
			}
		}
	}
	stack := text[loc[0]:]
	if i := strings.Index(stack, "\n\ngoroutine "); i >= 0 {
		stack = stack[:i]
	}
	if len(stack) > maxCrashStack {
		stack = stack[:maxCrashStack]
	}
	c.Stack = stack
	return c, true
}
