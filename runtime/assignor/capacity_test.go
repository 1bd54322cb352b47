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
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/store"
)

// TestMaxTasksPerMember: over seeded random groups and histories, no member
// is ever assigned more than the cap, no task runs twice, the cap keeps a
// member's running tasks before new ones, and a cap at or above the
// balanced share changes nothing.
func TestMaxTasksPerMember(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 1 + r.IntN(5)
		conns := map[string]int{}
		total := 0
		for c := range 1 + r.IntN(4) {
			k := r.IntN(9)
			conns[fmt.Sprint("c", c)] = k
			total += k
		}
		limit := 1 + r.IntN(6)
		members := make([]Member, n)
		for i := range members {
			members[i] = Member{MemberID: fmt.Sprint("m", i), WorkerID: fmt.Sprint("w", i)}
		}
		for round := range 3 {
			capped := Assign(Input{Members: members, Connectors: conns, Now: t0, MaxTasksPerMember: limit})
			free := Assign(Input{Members: members, Connectors: conns, Now: t0})
			seen := map[store.TaskID]string{}
			for _, m := range members {
				a := capped.Members[m.MemberID]
				if len(a.Assigned.Tasks) > limit {
					t.Fatalf("seed %d round %d: %s runs %d tasks, cap %d", seed, round, m.MemberID, len(a.Assigned.Tasks), limit)
				}
				for _, tk := range a.Assigned.Tasks {
					if other, dup := seen[tk]; dup {
						t.Fatalf("seed %d: task %v on %s and %s", seed, tk, other, m.MemberID)
					}
					seen[tk] = m.MemberID
				}
				// Kept tasks first: a member below the cap loses nothing it runs.
				kept := 0
				for _, tk := range m.Owned.Tasks {
					for _, x := range a.Assigned.Tasks {
						if x == tk {
							kept++
						}
					}
				}
				if want := min(limit, len(m.Owned.Tasks)-len(a.Revoked.Tasks)); kept < want {
					t.Fatalf("seed %d round %d: %s kept %d of its %d tasks under cap %d", seed, round, m.MemberID, kept, len(m.Owned.Tasks), limit)
				}
			}
			if want := min(total, limit*n); round > 0 && len(seen) < want && !hasRevocations(capped) {
				t.Fatalf("seed %d round %d: %d tasks assigned, want %d (cap %d x %d workers, %d tasks)", seed, round, len(seen), want, limit, n, total)
			}
			if (total+n-1)/n <= limit {
				for _, m := range members {
					if fmt.Sprint(capped.Members[m.MemberID]) != fmt.Sprint(free.Members[m.MemberID]) {
						t.Fatalf("seed %d: a cap above the share (%d tasks, %d workers, cap %d) changed %s's assignment", seed, total, n, limit, m.MemberID)
					}
				}
			}
			members = apply(members, capped)
		}
	}
}
