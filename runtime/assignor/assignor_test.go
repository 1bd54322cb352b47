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
	"slices"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func tasksOf(c string, idx ...int) []store.TaskID {
	out := make([]store.TaskID, len(idx))
	for i, t := range idx {
		out[i] = store.TaskID{Connector: c, Task: t}
	}
	return out
}

// apply returns the members of the next round: each runs what it was assigned.
func apply(members []Member, res Result) []Member {
	out := make([]Member, len(members))
	for i, m := range members {
		m.Owned = res.Members[m.MemberID].Assigned
		out[i] = m
	}
	return out
}

func mustNoRevoke(t *testing.T, res Result) {
	t.Helper()
	for id, ma := range res.Members {
		if !ma.Revoked.IsEmpty() {
			t.Fatalf("member %s: revoked %+v, want nothing", id, ma.Revoked)
		}
	}
}

func TestFreshAssignmentBalancedAndSpread(t *testing.T) {
	members := []Member{{MemberID: "m-a", WorkerID: "a"}, {MemberID: "m-b", WorkerID: "b"}, {MemberID: "m-c", WorkerID: "c"}}
	res := Assign(Input{Members: members, Connectors: map[string]int{"x": 6, "y": 3, "z": 0}, Now: t0})
	mustNoRevoke(t, res)
	for _, m := range members {
		a := res.Members[m.MemberID].Assigned
		if len(a.Connectors) != 1 || len(a.Tasks) != 3 {
			t.Errorf("member %s: %+v, want 1 connector and 3 tasks", m.MemberID, a)
		}
		perConn := map[string]int{}
		for _, tk := range a.Tasks {
			perConn[tk.Connector]++
		}
		if perConn["x"] != 2 || perConn["y"] != 1 {
			t.Errorf("member %s: tasks %v not spread (want 2 of x and 1 of y)", m.MemberID, a.Tasks)
		}
	}
	if res.Delay != 0 || len(res.State.Lost) != 0 {
		t.Errorf("delay %v lost %v, want none", res.Delay, res.State.Lost)
	}
}

func TestBalancedGroupIsLeftAlone(t *testing.T) {
	members := []Member{
		{MemberID: "m-a", WorkerID: "a", Owned: Assignment{Connectors: []string{"x"}, Tasks: tasksOf("x", 0, 3)}},
		{MemberID: "m-b", WorkerID: "b", Owned: Assignment{Tasks: tasksOf("x", 1, 4)}},
		{MemberID: "m-c", WorkerID: "c", Owned: Assignment{Tasks: tasksOf("x", 2)}},
	}
	in := Input{Members: members, Connectors: map[string]int{"x": 5}, Now: t0, LostWorkerDelay: time.Second}
	res := Assign(in)
	mustNoRevoke(t, res)
	for _, m := range members {
		if got := res.Members[m.MemberID].Assigned; !got.Equal(m.Owned) {
			t.Errorf("member %s: assigned %+v, want what it owns %+v", m.MemberID, got, m.Owned)
		}
	}
	// Determinism: reversed member order and shuffled owned lists give the same result.
	rev := slices.Clone(members)
	slices.Reverse(rev)
	rev[1].Owned.Tasks = []store.TaskID{{Connector: "x", Task: 4}, {Connector: "x", Task: 1}, {Connector: "x", Task: 4}}
	in.Members = rev
	res2 := Assign(in)
	if fmt.Sprint(res) != fmt.Sprint(res2) {
		t.Errorf("same input in another order gave another result:\n%v\n%v", res, res2)
	}
}

