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
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The property tests drive the assignor through seeded random histories of a
// cluster: workers join, leave on purpose (Input.Departed or Member.Leaving),
// crash and come back (or not) while a fake clock advances, connectors are
// added and removed and change their task counts, and the leader changes
// (Previous reset). Every round is simulated the way the group runs it:
// members run Assigned after stopping Revoked, then rejoin. After every round
// checkRound verifies the safety properties; after the group settled,
// checkSettled verifies balance and that a further round changes nothing.
//
// A failure names its seed; rerun it with
//
//	go test ./runtime/assignor -run 'TestAssignProperties/seed=N$' -v

// item is a connector ("c" kind) or a task ("t" kind), so both kinds share
// the bookkeeping.
type item struct {
	task bool
	conn string
	idx  int
}

func (it item) String() string {
	if it.task {
		return it.conn + "-" + strconv.Itoa(it.idx)
	}
	return it.conn
}

func items(a Assignment) []item {
	out := make([]item, 0, a.Len())
	for _, c := range a.Connectors {
		out = append(out, item{conn: c})
	}
	for _, t := range a.Tasks {
		out = append(out, item{task: true, conn: t.Connector, idx: t.Task})
	}
	return out
}

func itemSet(a Assignment) map[item]bool {
	s := map[item]bool{}
	for _, it := range items(a) {
		s[it] = true
	}
	return s
}

func configuredItems(conns map[string]int) map[item]bool {
	s := map[item]bool{}
	for c, n := range conns {
		s[item{conn: c}] = true
		for t := range n {
			s[item{task: true, conn: c, idx: t}] = true
		}
	}
	return s
}

type simWorker struct {
	workerID, memberID string
	owned              Assignment
}

type sim struct {
	t       testing.TB
	seed    uint64
	rng     *rand.Rand
	now     time.Time
	delay   time.Duration
	guard   CrashLoopGuard
	conns   map[string]int
	workers []*simWorker // in the group
	crashed []string     // worker ids that crashed and may come back
	leaving *simWorker   // a worker announcing its departure this round
	state   State
	// departed lists workers that left on purpose since the last round.
	departed []string
	// deadline remembers each lost worker's deadline from first sight, to
	// check that later rounds never move it.
	deadline map[string]time.Time
	// graceful lists the workers that left on purpose.
	graceful map[string]bool
	nextID   int
	step     int
	event    string
	history  []string

	rounds, revokedForBalance, settledChecks, heldRounds, returns, heldOffRounds int
	connectorsChecked, connectorsSpread                                          int
}

func newSim(t testing.TB, seed uint64) *sim {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	s := &sim{
		t: t, seed: seed, rng: rng, now: t0,
		delay:    []time.Duration{0, 5 * time.Second, 30 * time.Second}[rng.IntN(3)],
		conns:    map[string]int{},
		deadline: map[string]time.Time{},
		graceful: map[string]bool{},
	}
	if s.delay > 0 && rng.IntN(2) == 0 {
		// The crash-loop guard, tight enough that histories trip it.
		s.guard = CrashLoopGuard{Releases: 2, Window: 40 * s.delay, HoldOff: 3 * s.delay}
	}
	for range rng.IntN(4) {
		s.addWorker()
	}
	for range rng.IntN(6) {
		s.addConnector()
	}
	return s
}

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d, step %d (%s): %s\nlast events: %v", s.seed, s.step, s.event, fmt.Sprintf(format, args...), s.history)
}

func (s *sim) id() string {
	s.nextID++
	return strconv.Itoa(s.nextID)
}

func (s *sim) addWorker() {
	id := s.id()
	s.workers = append(s.workers, &simWorker{workerID: "w" + id, memberID: "m" + id})
}

func (s *sim) addConnector() {
	s.conns["conn"+s.id()] = s.rng.IntN(9)
}

// pickWorker removes a random worker from the group and returns it.
func (s *sim) pickWorker() *simWorker {
	i := s.rng.IntN(len(s.workers))
	w := s.workers[i]
	s.workers = slices.Delete(s.workers, i, i+1)
	return w
}

