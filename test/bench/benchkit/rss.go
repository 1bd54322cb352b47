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

// Package benchkit holds the small measuring helpers the bench commands
// share.
package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// VmRSSMB returns the resident set size (VmRSS) of process pid in MiB, read
// from /proc/<pid>/status.
func VmRSSMB(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseFloat(string(f[0]), 64)
		if err != nil {
			return 0, fmt.Errorf("process %d: VmRSS %q: %w", pid, f[0], err)
		}
		return kb / 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
