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

package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// startsSince returns the task starts recorded since a moment, waiting
// until no new start has appeared for quiet (so a late restart is not
// missed), within timeout.
func (e *env) startsSince(ctx context.Context, since time.Time, quiet, timeout time.Duration) []harness.TaskStart {
	e.t.Helper()
	var starts []harness.TaskStart
	last, lastChange := -1, time.Now()
	err := testkit.Until(ctx, timeout, "the task starts to settle", func(ctx context.Context) (bool, error) {
		s, err := e.broker.TaskStarts(ctx, "connect-status", since)
		if err != nil {
			return false, err
		}
		starts = s
		if len(s) != last {
			last, lastChange = len(s), time.Now()
			return false, nil
		}
		return time.Since(lastChange) >= quiet, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return starts
}

// startedTasks returns the distinct tasks in starts, sorted.
func startedTasks(starts []harness.TaskStart) []string {
	var out []string
	for k := range harness.StartCounts(starts) {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

func keyStrings(ks []harness.TaskKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	slices.Sort(out)
	return out
}

// failoverOpts are the group timings of the failover tests: the bound of
// a crash failover is lostWorkerDelay + session timeout + 1s = 7s.
var failoverOpts = harness.Options{SessionTimeout: 3 * time.Second, HeartbeatInterval: 300 * time.Millisecond, LostWorkerDelay: 3 * time.Second}

// sinkOn3 starts workers w1, w2 and w3 on a broker with a 6-partition topic
// "events", creates the 6-task FileSink "sink" (writing sinkPath) through
// w2, and waits until each worker runs 2 of its tasks.
func sinkOn3(ctx context.Context, t *testing.T, sinkPath string) (*env, []*harness.Worker, harness.Placement) {
	t.Helper()
	e := newEnv(t, failoverOpts, kfake.SeedTopics(6, "events"))
	ws := e.start(ctx, "w1", "w2", "w3")
	if err := ws[1].REST.PutConnector(ctx, "sink", harness.FileSink("events", outPath(e, sinkPath), 6)); err != nil {
		t.Fatal(err)
	}
	p, _ := e.waitPlacement(ctx, ws[0], 60*time.Second, "6 tasks RUNNING, 2 on each of 3 workers", harness.Balanced(6, "w1", "w2", "w3"), "sink")
	return e, ws, p
}

// followersOf returns the leader among ws and the others.
func followersOf(ctx context.Context, t *testing.T, e *env, ws []*harness.Worker) (*harness.Worker, []*harness.Worker) {
	t.Helper()
	leader, err := e.c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var followers []*harness.Worker
	for _, w := range ws {
		if w != leader {
			followers = append(followers, w)
		}
	}
	return leader, followers
}

// TestFailoverHandoffAndJoin is issue 4's first must-show, with separate
// worker processes: 3 workers share a 6-task sink (2 each); records flow
// all along. SIGKILL of one worker: its tasks run on the others within
// lostWorkerDelay + session timeout + 1s, and no other task restarts. A
// fourth worker joins: only the tasks that move to it restart. SIGTERM of
// one worker: its tasks move at once (well before lostWorkerDelay). At the
// end every acknowledged record is in the sink file; duplicates are
// counted and reported.
func TestFailoverHandoffAndJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := failoverOpts
	workerBinary(t) // built before the clock starts
	begin := time.Now()
	e, ws, p0 := sinkOn3(ctx, t, "out.txt")
	out := outPath(e, "out.txt")
	t.Logf("3 workers: %s (%s after start)", p0, time.Since(begin).Round(time.Millisecond))

	prod := startProducer(t, e.broker.Addr, "events", 2000)
	if err := testkit.Until(ctx, 30*time.Second, "2000 records in the sink file", func(context.Context) (bool, error) {
		_, lines, _, err := sinkFile(out)
		return lines >= 2000, err
	}); err != nil {
		t.Fatal(err)
	}

	// SIGKILL of a follower: its tasks wait lostWorkerDelay, then move.
	// (The leader's crash is TestLeaderCrash.)
	leader, followers := followersOf(ctx, t, e, ws)
	victim, stayer := followers[0], followers[1]
	onVictim := keyStrings(p0.On(victim.Name))
	killAt := time.Now()
	ackedAtKill := prod.acked.Load()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	bound := opts.LostWorkerDelay + opts.SessionTimeout + time.Second
	p1, at := e.waitPlacement(ctx, leader, bound+30*time.Second, "6 tasks RUNNING on the two others after SIGKILL of "+victim.Name, harness.AllRunning(6, victim.Name), "sink")
	failover := at.Sub(killAt)
	t.Logf("SIGKILL of %s (tasks %v, %d records acknowledged; leader %s): tasks RUNNING elsewhere after %s (bound lostWorkerDelay %s + session %s + 1s = %s): %s",
		victim.Name, onVictim, ackedAtKill, leader.Name, failover.Round(time.Millisecond), opts.LostWorkerDelay, opts.SessionTimeout, bound, p1)
	if failover > bound {
		t.Errorf("failover took %s, more than %s", failover.Round(time.Millisecond), bound)
	}
	if failover < opts.LostWorkerDelay {
		t.Errorf("failover took %s: the crashed worker's tasks did not wait lostWorkerDelay (%s) for it to return", failover.Round(time.Millisecond), opts.LostWorkerDelay)
	}
	e.waitPlacement(ctx, leader, 20*time.Second, "3 tasks on each of the two others", harness.Balanced(6, leader.Name, stayer.Name), "sink")
	starts := e.startsSince(ctx, killAt, time.Second, 20*time.Second)
	if got := startedTasks(starts); !slices.Equal(got, onVictim) {
		t.Errorf("tasks started after the SIGKILL: %v, want only the killed worker's %v", got, onVictim)
	}

	// A fourth worker joins: only the tasks that move to it restart.
	joinAt := time.Now()
	w4 := e.start(ctx, "w4")[0]
	p2, at := e.waitPlacement(ctx, leader, 30*time.Second, "2 tasks on each of 3 workers", harness.Balanced(6, leader.Name, stayer.Name, "w4"), "sink")
	t.Logf("%s joined: balanced after %s: %s", w4.Name, at.Sub(joinAt).Round(time.Millisecond), p2)
	starts = e.startsSince(ctx, joinAt, 1500*time.Millisecond, 20*time.Second)
	moved := keyStrings(p2.On("w4"))
	counts := harness.StartCounts(starts)
	if got := startedTasks(starts); !slices.Equal(got, moved) {
		t.Errorf("tasks started after w4 joined: %v, want only the ones moved to w4: %v", got, moved)
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("task %s started %d times after the join, want 1", k, n)
		}
	}
	for _, s := range starts {
		if s.Worker != "w4" {
			t.Errorf("task %s (re)started on %s after the join; only moves to w4 may start tasks", s.TaskKey, s.Worker)
		}
	}

	// The workers' own start counters (kafka_connect_task_starts_total)
	// agree with the starts in the status topic: these three processes
	// never restarted, so every start since the test began counts.
	sinceBegin, err := e.broker.TaskStarts(ctx, "connect-status", begin)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*harness.Worker{leader, stayer, w4} {
		m, err := w.REST.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range p2.On(w.Name) {
			want := 0
			for _, s := range sinceBegin {
				if s.TaskKey == k && s.Worker == w.Name {
					want++
				}
			}
			got, ok := harness.MetricValue(m, fmt.Sprintf(`kafka_connect_task_starts_total{connector=%q,task="%d"}`, k.Connector, k.Task))
			if !ok || int(got) != want {
				t.Errorf("%s: task_starts_total of %s = %v (present %v), the status topic shows %d starts there", w.Name, k, got, ok, want)
			}
		}
	}

	// SIGTERM: the leaving worker's tasks move at once.
	leaving := stayer
	onLeaving := keyStrings(p2.On(leaving.Name))
	termAt := time.Now()
	if err := leaving.Terminate(); err != nil {
		t.Fatal(err)
	}
	p3, at := e.waitPlacement(ctx, leader, 30*time.Second, "6 tasks RUNNING on the others after SIGTERM of "+leaving.Name, harness.AllRunning(6, leaving.Name), "sink")
	handoff := at.Sub(termAt)
	t.Logf("SIGTERM of %s (tasks %v): tasks RUNNING elsewhere after %s: %s", leaving.Name, onLeaving, handoff.Round(time.Millisecond), p3)
	if handoff >= opts.LostWorkerDelay {
		t.Errorf("graceful handoff took %s: a worker that leaves on purpose must not wait lostWorkerDelay (%s)", handoff.Round(time.Millisecond), opts.LostWorkerDelay)
	}
	if err := leaving.Wait(20 * time.Second); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
	starts = e.startsSince(ctx, termAt, time.Second, 20*time.Second)
	if got := startedTasks(starts); !slices.Equal(got, onLeaving) {
		t.Errorf("tasks started after the SIGTERM: %v, want only the leaving worker's %v", got, onLeaving)
	}

	// Records keep flowing a moment longer, then every acknowledged one
	// must reach the file.
	if err := testkit.Until(ctx, 10*time.Second, "more records acknowledged", func(context.Context) (bool, error) {
		return prod.acked.Load() >= ackedAtKill+4000, nil
	}); err != nil {
		t.Fatal(err)
	}
	prod.Stop()
	if prod.err != nil {
		t.Fatalf("producing: %v", prod.err)
	}
	acked := prod.Acked()
	var counts2 map[int]int
	var lines, torn, missing int
	err = testkit.Until(ctx, 60*time.Second, "every acknowledged record in the sink file", func(context.Context) (bool, error) {
		var err error
		counts2, lines, torn, err = sinkFile(out)
		if err != nil {
			return false, err
		}
		missing = 0
		for id := range acked {
			if counts2[id] == 0 {
				missing++
			}
		}
		return missing == 0, nil
	})
	dups := lines - len(counts2)
	t.Logf("records acknowledged=%d (at SIGKILL %d) in sink=%d lost=%d duplicates=%d torn=%d", len(acked), ackedAtKill, len(counts2), missing, dups, torn)
	if err != nil {
		t.Fatalf("%v: %d records lost", err, missing)
	}
	if torn != 0 {
		t.Errorf("%d torn lines in the sink file", torn)
	}
	all, err := e.broker.TaskStarts(ctx, "connect-status", begin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("task starts over the whole test: %s", fmtStarts(all))
}

// fmtStarts lists each task's starts as task:[worker worker...].
func fmtStarts(starts []harness.TaskStart) string {
	per := map[string][]string{}
	for _, s := range starts {
		per[s.TaskKey.String()] = append(per[s.TaskKey.String()], s.Worker)
	}
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out string
	for _, k := range keys {
		out += fmt.Sprintf("%s:%v ", k, per[k])
	}
	return out
}

// TestLeaderCrash: SIGKILL of the group leader. A new leader is elected,
// the dead leader's tasks wait lostWorkerDelay and then run on the others
// within lostWorkerDelay + session timeout + 1s, no other task restarts, and writes sent to a
// follower reach the new leader.
func TestLeaderCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := failoverOpts
	e, ws, p0 := sinkOn3(ctx, t, "out.txt")
	leader, followers := followersOf(ctx, t, e, ws)
	via := followers[0]
	var others []string
	for _, w := range followers {
		others = append(others, w.Name)
	}
	onLeader := keyStrings(p0.On(leader.Name))
	killAt := time.Now()
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	bound := opts.LostWorkerDelay + opts.SessionTimeout + time.Second
	p1, at := e.waitPlacement(ctx, via, bound+30*time.Second, "6 tasks RUNNING on the two others after SIGKILL of the leader", harness.AllRunning(6, leader.Name), "sink")
	failover := at.Sub(killAt)
	t.Logf("SIGKILL of the leader %s (tasks %v): tasks RUNNING elsewhere after %s (lostWorkerDelay %s, session %s, bound %s): %s",
		leader.Name, onLeader, failover.Round(time.Millisecond), opts.LostWorkerDelay, opts.SessionTimeout, bound, p1)
	if failover > bound {
		t.Errorf("failover took %s, more than %s", failover.Round(time.Millisecond), bound)
	}
	if failover < opts.LostWorkerDelay {
		t.Errorf("the dead leader's tasks moved after %s: they must wait lostWorkerDelay (%s) for it to return (the new leader keeps the old leader's memory)",
			failover.Round(time.Millisecond), opts.LostWorkerDelay)
	}
	newLeader, err := e.c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("new leader: %s", newLeader.Name)
	if !slices.Contains(others, newLeader.Name) {
		t.Errorf("new leader %s, want one of %v", newLeader.Name, others)
	}
	starts := e.startsSince(ctx, killAt, time.Second, 20*time.Second)
	if got := startedTasks(starts); !slices.Equal(got, onLeader) {
		t.Errorf("tasks started after the leader's SIGKILL: %v, want only the dead leader's %v", got, onLeader)
	}
	var follower *harness.Worker
	for _, w := range e.c.Running() {
		if w != newLeader {
			follower = w
		}
	}
	if err := follower.REST.PutConnector(ctx, "sink2", harness.FileSink("events", outPath(e, "out2.txt"), 2)); err != nil {
		t.Fatalf("creating a connector through the follower %s after the leader changed: %v", follower.Name, err)
	}
	e.waitPlacement(ctx, follower, 30*time.Second, "sink2's 2 tasks RUNNING", harness.AllRunning(2, leader.Name), "sink2")
}

// TestRejoinRightAfterFailover: a crashed worker that comes back just after
// its tasks moved gets its share back quickly: the tasks revoked from the
// others (started moments before, their sink consumers still joining the
// sink's group) stop at once, not after task.shutdown.graceful.timeout.ms.
func TestRejoinRightAfterFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := failoverOpts
	e, ws, _ := sinkOn3(ctx, t, "out.txt")
	if err := e.broker.WaitConsumerGroup(ctx, "connect-sink", 6, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	leader, followers := followersOf(ctx, t, e, ws)
	victim, via := followers[0], leader
	// The victim leaves and comes back, and is killed as soon as it runs
	// its tasks again: its consumers die while joining the sink's group.
	if err := victim.Terminate(); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, via, 30*time.Second, "the tasks RUNNING on the others", harness.AllRunning(6, victim.Name), "sink")
	if err := victim.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	victim = e.start(ctx, victim.Name)[0]
	e.waitPlacement(ctx, via, 60*time.Second, "6 tasks on 3 workers", harness.Balanced(6, "w1", "w2", "w3"), "sink")
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, via, 30*time.Second, "the tasks RUNNING on the others", harness.AllRunning(6, victim.Name), "sink")
	backAt := time.Now()
	e.start(ctx, victim.Name)
	names := []string{"w1", "w2", "w3"}
	p, at := e.waitPlacement(ctx, via, 30*time.Second, "6 tasks balanced on 3 workers again", harness.Balanced(6, names...), "sink")
	back := at.Sub(backAt)
	t.Logf("%s back right after the failover: balanced after %s: %s", victim.Name, back.Round(time.Millisecond), p)
	if back >= opts.LostWorkerDelay {
		t.Errorf("the returning worker got its share after %s, want well under lostWorkerDelay (%s)", back.Round(time.Millisecond), opts.LostWorkerDelay)
	}
}
