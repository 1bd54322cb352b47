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
	"slices"

	"github.com/conveyor-dev/conveyor/runtime/store"
)

// capTasks enforces max.tasks.per.worker on a balanced assignment: a member
// assigned more than limit tasks keeps the tasks it already runs first (no
// needless stop), then the others in task order, up to limit; a task it
// runs and loses is revoked. The tasks cut stay unassigned: the balance is
// within one task, so a cut means every member is full, and the operator's
// capacity floor (ceil(tasks / maxTasksPerWorker) workers) brings the
// workers that will run them. limit <= 0 caps nothing.
func capTasks(assigned []Assignment, members []Member, revoked [][]store.TaskID, limit int) {
	if limit <= 0 {
		return
	}
	for i := range assigned {
		tasks := assigned[i].Tasks
		if len(tasks) <= limit {
			continue
		}
		owned := map[store.TaskID]bool{}
		for _, t := range members[i].Owned.Tasks {
			owned[t] = true
		}
		keep := make([]store.TaskID, 0, limit)
		for _, t := range tasks {
			if owned[t] && len(keep) < limit {
				keep = append(keep, t)
			}
		}
		for _, t := range tasks {
			if !owned[t] && len(keep) < limit {
				keep = append(keep, t)
			}
		}
		for _, t := range tasks {
			if owned[t] && !slices.Contains(keep, t) {
				revoked[i] = append(revoked[i], t)
			}
		}
		slices.SortFunc(keep, taskKind.compare)
		assigned[i].Tasks = keep
	}
}