func TestJoiningWorkerTakesWorkInTwoRounds(t *testing.T) {
	conns := map[string]int{"x": 6, "y": 3}
	members := []Member{{MemberID: "m-a", WorkerID: "a"}, {MemberID: "m-b", WorkerID: "b"}}
	res := Assign(Input{Members: members, Connectors: conns, Now: t0})
	members = apply(members, res)
	members = append(members, Member{MemberID: "m-c", WorkerID: "c"})

	res = Assign(Input{Members: members, Connectors: conns, Previous: res.State, Now: t0})
	if got := res.Members["m-c"].Assigned; !got.IsEmpty() {
		// Nothing is unowned yet: the newcomer waits for the revoked work.
		t.Errorf("newcomer got %+v in the revoking round", got)
	}
	revokedTasks := len(res.Members["m-a"].Revoked.Tasks) + len(res.Members["m-b"].Revoked.Tasks)
	revokedConns := len(res.Members["m-a"].Revoked.Connectors) + len(res.Members["m-b"].Revoked.Connectors)
	if revokedTasks != 3 || revokedConns != 0 {
		t.Errorf("revoked %d tasks and %d connectors, want exactly 3 and 0", revokedTasks, revokedConns)
	}
	members = apply(members, res)
	res = Assign(Input{Members: members, Connectors: conns, Previous: res.State, Now: t0})
	mustNoRevoke(t, res)
	for _, m := range members {
		if got := len(res.Members[m.MemberID].Assigned.Tasks); got != 3 {
			t.Errorf("member %s: %d tasks, want 3", m.MemberID, got)
		}
	}
}

func TestLostWorkerHeldThenReturned(t *testing.T) {
	conns := map[string]int{"x": 6}
	delay := 10 * time.Second
	members := []Member{{MemberID: "m-a", WorkerID: "a"}, {MemberID: "m-b", WorkerID: "b"}, {MemberID: "m-c", WorkerID: "c"}}
	res := Assign(Input{Members: members, Connectors: conns, Now: t0, LostWorkerDelay: delay})
	members = apply(members, res)
	cWork := res.Members["m-c"].Assigned

	// c crashes.
	survivors := members[:2]
	res = Assign(Input{Members: survivors, Connectors: conns, Previous: res.State, Now: t0.Add(time.Second), LostWorkerDelay: delay})
	mustNoRevoke(t, res)
	if res.Delay != delay {
		t.Errorf("delay %v, want %v", res.Delay, delay)
	}
	for _, m := range survivors {
		if got := res.Members[m.MemberID].Assigned; !got.Equal(m.Owned) || res.Members[m.MemberID].Delay != delay {
			t.Errorf("member %s: %+v, want its own work %+v only, with the delay", m.MemberID, res.Members[m.MemberID], m.Owned)
		}
	}
	if len(res.State.Lost) != 1 || !res.State.Lost[0].Held.Equal(cWork) {
		t.Fatalf("lost %+v, want c holding %+v", res.State.Lost, cWork)
	}
	// Another rebalance later does not extend the deadline.
	res = Assign(Input{Members: survivors, Connectors: conns, Previous: res.State, Now: t0.Add(4 * time.Second), LostWorkerDelay: delay})
	if res.Delay != 7*time.Second {
		t.Errorf("delay %v after 4s, want 7s (deadline kept from first sight)", res.Delay)
	}

	// c returns with a new member id before the deadline and gets its work back.
	back := append(apply(survivors, res), Member{MemberID: "m-c2", WorkerID: "c"})
	res2 := Assign(Input{Members: back, Connectors: conns, Previous: res.State, Now: t0.Add(5 * time.Second), LostWorkerDelay: delay})
	mustNoRevoke(t, res2)
	if got := res2.Members["m-c2"].Assigned; !got.Equal(cWork) {
		t.Errorf("returning c got %+v, want its work %+v", got, cWork)
	}
	if res2.Delay != 0 || len(res2.State.Lost) != 0 {
		t.Errorf("delay %v lost %v after the return, want none", res2.Delay, res2.State.Lost)
	}

	// Or: the deadline passes and the work is spread over the survivors.
	res3 := Assign(Input{Members: apply(survivors, res), Connectors: conns, Previous: res.State, Now: t0.Add(11 * time.Second), LostWorkerDelay: delay})
	mustNoRevoke(t, res3)
	for _, m := range survivors {
		if got := len(res3.Members[m.MemberID].Assigned.Tasks); got != 3 {
			t.Errorf("after the deadline member %s has %d tasks, want 3", m.MemberID, got)
		}
	}
	if res3.Delay != 0 || len(res3.State.Lost) != 0 {
		t.Errorf("delay %v lost %v after the deadline, want none", res3.Delay, res3.State.Lost)
	}
}