func (s *sim) members() []Member {
	var ms []Member
	for _, w := range s.workers {
		ms = append(ms, Member{MemberID: w.memberID, WorkerID: w.workerID, URL: "http://" + w.workerID, Owned: w.owned})
	}
	if s.leaving != nil {
		ms = append(ms, Member{MemberID: s.leaving.memberID, WorkerID: s.leaving.workerID, Owned: s.leaving.owned, Leaving: true})
	}
	return ms
}

// round runs one rebalance, checks it and applies it.
func (s *sim) round() Result {
	s.t.Helper()
	s.rounds++
	in := Input{
		Members:         s.members(),
		Connectors:      maps.Clone(s.conns),
		Previous:        s.state,
		Now:             s.now,
		LostWorkerDelay: s.delay,
		Departed:        s.departed,
		CrashLoop:       s.guard,
	}
	res := Assign(in)
	s.checkRound(in, res)
	for _, w := range s.workers {
		w.owned = res.Members[w.memberID].Assigned
	}
	s.departed = nil
	// The leader keeps its state across rounds, as JSON (it must survive
	// that) or, after a leader change, from the LeaderState of the last
	// SyncAssignment the new leader received.
	s.state = State{}
	if s.rounds%2 == 0 {
		b, err := json.Marshal(res.State)
		if err != nil {
			s.fail("state does not encode: %v", err)
		}
		if err := json.Unmarshal(b, &s.state); err != nil {
			s.fail("state does not decode: %v", err)
		}
	} else {
		sa, err := DecodeAssignment(EncodeAssignment(SyncAssignment{LeaderState: &res.State}))
		if err != nil || sa.LeaderState == nil {
			s.fail("leader state does not survive the assignment encoding: %v", err)
		}
		s.state = *sa.LeaderState
	}
	if len(res.State.Lost) > 0 {
		s.heldRounds++
	}
	if len(res.HeldOff) > 0 {
		s.heldOffRounds++
	}
	return res
}

