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

// Package jdbc is the core that the JDBC-style connectors (the PostgreSQL
// and MySQL table sources and sinks) share: the table source's modes and
// configuration, how tables are planned over tasks, the positions kept as
// source offsets and the ordered query that continues a table from its
// position, the read loop that turns rows into records with those
// positions, and the sink's configuration. What differs per database
// (connecting, quoting, catalog queries, type mapping, upsert statements)
// is the database's own package, reached through the small Dialect
// interface.
package jdbc

import (
	"slices"
	"sort"
)

// Assign spreads items (tables) over min(n, len(items)) tasks so that their
// estimated sizes are balanced: largest first, each to the task with the
// smallest total so far (then the fewest items, then the lowest index).
// Every task gets at least one item. Equal sizes are ordered by name, so
// the plan does not depend on the listing's order.
func Assign[T any](items []T, n int, size func(T) float64, name func(T) string) [][]T {
	n = min(n, len(items))
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(items)
	sort.SliceStable(sorted, func(i, j int) bool {
		if si, sj := size(sorted[i]), size(sorted[j]); si != sj {
			return si > sj
		}
		return name(sorted[i]) < name(sorted[j])
	})
	groups := make([][]T, n)
	load := make([]float64, n)
	for _, t := range sorted {
		best := 0
		for i := 1; i < n; i++ {
			if load[i] < load[best] || (load[i] == load[best] && len(groups[i]) < len(groups[best])) {
				best = i
			}
		}
		groups[best] = append(groups[best], t)
		load[best] += size(t)
	}
	return groups
}

// SameNames reports whether two listings hold the same names, in any order:
// a connector that watches its tables asks for task reconfiguration when
// they differ.
func SameNames[T any](a, b []T, name func(T) string) bool {
	if len(a) != len(b) {
		return false
	}
	names := func(l []T) []string {
		out := make([]string, len(l))
		for i, t := range l {
			out[i] = name(t)
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}
