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

// Package assignor decides which worker of a Conveyor cluster runs which
// connectors and tasks. It is the leader's half of the group protocol: a pure
// function from the members' reports (what each runs now), the configured
// connectors and the leader's memory of the previous round to what each member
// runs next and what it must stop first.
//
// The assignor is incremental, cooperative and sticky:
//
//   - Cooperative, in two rounds: work that moves from worker A to worker B is,
//     in the first round, only revoked from A and assigned to nobody. A stops
//     it and rejoins; in the next round the work is unowned and gets placed. So
//     no connector or task is ever owned by two workers at once, and work that
//     keeps its worker is never stopped: it stays in Assigned, never in Revoked.
//   - Balanced: connectors and tasks are each balanced to within one per
//     present worker, and the tasks of one connector are spread across workers.
//   - Sticky: a worker loses work only when it holds more than its target, and
//     the workers that hold the most keep the larger targets, so a rebalance
//     moves as little as possible.
//   - Lost workers: a worker that vanishes without leaving on purpose has its
//     work held back, assigned to nobody, until a deadline (first sight plus
//     the lost-worker delay). If it returns in time, with the same worker id and
//     any member id, it gets its work back; after the deadline the work is
//     spread. A worker that leaves on purpose (Member.Leaving, or its id in
//     Input.Departed) has its work moved at once.
//
// Rebalance-storm guards:
//   - The result depends only on the input, never on the order of members or
//     of their owned lists, and a balanced group gets no revocations: a
//     rebalance that changes nothing moves nothing.
//   - A lost worker's deadline is set when the leader first misses it and is
//     not extended by later rebalances, so other members rejoining cannot
//     postpone the reassignment.
//   - A worker that crashes and returns, again and again, within the delay
//     gets its own work back each time; the other workers are not touched.
//   - While lost work is held, the assignor revokes nothing for balance: it
//     only places unowned work. A replacement worker that joins during the
//     delay then takes the lost work when it is released, instead of first
//     pulling work off the others and later pushing the released work back.
//   - Rolling updates: while members of two revisions share the group (a
//     Deployment's surge pod beside the pods it replaces), the members of
//     every revision but the newest (the revision of the member started
//     last) are about to leave. They keep what they run but take no new
//     work, and nothing is revoked for balance, so the surge worker idles
//     until an old one leaves and then takes that worker's work: each task
//     moves once, from its old worker to a new one, instead of first to the
//     surge worker and again when the old ones hand theirs to the others.
//   - A worker that crashes again and again more slowly than the delay
//     (Input.CrashLoop) is held off after a few releases of its work: it
//     gets nothing for a while, so its share stays on the others instead of
//     moving back and forth on every cycle.
package assignor

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/store"
)

// Member is one member of the group as the leader sees it in JoinGroup.
type Member struct {
	// MemberID is the group member id the coordinator gave the member.
	MemberID string
	// WorkerID is the worker's stable id (its advertised host:port); it
	// survives a rejoin with a new member id. Empty means MemberID. A
	// worker id normally appears once per round (the coordinator drops
	// members that do not rejoin); two members with one id are balanced as
	// two members, and the worker's memory in State is their union.
	WorkerID string
	// URL is the worker's advertised REST URL.
	URL string
	// ConfigOffset is the config-topic offset the member has read to.
	ConfigOffset int64
	// Owned is what the member runs now; it has stopped everything it was
	// told to revoke.
	Owned Assignment
	// Leaving says the worker is shutting down on purpose: it is assigned
	// nothing, whatever it still owns is revoked, and its work is not held
	// back when it leaves the group. A leaving worker should stop its work
	// (flush, commit) first and report Owned empty, so that its work moves in
	// this very round.
	Leaving bool
	// Revision is the worker's release within its cluster: in Kubernetes
	// the pod's pod-template-hash, which a rolling update changes. Empty
	// when unknown.
	Revision string
	// Started is when the worker's process started; with Revision it tells
	// which release a rolling update is moving to (see outgoing).
	Started time.Time
}

// Input is everything one assignment depends on.
type Input struct {
	// Members are the members of this generation of the group.
	Members []Member
	// Connectors maps every configured connector to its number of task
	// configs (0 allowed): connector c has tasks 0..n-1.
	Connectors map[string]int
	// Previous is the leader's memory from the previous Assign (Result.State);
	// the zero value at start or after a leader change.
	Previous State
	// Now is the current time, for lost-worker deadlines.
	Now time.Time
	// LostWorkerDelay is how long a worker that vanished without leaving on
	// purpose keeps its work; 0 spreads its work at once.
	LostWorkerDelay time.Duration
	// Departed lists worker ids known to have left on purpose: their work
	// moves at once instead of waiting for LostWorkerDelay.
	Departed []string
	// CrashLoop configures the slow crash-loop guard (zero: off).
	CrashLoop CrashLoopGuard
	// MaxTasksPerMember, when positive, caps the tasks one member runs
	// (max.tasks.per.worker); tasks beyond every member's cap stay
	// unassigned until more workers join (see capTasks).
	MaxTasksPerMember int
}