// checkRound verifies the properties every single round must have.
func (s *sim) checkRound(in Input, res Result) {
	s.t.Helper()
	s.checkHeldOff(in, res)
	configured := configuredItems(in.Connectors)
	if len(res.Members) != len(in.Members) {
		s.fail("%d member assignments for %d members", len(res.Members), len(in.Members))
	}
	ownedBy := map[item]string{}
	for _, m := range in.Members {
		for _, it := range items(m.Owned) {
			ownedBy[it] = m.MemberID
		}
	}
	assignedBy := map[item]string{}
	revokedConfigured := map[item]bool{}
	for _, m := range in.Members {
		ma, ok := res.Members[m.MemberID]
		if !ok {
			s.fail("no assignment for member %s", m.MemberID)
		}
		owned, assigned, revoked := itemSet(m.Owned), itemSet(ma.Assigned), itemSet(ma.Revoked)
		if m.Leaving && len(assigned) > 0 {
			s.fail("leaving member %s assigned %v", m.MemberID, ma.Assigned)
		}
		for _, it := range items(ma.Assigned) {
			if !configured[it] {
				s.fail("member %s assigned %v, which is not configured", m.MemberID, it)
			}
			if other, dup := assignedBy[it]; dup {
				s.fail("%v assigned to both %s and %s", it, other, m.MemberID)
			}
			assignedBy[it] = m.MemberID
			if owner, ok := ownedBy[it]; ok && owner != m.MemberID {
				s.fail("%v moves from %s to %s without being revoked first", it, owner, m.MemberID)
			}
		}
		for it := range revoked {
			if !owned[it] {
				s.fail("member %s told to revoke %v, which it does not own", m.MemberID, it)
			}
			if assigned[it] {
				s.fail("member %s: %v is both kept and revoked", m.MemberID, it)
			}
			if configured[it] {
				revokedConfigured[it] = true
			}
		}
		for it := range owned {
			if !assigned[it] && !revoked[it] {
				s.fail("member %s owns %v: neither kept nor revoked", m.MemberID, it)
			}
			if !configured[it] && !revoked[it] {
				s.fail("member %s keeps %v, which is no longer configured", m.MemberID, it)
			}
		}
		if ma.Delay != res.Delay {
			s.fail("member %s delay %v, result delay %v", m.MemberID, ma.Delay, res.Delay)
		}
	}
	for it := range revokedConfigured {
		if to, ok := assignedBy[it]; ok {
			s.fail("%v revoked and assigned to %s in the same round", it, to)
		}
	}

	// Lost workers: held work is assigned to nobody, deadlines are fixed at
	// first sight and in the future, the delay is the nearest deadline.
	present := map[string]bool{}
	for _, m := range in.Members {
		present[m.WorkerID] = true
	}
	held := map[item]bool{}
	var nearest time.Duration
	for _, lw := range res.State.Lost {
		if present[lw.WorkerID] {
			s.fail("present worker %s listed as lost", lw.WorkerID)
		}
		if !in.Now.Before(lw.Deadline) {
			s.fail("worker %s still held at %v, past its deadline %v", lw.WorkerID, in.Now, lw.Deadline)
		}
		if d, ok := s.deadline[lw.WorkerID]; ok && !d.Equal(lw.Deadline) {
			s.fail("worker %s deadline moved from %v to %v", lw.WorkerID, d, lw.Deadline)
		}
		s.deadline[lw.WorkerID] = lw.Deadline
		if d := lw.Deadline.Sub(in.Now); nearest == 0 || d < nearest {
			nearest = d
		}
		for _, it := range items(lw.Held) {
			if to, ok := assignedBy[it]; ok {
				s.fail("%v held for lost worker %s but assigned to %s", it, lw.WorkerID, to)
			}
			held[it] = true
		}
	}
	// A worker that vanished without leaving on purpose is held (when there
	// is a delay and something of its work is still configured); one that
	// left on purpose never is.
	departed := map[string]bool{}
	for _, w := range in.Departed {
		departed[w] = true
	}
	isLost := func(w string) bool {
		return slices.ContainsFunc(res.State.Lost, func(lw LostWorker) bool { return lw.WorkerID == w })
	}
	mustHold := func(w string, a Assignment, deadline time.Time) {
		if present[w] || departed[w] || in.LostWorkerDelay <= 0 || !in.Now.Before(deadline) {
			return
		}
		for _, it := range items(a) {
			if configured[it] && ownedBy[it] == "" && !isLost(w) {
				s.fail("worker %s vanished with %v; its work is not held", w, it)
			}
		}
	}
	for w, a := range in.Previous.Workers {
		if !slices.ContainsFunc(in.Previous.Lost, func(lw LostWorker) bool { return lw.WorkerID == w }) {
			mustHold(w, a, in.Now.Add(in.LostWorkerDelay))
		}
		if isLost(w) && !slices.ContainsFunc(in.Previous.Lost, func(lw LostWorker) bool { return lw.WorkerID == w }) {
			if d := res.State.Lost[slices.IndexFunc(res.State.Lost, func(lw LostWorker) bool { return lw.WorkerID == w })].Deadline; !d.Equal(in.Now.Add(in.LostWorkerDelay)) {
				s.fail("worker %s first missed at %v gets deadline %v, want now + %v", w, in.Now, d, in.LostWorkerDelay)
			}
		}
	}
	for _, lw := range in.Previous.Lost {
		mustHold(lw.WorkerID, lw.Held, lw.Deadline)
	}
	for _, lw := range res.State.Lost {
		if s.graceful[lw.WorkerID] {
			s.fail("worker %s left on purpose, yet its work is held: %+v", lw.WorkerID, lw)
		}
	}
	for _, h := range res.HeldOff {
		// A hold-off of the crash-loop guard ends with a rebalance too.
		if d := h.Until.Sub(in.Now); nearest == 0 || d < nearest {
			nearest = d
		}
	}
	if res.Delay != nearest {
		s.fail("delay %v, want the nearest deadline (or end of a hold-off) in %v", res.Delay, nearest)
	}
	if len(res.State.Lost) > 0 && in.LostWorkerDelay <= 0 {
		s.fail("work held with a zero lost-worker delay: %+v", res.State.Lost)
	}
	for w := range s.deadline {
		if !slices.ContainsFunc(res.State.Lost, func(lw LostWorker) bool { return lw.WorkerID == w }) {
			delete(s.deadline, w)
		}
	}

	// Minimal moves: a member gives up configured work only when it holds
	// more than its fair share (floor), never below it, and never while
	// lost work is held.
	// A worker held off by the crash-loop guard counts as leaving here.
	heldOff := map[string]bool{}
	for _, h := range res.HeldOff {
		heldOff[h.WorkerID] = true
	}
	var active []Member
	for _, m := range in.Members {
		if !m.Leaving && !heldOff[workerOf(m)] {
			active = append(active, m)
		}
	}
	for _, task := range []bool{false, true} {
		total := 0
		for it := range configured {
			if it.task == task && !held[it] && !(revokedConfigured[it] && (isLeaving(in, ownedBy[it]) || heldOffMember(in, heldOff, ownedBy[it]))) {
				total++
			}
		}
		for _, m := range active {
			ownedN, revokedN := 0, 0
			for _, it := range items(m.Owned) {
				if it.task == task && configured[it] {
					ownedN++
				}
			}
			for _, it := range items(res.Members[m.MemberID].Revoked) {
				if it.task == task && configured[it] {
					revokedN++
				}
			}
			if revokedN == 0 {
				continue
			}
			s.revokedForBalance += revokedN
			floor := total / len(active)
			if len(res.State.Lost) > 0 {
				s.fail("member %s gives up %d items for balance while lost work is held", m.MemberID, revokedN)
			}
			if ownedN <= floor || ownedN-revokedN < floor {
				s.fail("member %s owns %d (tasks=%v), gives up %d, fair share %d of %d on %d members: not minimal",
					m.MemberID, ownedN, task, revokedN, floor, total, len(active))
			}
		}
	}

	// A worker that returns before its deadline gets its held work back, as
	// much of it as its fair share allows.
	for _, lw := range in.Previous.Lost {
		var back *Member
		for i := range active {
			if active[i].WorkerID == lw.WorkerID {
				back = &active[i]
				break
			}
		}
		if back == nil || !in.Now.Before(lw.Deadline) || in.LostWorkerDelay <= 0 {
			continue
		}
		s.returns++
		got := itemSet(res.Members[back.MemberID].Assigned)
		for _, task := range []bool{false, true} {
			heldN, gotN, total := 0, 0, 0
			for _, it := range items(lw.Held) {
				if it.task == task && configured[it] {
					heldN++
					if got[it] {
						gotN++
					}
				}
			}
			for it := range configured {
				if it.task == task && !held[it] {
					total++
				}
			}
			if want := min(heldN, total/len(active)); gotN < want {
				s.fail("returning worker %s got %d of its %d held items (tasks=%v) back, want at least %d",
					lw.WorkerID, gotN, heldN, task, want)
			}
		}
	}

	// Determinism: the same input in another order gives the same result.
	shuffled := in
	shuffled.Members = slices.Clone(in.Members)
	s.rng.Shuffle(len(shuffled.Members), func(i, j int) {
		shuffled.Members[i], shuffled.Members[j] = shuffled.Members[j], shuffled.Members[i]
	})
	for i := range shuffled.Members {
		o := &shuffled.Members[i].Owned
		o.Tasks = slices.Clone(o.Tasks)
		slices.Reverse(o.Tasks)
	}
	if again := Assign(shuffled); !reflect.DeepEqual(again, res) {
		s.fail("same input in another order gave another result:\n%+v\n%+v", res, again)
	}
}