func TestGracefulLeaveMovesAtOnce(t *testing.T) {
	conns := map[string]int{"x": 6}
	delay := time.Minute
	members := []Member{{MemberID: "m-a", WorkerID: "a"}, {MemberID: "m-b", WorkerID: "b"}, {MemberID: "m-c", WorkerID: "c"}}
	first := Assign(Input{Members: members, Connectors: conns, Now: t0, LostWorkerDelay: delay})
	members = apply(members, first)

	check := func(t *testing.T, res Result, survivors []Member) {
		t.Helper()
		mustNoRevoke(t, res)
		if res.Delay != 0 {
			t.Errorf("delay %v, want none", res.Delay)
		}
		for _, m := range survivors {
			if got := len(res.Members[m.MemberID].Assigned.Tasks); got != 3 {
				t.Errorf("member %s has %d tasks, want 3", m.MemberID, got)
			}
		}
	}
	t.Run("departed", func(t *testing.T) {
		res := Assign(Input{Members: members[:2], Connectors: conns, Previous: first.State, Now: t0, LostWorkerDelay: delay, Departed: []string{"c"}})
		check(t, res, members[:2])
	})
	t.Run("leaving flag", func(t *testing.T) {
		leaving := slices.Clone(members)
		leaving[2].Leaving = true
		leaving[2].Owned = Assignment{} // it stopped its work first
		res := Assign(Input{Members: leaving, Connectors: conns, Previous: first.State, Now: t0, LostWorkerDelay: delay})
		check(t, res, members[:2])
		if got := res.Members["m-c"].Assigned; !got.IsEmpty() {
			t.Errorf("leaving member got %+v", got)
		}
		// Then it leaves the group: nothing is held for it.
		res = Assign(Input{Members: apply(members[:2], res), Connectors: conns, Previous: res.State, Now: t0, LostWorkerDelay: delay})
		check(t, res, members[:2])
	})
	t.Run("leaving flag, seen by a member but not by the next leader", func(t *testing.T) {
		// Round 2: c leaves on purpose; b's SyncGroup loses the race with
		// c's LeaveGroup, so b keeps round 1's state and owns only its own.
		leaving := slices.Clone(members)
		leaving[2].Leaving = true
		leaving[2].Owned = Assignment{}
		second := Assign(Input{Members: leaving, Connectors: conns, Previous: first.State, Now: t0, LostWorkerDelay: delay})
		if !slices.Equal(second.State.Left, []string{"c"}) {
			t.Fatalf("state of the round c left in: Left %v, want [c]", second.State.Left)
		}
		a := members[0]
		a.Owned = second.Members["m-a"].Assigned
		departed := second.State.Left // in a's next metadata (Metadata.Departed): a was sent this state
		b := members[1]
		// Round 3, led by b with round 1's state: c's work is not held.
		res := Assign(Input{Members: []Member{a, b}, Connectors: conns, Previous: first.State, Now: t0, LostWorkerDelay: delay, Departed: departed})
		if res.Delay != 0 {
			t.Errorf("delay %v, want none: c left on purpose in the round a saw", res.Delay)
		}
		n := 0
		for _, m := range res.Members {
			n += len(m.Assigned.Tasks)
		}
		if n != 6 {
			t.Errorf("%d tasks assigned, want all 6", n)
		}
	})
	t.Run("leaving flag, still owning", func(t *testing.T) {
		leaving := slices.Clone(members)
		leaving[2].Leaving = true
		res := Assign(Input{Members: leaving, Connectors: conns, Previous: first.State, Now: t0, LostWorkerDelay: delay})
		if got := res.Members["m-c"]; !got.Assigned.IsEmpty() || !got.Revoked.Equal(leaving[2].Owned) {
			t.Errorf("leaving member got %+v, want all it owns revoked", got)
		}
		for _, m := range members[:2] {
			if got := res.Members[m.MemberID].Assigned; !got.Equal(m.Owned) {
				t.Errorf("member %s got %+v while c's work is in flight, want only its own %+v", m.MemberID, got, m.Owned)
			}
		}
	})
}