// MemberAssignment is one member's share of a Result.
type MemberAssignment struct {
	// Assigned is the full set the member runs after this round: what it
	// keeps plus what is new.
	Assigned Assignment
	// Revoked is what the member must stop before it rejoins.
	Revoked Assignment
	// Delay, when positive, says a lost worker's work is held back: the group
	// should rebalance again after Delay.
	Delay time.Duration
	// HeldOffUntil, when set, says the crash-loop guard holds this member's
	// worker off: it gets no work before then.
	HeldOffUntil time.Time
}

// Result is the outcome of Assign.
type Result struct {
	// Members holds every member's assignment by MemberID.
	Members map[string]MemberAssignment
	// State is the leader's memory to pass as Input.Previous next time.
	State State
	// Delay, when positive, is when the leader must rebalance again to
	// release held work of lost workers (or end a hold-off).
	Delay time.Duration
	// HeldOff lists the workers the crash-loop guard holds off this round.
	HeldOff []HeldOff
}

// State is what the leader remembers between rounds. It is plain data and
// JSON-serialisable.
type State struct {
	// Workers maps each worker id of the last round to the full assignment it
	// was given.
	Workers map[string]Assignment `json:"workers,omitempty"`
	// Lost lists the workers whose work is held back, by worker id.
	Lost []LostWorker `json:"lost,omitempty"`
	// Unstable lists the workers whose work was released recently, for the
	// crash-loop guard.
	Unstable []UnstableWorker `json:"unstable,omitempty"`
	// Left lists the workers that left on purpose in the last round
	// (Member.Leaving). Every member keeps the state it was sent and names
	// them in its next metadata (Metadata.Departed), so a leader that
	// missed that round (its SyncGroup lost to a leaver's LeaveGroup, say)
	// and remembers their work under their names moves it at once instead
	// of holding it as lost work.
	Left []string `json:"left,omitempty"`
}

// LostWorker is a worker that vanished without leaving on purpose, and the
// work held back for it.
type LostWorker struct {
	WorkerID string     `json:"workerId"`
	Held     Assignment `json:"held"`
	Deadline time.Time  `json:"deadline"`
}

// MaxConfigOffset returns the highest config-topic offset among the members
// (-1 without members). The leader must have read the config topic at least
// that far before it assigns; a member behind the leader's offset must read
// up to it before it starts its assignment.
func MaxConfigOffset(members []Member) int64 {
	maxOffset := int64(-1)
	for _, m := range members {
		maxOffset = max(maxOffset, m.ConfigOffset)
	}
	return maxOffset
}

// itemKind describes one kind of assignable item (connector or task).
type itemKind[K comparable] struct {
	compare func(a, b K) int
	// group is the key whose items are spread across workers: a task's
	// connector. For connectors it is the connector itself.
	group func(K) string
}

var (
	connectorKind = itemKind[string]{compare: cmp.Compare[string], group: func(c string) string { return c }}
	taskKind      = itemKind[store.TaskID]{compare: CompareTasks, group: func(t store.TaskID) string { return t.Connector }}
)

// side is the per-kind working set of one Assign call.
type side[K comparable] struct {
	kind       itemKind[K]
	configured map[K]bool
	all        []K          // configured items, sorted
	prevOwner  map[K]string // worker id that Previous assigned the item to
	owner      map[K]int    // member index that keeps the item
	kept       [][]K        // per member: owned items it keeps (before balancing)
	revoked    [][]K        // per member: items it must stop
	claimed    map[K]bool   // items kept, in flight (revoked) or held or preferred
	preferred  [][]K        // per member: unowned items that should return to it
}

func newSide[K comparable](kind itemKind[K], all []K, n int) *side[K] {
	s := &side[K]{
		kind:       kind,
		configured: make(map[K]bool, len(all)),
		all:        all,
		prevOwner:  make(map[K]string, len(all)),
		owner:      make(map[K]int, len(all)),
		kept:       make([][]K, n),
		revoked:    make([][]K, n),
		claimed:    make(map[K]bool, len(all)),
		preferred:  make([][]K, n),
	}
	for _, it := range all {
		s.configured[it] = true
	}
	return s
}