func heldOffMember(in Input, heldOff map[string]bool, memberID string) bool {
	for _, m := range in.Members {
		if m.MemberID == memberID {
			return heldOff[workerOf(m)]
		}
	}
	return false
}

func isLeaving(in Input, memberID string) bool {
	for _, m := range in.Members {
		if m.MemberID == memberID {
			return m.Leaving
		}
	}
	return false
}

func hasRevocations(res Result) bool {
	for _, ma := range res.Members {
		if !ma.Revoked.IsEmpty() {
			return true
		}
	}
	return false
}

// settle runs the rebalance after an event, then the follow-up round that
// places revoked work, then (sometimes) the scheduled rebalance when held
// work's deadline passes.
func (s *sim) settle() {
	s.t.Helper()
	res := s.round()
	if s.leaving != nil {
		// It stopped what it was told to and now leaves the group.
		s.leaving = nil
		res = s.round()
	}
	if hasRevocations(res) {
		res = s.round()
		if hasRevocations(res) {
			s.fail("the follow-up round revokes again: %+v", res.Members)
		}
	}
	if res.Delay > 0 && s.rng.IntN(2) == 0 {
		s.now = s.now.Add(res.Delay + time.Duration(s.rng.IntN(2))*time.Millisecond)
		res = s.round()
		if len(res.State.Lost) > 0 && res.Delay <= 0 {
			s.fail("held work without a delay: %+v", res.State.Lost)
		}
		if hasRevocations(res) {
			res = s.round()
		}
	}
	if len(res.HeldOff) > 0 && s.rng.IntN(2) == 0 {
		// Wait the hold-off out: the worker gets work again.
		s.now = s.now.Add(res.Delay)
		res = s.round()
		if hasRevocations(res) {
			res = s.round()
		}
	}
	if len(res.State.Lost) == 0 && len(res.HeldOff) == 0 && !hasRevocations(res) {
		s.checkSettled(res)
	}
}

