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

package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's CPU
// times: 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds returns the user plus system CPU time process pid used so
// far, in seconds, read from /proc/<pid>/stat.
func CPUSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	// After "(comm)": state ppid ... utime stime (fields 3, 4, ..., 14, 15).
	end := bytes.LastIndexByte(raw, ')')
	f := bytes.Fields(raw[end+1:])
	if end < 0 || len(f) < 13 {
		return 0, fmt.Errorf("process %d: /proc/%d/stat is too short", pid, pid)
	}
	var ticks float64
	for _, v := range f[11:13] {
		t, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return 0, fmt.Errorf("process %d: CPU time %q: %w", pid, v, err)
		}
		ticks += t
	}
	return ticks / clockTicks, nil
}