// resolveOwnership splits what each member owns into what it keeps and what it
// must stop: work no longer configured, work of a leaving member, and work
// owned by two members (kept by the one Previous gave it to, else the first).
func (s *side[K]) resolveOwnership(owned [][]K, workers []string, active []bool) {
	for i, items := range owned {
		if !active[i] {
			continue
		}
		for _, it := range items {
			if !s.configured[it] {
				continue
			}
			k, taken := s.owner[it]
			if !taken || (workers[i] == s.prevOwner[it] && workers[k] != s.prevOwner[it]) {
				s.owner[it] = i
			}
		}
	}
	for i, items := range owned {
		for _, it := range items {
			if k, ok := s.owner[it]; ok && k == i {
				s.kept[i] = append(s.kept[i], it)
			} else {
				s.revoked[i] = append(s.revoked[i], it)
			}
			if s.configured[it] {
				// Kept, or in flight: its owner stops it this round, so
				// nobody else may start it before the next one.
				s.claimed[it] = true
			}
		}
	}
}

// claim filters items to those configured and not yet claimed, and claims them.
func (s *side[K]) claim(items []K) []K {
	var out []K
	for _, it := range items {
		if s.configured[it] && !s.claimed[it] {
			s.claimed[it] = true
			out = append(out, it)
		}
	}
	return out
}

// unclaimed reports the items of list that are still configured and unclaimed.
func (s *side[K]) unclaimed(items []K) []K {
	var out []K
	for _, it := range items {
		if s.configured[it] && !s.claimed[it] {
			out = append(out, it)
		}
	}
	return out
}

// free returns the configured items nobody keeps, stops, holds or prefers.
func (s *side[K]) free() []K {
	var out []K
	for _, it := range s.all {
		if !s.claimed[it] {
			out = append(out, it)
		}
	}
	return out
}

// balance computes the final assignment of the active members (indices act)
// and adds balance revocations to s.revoked. Members in closed (by index)
// keep their work but take no unowned work.
func (s *side[K]) balance(act []int, allowRevoke bool, closed map[int]bool) [][]K {
	kept := make([][]K, len(act))
	preferred := make([][]K, len(act))
	shut := make([]bool, len(act))
	for j, i := range act {
		kept[j] = s.kept[i]
		preferred[j] = s.preferred[i]
		shut[j] = closed[i]
	}
	final, revoked := balance(s.kind, kept, preferred, s.free(), allowRevoke, shut)
	for j, i := range act {
		s.revoked[i] = append(s.revoked[i], revoked[j]...)
	}
	return final
}