// checkSettled verifies a group with no held work after its follow-up round:
// everything configured runs, balanced within one, and rebalancing again
// changes nothing.
func (s *sim) checkSettled(res Result) {
	s.t.Helper()
	s.settledChecks++
	configured := configuredItems(s.conns)
	assigned := map[item]bool{}
	for _, w := range s.workers {
		for _, it := range items(w.owned) {
			assigned[it] = true
		}
	}
	if len(s.workers) > 0 && len(assigned) != len(configured) {
		var missing []item
		for it := range configured {
			if !assigned[it] {
				missing = append(missing, it)
			}
		}
		s.fail("settled but %d items unassigned: %v", len(missing), missing)
	}
	for _, task := range []bool{false, true} {
		lo, hi := -1, 0
		for _, w := range s.workers {
			n := 0
			for _, it := range items(w.owned) {
				if it.task == task {
					n++
				}
			}
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		if hi-lo > 1 {
			s.fail("settled but unbalanced (tasks=%v): from %d to %d per worker: %v", task, lo, hi, s.owned())
		}
	}
	// Spread (measured, not asserted: stickiness wins over spreading): a
	// connector is spread when its tasks per worker differ by at most one.
	var per []Assignment
	for _, w := range s.workers {
		per = append(per, w.owned)
	}
	for c, n := range s.conns {
		if n == 0 || len(s.workers) == 0 {
			continue
		}
		s.connectorsChecked++
		if lo, hi := taskSpread(c, per); hi-lo <= 1 {
			s.connectorsSpread++
		}
	}
	before := s.owned()
	again := s.round()
	if hasRevocations(again) || again.Delay != 0 || !reflect.DeepEqual(before, s.owned()) {
		s.fail("rebalancing a settled group changed it: %v -> %v (delay %v)", before, s.owned(), again.Delay)
	}
}

func (s *sim) owned() map[string]Assignment {
	out := map[string]Assignment{}
	for _, w := range s.workers {
		out[w.workerID] = w.owned
	}
	return out
}

// doStep applies one random event, then lets the group settle.
func (s *sim) doStep() {
	s.t.Helper()
	s.step++
	r := s.rng.IntN(100)
	switch {
	case r < 14 && len(s.workers) < 7:
		s.addWorker()
		s.event = "join"
	case r < 26 && len(s.workers) > 0:
		w := s.pickWorker()
		s.crashed = append(s.crashed, w.workerID)
		s.event = "crash " + w.workerID
	case r < 34 && len(s.crashed) > 0:
		i := s.rng.IntN(len(s.crashed))
		w := &simWorker{workerID: s.crashed[i], memberID: "m" + s.id()}
		s.crashed = slices.Delete(s.crashed, i, i+1)
		s.workers = append(s.workers, w)
		s.event = "return " + w.workerID
	case r < 40 && len(s.workers) > 0 && s.delay > 0:
		// A quick restart: the worker crashes, the group rebalances
		// without it, and it comes back under a new member id before its
		// deadline (with nothing running: a restarted process).
		w := s.pickWorker()
		s.event = "bounce " + w.workerID
		s.round()
		s.now = s.now.Add(time.Duration(s.rng.Int64N(int64(s.delay))))
		s.workers = append(s.workers, &simWorker{workerID: w.workerID, memberID: "m" + s.id()})
	case r < 42 && len(s.workers) > 0:
		w := s.pickWorker()
		s.departed = append(s.departed, w.workerID)
		s.graceful[w.workerID] = true
		s.event = "leave (departed) " + w.workerID
	case r < 48 && len(s.workers) > 0:
		s.leaving = s.pickWorker()
		s.graceful[s.leaving.workerID] = true
		if s.rng.IntN(2) == 0 {
			s.leaving.owned = Assignment{} // it stopped its work before announcing
		}
		s.event = "leave (flag) " + s.leaving.workerID
	case r < 60:
		s.addConnector()
		s.event = "add connector"
	case r < 67 && len(s.conns) > 0:
		c := slices.Sorted(maps.Keys(s.conns))[s.rng.IntN(len(s.conns))]
		delete(s.conns, c)
		s.event = "remove " + c
	case r < 80 && len(s.conns) > 0:
		c := slices.Sorted(maps.Keys(s.conns))[s.rng.IntN(len(s.conns))]
		s.conns[c] = s.rng.IntN(12)
		s.event = fmt.Sprintf("%s tasks=%d", c, s.conns[c])
	case r < 84:
		// A new leader that never received a LeaderState.
		s.state = State{}
		s.deadline = map[string]time.Time{}
		s.event = "leader change without state"
	case r < 90 && len(s.workers) > 1 && s.delay > 0:
		// A slow crash loop: the worker crashes, stays away past its
		// deadline (its work is released to the others) and comes back
		// with nothing running, under a new member id.
		w := s.pickWorker()
		s.event = "slow crash " + w.workerID
		s.round()
		s.now = s.now.Add(s.delay + time.Millisecond)
		s.settle()
		s.workers = append(s.workers, &simWorker{workerID: w.workerID, memberID: "m" + s.id()})
	default:
		s.now = s.now.Add(time.Duration(s.rng.Int64N(int64(s.delay)*3/2 + 1)))
		s.event = "clock " + s.now.Sub(t0).String()
	}
	s.history = append(s.history, s.event)
	if len(s.history) > 12 {
		s.history = s.history[1:]
	}
	s.settle()
}

func runSim(t testing.TB, seed uint64, steps int) *sim {
	s := newSim(t, seed)
	for range steps {
		s.doStep()
	}
	return s
}

func TestAssignProperties(t *testing.T) {
	seeds := 100
	steps := 60
	if testing.Short() {
		seeds = 25
	}
	var total sim
	start := time.Now()
	extra := rand.Uint64() % 1_000_000
	t.Logf("random extra seed: %d", extra)
	list := make([]uint64, 0, seeds+1)
	for i := range seeds {
		list = append(list, uint64(i+1))
	}
	list = append(list, extra)
	for _, seed := range list {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			s := runSim(t, seed, steps)
			total.step += s.step
			total.rounds += s.rounds
			total.revokedForBalance += s.revokedForBalance
			total.settledChecks += s.settledChecks
			total.heldRounds += s.heldRounds
			total.returns += s.returns
			total.heldOffRounds += s.heldOffRounds
			total.connectorsChecked += s.connectorsChecked
			total.connectorsSpread += s.connectorsSpread
		})
	}
	t.Logf("%d histories, %d events, %d rounds (%d with held work, %d returns in time), %d settled checks, %d balance revocations, in %v",
		len(list), total.step, total.rounds, total.heldRounds, total.returns, total.settledChecks, total.revokedForBalance, time.Since(start))
	t.Logf("settled connectors with tasks spread within one per worker: %d of %d; rounds with a worker held off by the crash-loop guard: %d",
		total.connectorsSpread, total.connectorsChecked, total.heldOffRounds)
	if total.settledChecks == 0 || total.heldRounds == 0 || total.returns == 0 || total.revokedForBalance == 0 || total.heldOffRounds == 0 {
		t.Errorf("the histories never reached some situation: %+v", total)
	}
}

// FuzzAssignHistory runs short histories from fuzzer-chosen seeds.
func FuzzAssignHistory(f *testing.F) {
	f.Add(uint64(1), uint8(20))
	f.Add(uint64(77), uint8(40))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) {
		runSim(t, seed, int(steps%64))
	})
}
