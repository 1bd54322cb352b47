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

// DescendantsNamed returns the ids of this process's descendants whose
// command name (/proc/<pid>/comm, at most 15 characters) is comm: the
// processes of a program this bench started, never another's on the same
// machine.
func DescendantsNamed(comm string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	var named []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		j := bytes.IndexByte(stat, '(')
		if i < 0 || j < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		parent[pid] = ppid
		if string(stat[j+1:i]) == comm {
			named = append(named, pid)
		}
	}
	self := os.Getpid()
	var out []int
	for _, pid := range named {
		for p, hops := parent[pid], 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if p == self {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}