// Assign computes the next round of the group: see the package comment.
func Assign(in Input) Result {
	members := slices.Clone(in.Members)
	slices.SortFunc(members, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.MemberID, b.MemberID), cmp.Compare(a.WorkerID, b.WorkerID))
	})
	n := len(members)
	workers := make([]string, n)
	active := make([]bool, n)
	var act []int
	firstMember := map[string]int{} // worker id -> its first active member
	present := map[string]bool{}
	var activeWorkers []string
	for i, m := range members {
		workers[i] = cmp.Or(m.WorkerID, m.MemberID)
		present[workers[i]] = true
		if !m.Leaving {
			activeWorkers = append(activeWorkers, workers[i])
		}
	}
	guard := newCrashLoop(in)
	heldOff := guard.holdOff(activeWorkers)
	for i, m := range members {
		// A held-off worker is treated as leaving: assigned nothing, what
		// it owns revoked; unlike a leaving one, its work is not released
		// on its account (it is present).
		_, held := heldOff[workers[i]]
		active[i] = !m.Leaving && !held
		if active[i] {
			act = append(act, i)
			if _, ok := firstMember[workers[i]]; !ok {
				firstMember[workers[i]] = i
			}
		}
	}
	departed := map[string]bool{}
	for _, w := range in.Departed {
		departed[w] = true
	}

	// Configured work, sorted.
	names := slices.Sorted(maps.Keys(in.Connectors))
	var tasks []store.TaskID
	for _, c := range names {
		for t := range max(0, in.Connectors[c]) {
			tasks = append(tasks, store.TaskID{Connector: c, Task: t})
		}
	}
	cs := newSide(connectorKind, names, n)
	ts := newSide(taskKind, tasks, n)

	prevWorkers := slices.Sorted(maps.Keys(in.Previous.Workers))
	for _, w := range prevWorkers {
		a := in.Previous.Workers[w]
		for _, c := range a.Connectors {
			if _, ok := cs.prevOwner[c]; !ok {
				cs.prevOwner[c] = w
			}
		}
		for _, t := range a.Tasks {
			if _, ok := ts.prevOwner[t]; !ok {
				ts.prevOwner[t] = w
			}
		}
	}

	ownedC := make([][]string, n)
	ownedT := make([][]store.TaskID, n)
	for i, m := range members {
		o := m.Owned.Sorted()
		ownedC[i], ownedT[i] = o.Connectors, o.Tasks
	}
	cs.resolveOwnership(ownedC, workers, active)
	ts.resolveOwnership(ownedT, workers, active)

	// Stickiness: work the previous round gave a present worker that it
	// does not report (it restarted quickly) goes back to it.
	for _, w := range prevWorkers {
		i, ok := firstMember[w]
		if !ok {
			continue
		}
		a := in.Previous.Workers[w]
		cs.preferred[i] = append(cs.preferred[i], cs.claim(a.Connectors)...)
		ts.preferred[i] = append(ts.preferred[i], ts.claim(a.Tasks)...)
	}

	// Lost workers: known ones keep their deadline, new ones get Now+delay.
	lost := map[string]LostWorker{}
	for _, lw := range in.Previous.Lost {
		if old, ok := lost[lw.WorkerID]; !ok || lw.Deadline.Before(old.Deadline) {
			lost[lw.WorkerID] = lw
		}
	}
	for _, w := range prevWorkers {
		if _, ok := lost[w]; !ok && !present[w] {
			lost[w] = LostWorker{WorkerID: w, Held: in.Previous.Workers[w], Deadline: in.Now.Add(in.LostWorkerDelay)}
		}
	}
	var pending []LostWorker
	var delay time.Duration
	for _, w := range slices.Sorted(maps.Keys(lost)) {
		lw := lost[w]
		if i, ok := firstMember[w]; ok {
			// Returned in time: its held work goes back to it.
			cs.preferred[i] = append(cs.preferred[i], cs.claim(lw.Held.Connectors)...)
			ts.preferred[i] = append(ts.preferred[i], ts.claim(lw.Held.Tasks)...)
			continue
		}
		if present[w] || departed[w] || in.LostWorkerDelay <= 0 || !in.Now.Before(lw.Deadline) {
			if !present[w] && !departed[w] && !lw.Held.IsEmpty() {
				guard.released(w) // it stayed away: its work goes to the others
			}
			continue // left on purpose, or its time is up: the work is free
		}
		heldC, heldT := cs.unclaimed(lw.Held.Connectors), ts.unclaimed(lw.Held.Tasks)
		if len(heldC)+len(heldT) == 0 {
			continue
		}
		cs.claim(heldC)
		ts.claim(heldT)
		pending = append(pending, LostWorker{WorkerID: w, Held: Assignment{Connectors: heldC, Tasks: heldT}.Sorted(), Deadline: lw.Deadline})
		if d := lw.Deadline.Sub(in.Now); delay == 0 || d < delay {
			delay = d
		}
	}
	for i := range n {
		slices.SortFunc(cs.preferred[i], cs.kind.compare)
		slices.SortFunc(ts.preferred[i], ts.kind.compare)
	}

	var heldList []HeldOff
	out := outgoing(members, act)
	allowRevoke := len(pending) == 0 && len(out) == 0
	finalC := cs.balance(act, allowRevoke, out)
	finalT := ts.balance(act, allowRevoke, out)

	for _, w := range slices.Sorted(maps.Keys(heldOff)) {
		h := heldOff[w]
		res0 := h.Until.Sub(in.Now)
		if delay == 0 || res0 < delay {
			delay = res0
		}
		heldList = append(heldList, h)
	}
	res := Result{
		Members: make(map[string]MemberAssignment, n),
		State:   State{Workers: map[string]Assignment{}, Lost: pending, Unstable: guard.state()},
		Delay:   delay,
		HeldOff: heldList,
	}
	assigned := make([]Assignment, n)
	for j, i := range act {
		assigned[i] = Assignment{Connectors: finalC[j], Tasks: finalT[j]}.Sorted()
	}
	capTasks(assigned, members, ts.revoked, in.MaxTasksPerMember)
	for i, m := range members {
		res.Members[m.MemberID] = MemberAssignment{
			Assigned:     assigned[i],
			Revoked:      Assignment{Connectors: cs.revoked[i], Tasks: ts.revoked[i]}.Sorted(),
			Delay:        delay,
			HeldOffUntil: heldOff[workers[i]].Until,
		}
		w := workers[i]
		prev := res.State.Workers[w]
		res.State.Workers[w] = Assignment{
			Connectors: append(slices.Clone(prev.Connectors), assigned[i].Connectors...),
			Tasks:      append(slices.Clone(prev.Tasks), assigned[i].Tasks...),
		}.Sorted()
	}
	for i, m := range members {
		if m.Leaving && !slices.Contains(res.State.Left, workers[i]) {
			res.State.Left = append(res.State.Left, workers[i])
		}
	}
	slices.Sort(res.State.Left)
	if len(res.State.Workers) == 0 {
		res.State.Workers = nil
	}
	return res
}
