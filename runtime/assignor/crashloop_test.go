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
	"testing"
	"time"
)

// checkHeldOff verifies the crash-loop guard's properties in every round:
//   - a held-off worker's members are assigned nothing and told until when;
//   - at least one active member is not held off (the guard never leaves
//     the work without a worker);
//   - a hold-off ends: the round asks for a rebalance no later than then;
//   - without the guard nobody is held off, and members not held off are
//     told nothing of it.
func (s *sim) checkHeldOff(in Input, res Result) {
	s.t.Helper()
	if !in.CrashLoop.enabled() && len(res.HeldOff) > 0 {
		s.fail("held off %v without the guard", res.HeldOff)
	}
	held := map[string]HeldOff{}
	for _, h := range res.HeldOff {
		held[h.WorkerID] = h
		if !h.Until.After(in.Now) {
			s.fail("worker %s held off until %v, not after now %v", h.WorkerID, h.Until, in.Now)
		}
		if res.Delay <= 0 || res.Delay > h.Until.Sub(in.Now) {
			s.fail("worker %s held off until %v but the next rebalance is in %v", h.WorkerID, h.Until, res.Delay)
		}
		if h.Releases < in.CrashLoop.Releases {
			s.fail("worker %s held off after %d releases, the guard needs %d", h.WorkerID, h.Releases, in.CrashLoop.Releases)
		}
	}
	free := 0
	for _, m := range in.Members {
		ma := res.Members[m.MemberID]
		h, isHeld := held[workerOf(m)]
		switch {
		case isHeld:
			if !ma.Assigned.IsEmpty() || !ma.HeldOffUntil.Equal(h.Until) {
				s.fail("held-off worker %s was assigned %+v (held off until %v)", workerOf(m), ma.Assigned, ma.HeldOffUntil)
			}
		case !ma.HeldOffUntil.IsZero():
			s.fail("member %s is told it is held off until %v but is not in Result.HeldOff", m.MemberID, ma.HeldOffUntil)
		case !m.Leaving:
			free++
		}
	}
	if len(held) > 0 && free == 0 {
		s.fail("every active member is held off: %v", res.HeldOff)
	}
}

func workerOf(m Member) string {
	if m.WorkerID != "" {
		return m.WorkerID
	}
	return m.MemberID
}

// TestCrashLoopGuard: worker c of three crashes, stays away longer than
// the lost-worker delay (its work goes to a and b), comes back, and again.
// Without the guard every return pulls tasks back off a and b. With the
// guard (2 releases in the window), the second return is held off: c gets
// nothing, a and b lose nothing; once the hold-off is over, c gets its
// share again.
func TestCrashLoopGuard(t *testing.T) {
	const delay = 5 * time.Second
	guard := CrashLoopGuard{Releases: 2, Window: 10 * time.Minute, HoldOff: 2 * time.Minute}
	for _, tc := range []struct {
		name  string
		guard CrashLoopGuard
		// moved off a and b at each of the three returns of c
		wantMoved []int
	}{
		{"without the guard", CrashLoopGuard{}, []int{2, 2, 2}},
		{"with the guard", guard, []int{2, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			conns := map[string]int{"src": 6}
			owned := map[string]Assignment{}
			var st State
			n := 0
			round := func(workers ...string) Result {
				t.Helper()
				var ms []Member
				for _, w := range workers {
					n++
					ms = append(ms, Member{MemberID: w + "-" + string(rune('a'+n%26)), WorkerID: w, Owned: owned[w]})
				}
				res := Assign(Input{Members: ms, Connectors: conns, Previous: st, Now: now, LostWorkerDelay: delay, CrashLoop: tc.guard})
				st = res.State
				for _, m := range ms {
					owned[m.WorkerID] = res.Members[m.MemberID].Assigned
				}
				return res
			}
			settle := func(workers ...string) Result {
				t.Helper()
				res := round(workers...)
				for range 3 {
					revoking := false
					for _, ma := range res.Members {
						revoking = revoking || !ma.Revoked.IsEmpty()
					}
					if !revoking {
						break
					}
					res = round(workers...)
				}
				return res
			}
			settle("a", "b", "c")
			for cycle, want := range tc.wantMoved {
				// c crashes: its work is held, then released to a and b.
				delete(owned, "c")
				settle("a", "b")
				now = now.Add(delay + time.Second)
				settle("a", "b")
				if got := len(owned["a"].Tasks) + len(owned["b"].Tasks); got != 6 {
					t.Fatalf("cycle %d: a and b run %d tasks after c's work was released, want 6", cycle+1, got)
				}
				beforeA, beforeB := owned["a"], owned["b"]
				// c comes back (a restarted process: it owns nothing).
				now = now.Add(10 * time.Second)
				res := settle("a", "b", "c")
				moved := 0
				for _, w := range []struct{ before, after Assignment }{{beforeA, owned["a"]}, {beforeB, owned["b"]}} {
					for _, task := range w.before.Tasks {
						if !w.after.HasTask(task) {
							moved++
						}
					}
				}
				t.Logf("cycle %d: c's return moved %d tasks off a and b; c runs %d; held off: %+v", cycle+1, moved, len(owned["c"].Tasks), res.HeldOff)
				if moved != want {
					t.Errorf("cycle %d: c's return moved %d tasks off a and b, want %d", cycle+1, moved, want)
				}
				if held := len(res.HeldOff) > 0; held != (want == 0) {
					t.Errorf("cycle %d: held off %v, want held off = %v", cycle+1, res.HeldOff, want == 0)
				}
				now = now.Add(10 * time.Second)
			}
			if tc.guard.enabled() {
				// The hold-off ends: c gets its share again.
				now = now.Add(tc.guard.HoldOff)
				res := settle("a", "b", "c")
				if len(res.HeldOff) != 0 || len(owned["c"].Tasks) != 2 {
					t.Errorf("after the hold-off c runs %d tasks (held off %v), want 2", len(owned["c"].Tasks), res.HeldOff)
				}
			}
		})
	}
}
