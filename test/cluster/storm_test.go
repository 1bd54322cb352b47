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
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// supervisor restarts every worker process that ends, after a short pause,
// as a kubelet does for a pod with restartPolicy Always: a crashed worker
// comes back under the same name, address and worker id.
type supervisor struct {
	e     *env
	pause time.Duration
	// crashLoop makes the pause the kubelet's CrashLoopBackOff: the first
	// restart of a name at once, then pause, 2*pause, 4*pause...
	crashLoop bool
	mu        sync.Mutex
	exits     map[string]int  // name -> processes of it that ended
	gone      map[string]bool // names never restarted again (a pod deleted for good)
	lastStart time.Time       // when the latest restart launched its process
	stop      chan struct{}
	wg        sync.WaitGroup
}

// restartDelay is the pause before restarting a name that ended exits times.
func (s *supervisor) restartDelay(exits int) time.Duration {
	if !s.crashLoop {
		return s.pause
	}
	if exits <= 1 {
		return 0
	}
	return s.pause << min(exits-2, 8)
}

// lastRestart is when the latest restart launched its process (zero if none).
func (s *supervisor) lastRestart() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastStart
}

func supervise(e *env, pause time.Duration, ws ...*harness.Worker) *supervisor {
	s := &supervisor{e: e, pause: pause, exits: map[string]int{}, gone: map[string]bool{}, stop: make(chan struct{})}
	for _, w := range ws {
		s.add(w)
	}
	e.t.Cleanup(s.Stop)
	return s
}

// add supervises one more worker.
func (s *supervisor) add(w *harness.Worker) {
	s.wg.Add(1)
	go s.loop(w)
}

// retire stops restarting the named worker once its process ends.
func (s *supervisor) retire(name string) {
	s.mu.Lock()
	s.gone[name] = true
	s.mu.Unlock()
}

func (s *supervisor) loop(w *harness.Worker) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-w.Done():
		}
		s.mu.Lock()
		s.exits[w.Name]++
		gone := s.gone[w.Name]
		delay := s.restartDelay(s.exits[w.Name])
		s.mu.Unlock()
		if gone {
			return
		}
		select {
		case <-s.stop:
			return
		case <-time.After(delay):
		}
		s.mu.Lock()
		gone = s.gone[w.Name]
		s.mu.Unlock()
		if gone {
			return
		}
		nw, err := s.e.c.Launch(w.Name)
		if err != nil {
			s.e.t.Errorf("restarting %s: %v", w.Name, err)
			return
		}
		s.mu.Lock()
		s.lastStart = time.Now()
		s.mu.Unlock()
		w = nw
	}
}

// Stop ends the restarts (idempotent).
func (s *supervisor) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

// TestKillStormConverges recreates issue 14's storm: three workers run a
// connector while worker processes are SIGKILLed again and again, a second
// or two apart, so that every kill lands while the rebalance of an earlier
// one is still open, and each killed process is restarted at once under its
// own name (the kubelet's restart). After the last kill the group must form
// again: every process up and Ready and every task RUNNING within
// 30s + lostWorkerDelay. The coordinator is kfake, whose JoinGroup handling
// differs from Kafka's in a way that matters here: it restarts the
// rebalance deadline on every JoinGroup (groups.go: "Always reset the timer
// with the current max rebalance timeout"), whereas Kafka fixes it when the
// rebalance begins; so members that keep joining (as new members, or
// re-sending a timed-out JoinGroup) can keep a kfake group in
// PreparingRebalance for ever. What makes it converge anyway is on our
// side: a worker never exits because its join is slow, and a restarted
// worker takes back its static membership (group.instance.id) instead of
// adding a new member, so once the kills stop every member of the group
// is a live one that has joined, and the rebalance completes without any
// deadline.
func TestKillStormConverges(t *testing.T) {
	const tasks, kills = 6, 15
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The worker's own defaults for the group timings, as in the issue.
	opts := harness.Options{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, RebalanceTimeout: 60 * time.Second, LostWorkerDelay: 5 * time.Second}
	e := newEnv(t, opts)
	names := []string{"w1", "w2", "w3"}
	ws := e.start(ctx, names...)
	if err := ws[0].REST.PutConnector(ctx, "range", harness.RangeSource("range", tasks)); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, ws[0], 60*time.Second, "every task RUNNING before the storm", harness.AllRunning(tasks))

	sup := supervise(e, 300*time.Millisecond, ws...)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("storm: %d SIGKILLs, 1-2s apart, seed %d", kills, seed)
	for i := range kills {
		// The next kill comes while the last one's rebalance is open.
		var running []*harness.Worker
		if err := testkit.Until(ctx, 30*time.Second, "a worker process to kill", func(context.Context) (bool, error) {
			running = e.c.Running()
			return len(running) > 0, nil
		}); err != nil {
			t.Fatal(err)
		}
		target := running[rng.IntN(len(running))]
		if err := target.Kill(); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill %d: %s", i+1, target.Name)
		time.Sleep(time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
	}
	stormEnd := time.Now()
	bound := 30*time.Second + opts.LostWorkerDelay
	err := testkit.Until(ctx, bound, "every worker up and Ready, and every task RUNNING", func(ctx context.Context) (bool, error) {
		running := e.c.Running()
		if len(running) != len(names) {
			return false, fmt.Errorf("%d of %d worker processes running", len(running), len(names))
		}
		for _, w := range running {
			var body struct{ Message string }
			code, err := w.REST.Do(ctx, "GET", "/readyz", nil, &body)
			if err != nil {
				return false, err
			}
			if code != 200 {
				return false, fmt.Errorf("%s /readyz %d: %s", w.Name, code, body.Message)
			}
		}
		p, err := running[0].REST.Placement(ctx, "range")
		if err != nil {
			return false, err
		}
		if !harness.AllRunning(tasks)(p) {
			return false, fmt.Errorf("placement %s", p)
		}
		return true, nil
	})
	converge := time.Since(stormEnd)
	groupID := e.c.Options().GroupID
	gs, derr := e.broker.Admin.DescribeGroups(ctx, groupID)
	group := fmt.Sprint(derr)
	if g, ok := gs[groupID]; ok {
		group = fmt.Sprintf("state %s, %d members", g.State, len(g.Members))
	}
	sup.Stop()
	sup.mu.Lock()
	exits := fmt.Sprint(sup.exits)
	sup.mu.Unlock()
	gaveUp := len(e.c.LogLines("joining group", "context deadline exceeded"))
	t.Logf("after the storm: converged=%v in %s (bound %s); group %s; process ends per worker %s; processes that gave up joining %d",
		err == nil, converge.Round(100*time.Millisecond), bound, group, exits, gaveUp)
	if err != nil {
		t.Fatalf("the group did not converge after the storm: %v", err)
	}
	if gaveUp > 0 {
		t.Errorf("%d worker processes exited because their join was slow: %s", gaveUp, strings.Join(e.c.LogLines("joining group"), "\n"))
	}
}
