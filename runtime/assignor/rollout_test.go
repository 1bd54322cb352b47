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
	"testing"
	"time"
)

// rollingUpdate replaces workers w1..wN (revision "a") by wN+1..w2N
// (revision "b") one at a time, as a Deployment with maxSurge 1 and
// maxUnavailable 0 does: the new worker joins and the group settles, then
// the old one leaves on purpose (Leaving, its work stopped) and is gone.
// With revisions false the workers advertise none. It returns how often
// each connector and task changed worker, and the final assignment.
func rollingUpdate(t *testing.T, n int, conns map[string]int, revisions bool) (map[string]int, map[string]Assignment) {
	t.Helper()
	started := t0
	worker := func(i int, rev string) Member {
		started = started.Add(time.Minute)
		m := Member{MemberID: fmt.Sprintf("m-w%d", i), WorkerID: fmt.Sprintf("w%d", i)}
		if revisions {
			m.Revision, m.Started = rev, started
		}
		return m
	}
	var members []Member
	for i := 1; i <= n; i++ {
		members = append(members, worker(i, "a"))
	}
	holder := map[string]string{} // item -> worker that runs it
	moves := map[string]int{}
	var state State
	round := func() Result {
		res := Assign(Input{Members: members, Connectors: conns, Previous: state, Now: t0, LostWorkerDelay: time.Minute})
		state = res.State
		members = apply(members, res)
		for _, m := range members {
			for _, it := range items(m.Owned) {
				k := it.String()
				if h, ok := holder[k]; ok && h != m.WorkerID {
					moves[k]++
				}
				holder[k] = m.WorkerID
			}
		}
		return res
	}
	settle := func() {
		for range 10 {
			if res := round(); !hasRevocations(res) {
				return
			}
		}
		t.Fatal("the group did not settle in 10 rounds")
	}
	settle()
	clear(moves)
	for i := 1; i <= n; i++ {
		members = append(members, worker(n+i, "b"))
		settle()
		members[0].Leaving, members[0].Owned = true, Assignment{}
		round()
		members = members[1:]
		settle()
	}
	final := map[string]Assignment{}
	for _, m := range members {
		final[m.WorkerID] = m.Owned
	}
	return moves, final
}

// A rolling update moves each connector and task once, from its old worker
// to a new one: the surge worker takes no work it would give back, and the
// old workers take none of the leavers' work.
func TestRollingUpdateMovesEachTaskOnce(t *testing.T) {
	conns := map[string]int{"src": 3, "sink": 3, "big": 7}
	moves, final := rollingUpdate(t, 3, conns, true)
	total := 0
	for it, n := range moves {
		total += n
		if n != 1 {
			t.Errorf("%s moved %d times, want once", it, n)
		}
	}
	if want := len(conns) + 13; total != want {
		t.Errorf("%d moves, want %d: every connector and task once", total, want)
	}
	for w, a := range final {
		if n := len(a.Tasks); n < 4 || n > 5 {
			t.Errorf("after the update %s runs %d tasks, want 4 or 5 (13 on 3)", w, n)
		}
	}

	// Without revisions the assignor cannot tell the surge worker from a
	// scale-up: it balances onto it, and old workers take leavers' work
	// that moves again when they leave.
	moves, _ = rollingUpdate(t, 3, conns, false)
	total = 0
	for _, n := range moves {
		total += n
	}
	if total <= len(conns)+13 {
		t.Errorf("without revisions: %d moves; the comparison expects more than one per item", total)
	}
}

func TestOutgoing(t *testing.T) {
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	cases := []struct {
		name    string
		members []Member
		want    string
	}{
		{"one revision", []Member{{Revision: "a", Started: at(1)}, {Revision: "a", Started: at(2)}}, "map[]"},
		{"surge pod started last", []Member{{Revision: "a", Started: at(1)}, {Revision: "a", Started: at(2)}, {Revision: "b", Started: at(3)}}, "map[0:true 1:true]"},
		{"rollback: the old revision started last", []Member{{Revision: "a", Started: at(4)}, {Revision: "b", Started: at(3)}}, "map[1:true]"},
		{"no revisions", []Member{{Started: at(1)}, {Started: at(2)}}, "map[]"},
		{"a member without a revision is never outgoing", []Member{{Started: at(1)}, {Revision: "b", Started: at(2)}}, "map[]"},
		{"two revisions started at once", []Member{{Revision: "a", Started: at(1)}, {Revision: "b", Started: at(1)}}, "map[]"},
	}
	for _, c := range cases {
		act := make([]int, len(c.members))
		for i := range act {
			act[i] = i
		}
		if got := fmt.Sprint(outgoing(c.members, act)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
