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

package assignor

import (
	"cmp"
	"slices"

	"github.com/conveyor-dev/conveyor/runtime/store"
)

// Assignment is a set of connectors and tasks. The functions of this package
// return it sorted (connectors by name, tasks by connector then index) and
// without duplicates, so equal sets compare equal with Equal.
type Assignment struct {
	Connectors []string       `json:"connectors,omitempty"`
	Tasks      []store.TaskID `json:"tasks,omitempty"`
}

// Len is the number of connectors plus the number of tasks.
func (a Assignment) Len() int { return len(a.Connectors) + len(a.Tasks) }

// IsEmpty says whether the assignment holds nothing.
func (a Assignment) IsEmpty() bool { return a.Len() == 0 }

// Sorted returns a sorted copy of a without duplicates.
func (a Assignment) Sorted() Assignment {
	out := Assignment{Connectors: slices.Clone(a.Connectors), Tasks: slices.Clone(a.Tasks)}
	slices.Sort(out.Connectors)
	out.Connectors = slices.Compact(out.Connectors)
	slices.SortFunc(out.Tasks, CompareTasks)
	out.Tasks = slices.Compact(out.Tasks)
	if len(out.Connectors) == 0 {
		out.Connectors = nil
	}
	if len(out.Tasks) == 0 {
		out.Tasks = nil
	}
	return out
}

// Equal says whether a and b hold the same connectors and tasks.
func (a Assignment) Equal(b Assignment) bool {
	sa, sb := a.Sorted(), b.Sorted()
	return slices.Equal(sa.Connectors, sb.Connectors) && slices.Equal(sa.Tasks, sb.Tasks)
}

// HasConnector says whether a holds connector c.
func (a Assignment) HasConnector(c string) bool { return slices.Contains(a.Connectors, c) }

// HasTask says whether a holds task t.
func (a Assignment) HasTask(t store.TaskID) bool { return slices.Contains(a.Tasks, t) }

// CompareTasks orders tasks by connector name, then by index.
func CompareTasks(a, b store.TaskID) int {
	if c := cmp.Compare(a.Connector, b.Connector); c != 0 {
		return c
	}
	return cmp.Compare(a.Task, b.Task)
}
