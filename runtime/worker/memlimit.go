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

package worker

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryLimitFraction is the share of the container's memory limit that
// the worker gives the Go runtime as its soft limit (GOMEMLIMIT): the GC
// works harder as the heap nears it, and the rest is left for stacks,
// buffers outside the heap and the runtime itself.
const MemoryLimitFraction = 0.9

// cgroupMemoryFiles are where a container's memory limit is read: cgroup
// v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// containerMemoryLimit reads the container's memory limit in bytes with
// read (os.ReadFile in the worker), and the file it came from; 0 when
// there is none ("max", or v1's "unlimited" near 2^63).
func containerMemoryLimit(read func(string) ([]byte, error)) (int64, string) {
	for _, f := range cgroupMemoryFiles {
		b, err := read(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(s, 10, 64)
		if s == "max" || err != nil || n <= 0 || n >= 1<<62 {
			return 0, f
		}
		return n, f
	}
	return 0, ""
}

// ApplyMemoryLimit sets the Go runtime's soft memory limit to
// MemoryLimitFraction of the container's memory limit, unless GOMEMLIMIT
// is set in the environment or the container has no limit. It returns
// the limit it set (0 for none) and where the container's came from.
func ApplyMemoryLimit() (int64, string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT"
	}
	limit, from := containerMemoryLimit(os.ReadFile)
	if limit == 0 {
		return 0, from
	}
	soft := int64(float64(limit) * MemoryLimitFraction)
	debug.SetMemoryLimit(soft)
	return soft, from
}