func TestRemovedWorkIsRevoked(t *testing.T) {
	members := []Member{
		{MemberID: "m-a", WorkerID: "a", Owned: Assignment{Connectors: []string{"gone", "x"}, Tasks: append(tasksOf("gone", 0), tasksOf("x", 0, 2, 4)...)}},
		{MemberID: "m-b", WorkerID: "b", Owned: Assignment{Tasks: tasksOf("x", 1, 3)}},
	}
	res := Assign(Input{Members: members, Connectors: map[string]int{"x": 2}, Now: t0})
	want := Assignment{Connectors: []string{"gone"}, Tasks: append(tasksOf("gone", 0), tasksOf("x", 2, 4)...)}
	if got := res.Members["m-a"].Revoked; !got.Equal(want) {
		t.Errorf("a revoked %+v, want %+v", got, want)
	}
	if got := res.Members["m-b"].Revoked; !got.Equal(Assignment{Tasks: tasksOf("x", 3)}) {
		t.Errorf("b revoked %+v, want x-3", got)
	}
}

func TestDoubleOwnershipKeptByPreviousOwner(t *testing.T) {
	prev := State{Workers: map[string]Assignment{"b": {Tasks: tasksOf("x", 0)}}}
	members := []Member{
		{MemberID: "m-a", WorkerID: "a", Owned: Assignment{Tasks: tasksOf("x", 0)}},
		{MemberID: "m-b", WorkerID: "b", Owned: Assignment{Tasks: tasksOf("x", 0)}},
	}
	res := Assign(Input{Members: members, Connectors: map[string]int{"x": 1}, Previous: prev, Now: t0})
	if got := res.Members["m-a"]; !got.Revoked.Equal(Assignment{Tasks: tasksOf("x", 0)}) || len(got.Assigned.Tasks) != 0 {
		t.Errorf("a: %+v, want x-0 revoked", got)
	}
	if got := res.Members["m-b"]; !got.Assigned.Equal(Assignment{Tasks: tasksOf("x", 0)}) || !got.Revoked.IsEmpty() {
		t.Errorf("b: %+v, want x-0 kept", got)
	}
}

// bigInput is 200 connectors with 1000 tasks in all on 5 workers, as a
// steady cluster where one worker just restarted empty.
func bigInput() Input {
	conns := map[string]int{}
	total := 0
	for i := range 200 {
		conns[fmt.Sprintf("connector-%03d", i)] = 1 + (i*7)%9 // 1..9 tasks
		total += 1 + (i*7)%9
	}
	conns["connector-000"] += 1000 - total // 1000 in all
	var members []Member
	for i := range 5 {
		members = append(members, Member{MemberID: fmt.Sprintf("member-%d", i), WorkerID: fmt.Sprintf("10.0.0.%d:8083", i+1)})
	}
	res := Assign(Input{Members: members, Connectors: conns, Now: t0})
	members = apply(members, res)
	members[4].Owned = Assignment{}
	members[4].MemberID = "member-4-new"
	return Input{Members: members, Connectors: conns, Previous: res.State, Now: t0, LostWorkerDelay: 5 * time.Second}
}

func TestBigAssignmentIsFast(t *testing.T) {
	in := bigInput()
	total := 0
	for _, n := range in.Connectors {
		total += n
	}
	if total != 1000 {
		t.Fatalf("bigInput has %d tasks, want 1000", total)
	}
	start := time.Now()
	res := Assign(in)
	// The benchmark measures the real figure; this only catches a blow-up
	// on 2 shared cores.
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("assigning 200 connectors and 1000 tasks to 5 workers took %v", d)
	}
	if got := len(res.Members["member-4-new"].Assigned.Tasks); got != 200 {
		t.Errorf("restarted worker got %d tasks back, want its 200", got)
	}
}

func BenchmarkAssign200Connectors1000Tasks5Workers(b *testing.B) {
	in := bigInput()
	for b.Loop() {
		Assign(in)
	}
}

func BenchmarkAssignFresh200Connectors1000Tasks5Workers(b *testing.B) {
	in := bigInput()
	for i := range in.Members {
		in.Members[i].Owned = Assignment{}
	}
	in.Previous = State{}
	for b.Loop() {
		Assign(in)
	}
}

