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

package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// terminationLog is where Kubernetes reads a container's termination
// message (terminationMessagePath's default).
const terminationLog = "/dev/termination-log"

// reportPanic, deferred in the serving goroutine, turns a panic into a
// scrubbed report on stderr and in the termination message (which anyone
// who may get pods can read), then exits 2 as Go does. Go's own report
// would print the panic value as it is, resolved secrets included.
func reportPanic(scrub func(string) string, stderr io.Writer) {
	r := recover()
	if r == nil {
		return
	}
	report := scrub(fmt.Sprintf("panic: %v\n\n%s", r, debug.Stack()))
	fmt.Fprintln(stderr, report)
	if f, err := os.OpenFile(terminationLog, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		// The kubelet keeps at most 4096 bytes.
		if len(report) > 4000 {
			report = report[:4000]
		}
		_, _ = f.WriteString(report)
		_ = f.Close()
	}
	os.Exit(2)
}