func TestShedTakesFromOverSharedConnectorsFirst(t *testing.T) {
	items := append(tasksOf("a", 0), tasksOf("b", 0, 1, 2, 3, 4)...)
	share := map[string]int{"a": 1, "b": 5}
	keep, drop := shed(taskKind, items, 3, share)
	// b is at its share, a too; b is bigger, so b-4 goes first, then a's
	// only task (b now under its share), then b again once a is empty.
	if want := append(tasksOf("b", 4), append(tasksOf("a", 0), tasksOf("b", 3)...)...); !slices.Equal(drop, want) {
		t.Errorf("dropped %v, want %v", drop, want)
	}
	if want := tasksOf("b", 0, 1, 2); !slices.Equal(keep, want) {
		t.Errorf("kept %v, want %v", keep, want)
	}
	keep, drop = shed(taskKind, append(tasksOf("a", 0, 1, 2), tasksOf("b", 0, 1, 2)...), 2, map[string]int{"a": 1, "b": 3})
	if want := tasksOf("a", 2, 1); !slices.Equal(drop, want) || len(keep) != 4 {
		t.Errorf("dropped %v (kept %v), want %v: a is the connector over its share", drop, keep, want)
	}
}

func TestFreshBigAssignmentSpreadsConnectors(t *testing.T) {
	in := bigInput()
	for i := range in.Members {
		in.Members[i].Owned = Assignment{}
	}
	in.Previous = State{}
	res := Assign(in)
	var per []Assignment
	for _, ma := range res.Members {
		per = append(per, ma.Assigned)
	}
	spread := 0
	for c := range in.Connectors {
		if lo, hi := taskSpread(c, per); hi-lo <= 1 {
			spread++
		}
	}
	if spread < len(in.Connectors)*95/100 {
		t.Errorf("only %d of %d connectors have their tasks spread within one per worker", spread, len(in.Connectors))
	}
	for id, ma := range res.Members {
		if len(ma.Assigned.Tasks) != 200 || len(ma.Assigned.Connectors) != 40 {
			t.Errorf("member %s: %d connectors and %d tasks, want 40 and 200", id, len(ma.Assigned.Connectors), len(ma.Assigned.Tasks))
		}
	}
}

// Two live members with one worker id (two processes advertising the same
// address) are two members for balance; the worker's memory is their union,
// and when one goes, the other gets the worker's work.
func TestTwoMembersOfOneWorker(t *testing.T) {
	conns := map[string]int{"x": 4}
	members := []Member{{MemberID: "m-a", WorkerID: "a"}, {MemberID: "m-b", WorkerID: "b"}}
	res := Assign(Input{Members: members, Connectors: conns, Now: t0, LostWorkerDelay: time.Second})
	members = apply(members, res)
	bWork := members[1].Owned

	members = append(members, Member{MemberID: "m-b2", WorkerID: "b"})
	res = Assign(Input{Members: members, Connectors: conns, Previous: res.State, Now: t0, LostWorkerDelay: time.Second})
	if got := res.Members["m-b2"].Assigned; !got.IsEmpty() {
		t.Errorf("second member of b got %+v while the first still runs b's work", got)
	}
	if got := res.State.Workers["b"]; len(got.Tasks) != 1 {
		t.Errorf("worker b remembered as %+v, want the one task m-b keeps", got)
	}
	// m-b goes away; m-b2 gets b's work, and nothing is held for b.
	members = apply([]Member{members[0], members[2]}, res)
	res = Assign(Input{Members: members, Connectors: conns, Previous: res.State, Now: t0, LostWorkerDelay: time.Second})
	mustNoRevoke(t, res)
	if got := res.Members["m-b2"].Assigned; !got.Equal(bWork) {
		t.Errorf("m-b2 got %+v, want b's work %+v", got, bWork)
	}
	if res.Delay != 0 {
		t.Errorf("delay %v, want none: worker b is present", res.Delay)
	}
}

// taskSpread returns the fewest and the most tasks of connector c that one of
// the assignments holds.
func taskSpread(c string, per []Assignment) (lo, hi int) {
	lo = -1
	for _, a := range per {
		k := 0
		for _, tk := range a.Tasks {
			if tk.Connector == c {
				k++
			}
		}
		if lo < 0 || k < lo {
			lo = k
		}
		hi = max(hi, k)
	}
	return max(lo, 0), hi
}
