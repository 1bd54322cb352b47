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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// sumMetric adds up every sample of a metric (all its label sets).
func sumMetric(exposition, name string) float64 {
	var sum float64
	for _, l := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// groupCounts is what a worker's /metrics says about its group life.
type groupCounts struct {
	rebalances, taskStarts, epoch float64
}

func countsOf(ctx context.Context, t *testing.T, w *harness.Worker) groupCounts {
	t.Helper()
	m, err := w.REST.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return groupCounts{
		rebalances: sumMetric(m, "kafka_connect_completed_rebalances_total"),
		taskStarts: sumMetric(m, "kafka_connect_task_starts_total"),
		epoch:      sumMetric(m, "kafka_connect_epoch"),
	}
}

// TestStaticRestartKeepsTasks: a worker SIGKILLed and restarted at once
// under the same name (a container restart in its pod: the same
// group.instance.id, address and worker id) takes back its place in the
// group and its own tasks without a rebalance. The other workers complete
// no rebalance and start no task, the group generation stays, and the
// restarted process starts exactly the tasks its previous process ran.
//
// kfake and Kafka differ here: Kafka hands a returning static member of a
// stable group its assignment whatever metadata it joins with, kfake only
// when the metadata is byte for byte the previous one (otherwise it
// rebalances); the worker joins with its previous process's metadata
// (group.Resumer), so both give the outcome checked here.
func TestStaticRestartKeepsTasks(t *testing.T) {
	const tasks = 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newEnv(t, harness.Options{SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second})
	names := []string{"w1", "w2", "w3"}
	ws := e.start(ctx, names...)
	if err := ws[0].REST.PutConnector(ctx, "range", harness.RangeSource("range", tasks/2)); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, ws[0], 60*time.Second, "3 tasks RUNNING, 1 on each worker", harness.Balanced(tasks/2, names...))
	// A second connector makes every worker join again while it runs
	// tasks, so what each joined with last names tasks it owns: a restarted
	// process that knows nothing of them joins with other metadata.
	if err := ws[0].REST.PutConnector(ctx, "range2", harness.RangeSource("range2", tasks/2)); err != nil {
		t.Fatal(err)
	}
	before, _ := e.waitPlacement(ctx, ws[0], 60*time.Second, "6 tasks RUNNING, 2 on each worker", harness.Balanced(tasks, names...))
	// The counts settle once every worker applied the last assignment (a
	// follow-up rebalance may still come): the same on all, for a second.
	var base map[string]groupCounts
	var since time.Time
	testkit.Eventually(t, 30*time.Second, "the counts of every worker to settle", func() (bool, string) {
		now := map[string]groupCounts{}
		for _, w := range ws {
			now[w.Name] = countsOf(ctx, t, w)
		}
		if fmt.Sprint(now) != fmt.Sprint(base) || now["w1"].epoch != now["w2"].epoch || now["w2"].epoch != now["w3"].epoch {
			base, since = now, time.Now()
			return false, fmt.Sprint(now)
		}
		return time.Since(since) >= time.Second, fmt.Sprint(now)
	})
	// The leader is restarted: the hardest case, as it takes back its
	// place without assigning (SkipAssignment) and must still lead.
	leader, err := e.c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	idx := slices.Index(names, leader.Name)
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	restartAt := time.Now()
	nw2, err := e.c.Start(ctx, leader.Name)
	if err != nil {
		t.Fatal(err)
	}
	ws[idx] = nw2
	others := slices.Delete(slices.Clone(ws), idx, idx+1)
	var after harness.Placement
	testkit.Eventually(t, 30*time.Second, "the restarted w2 Ready and every task RUNNING", func() (bool, string) {
		code, err := nw2.REST.Do(ctx, "GET", "/readyz", nil, nil)
		if err != nil || code != 200 {
			return false, fmt.Sprintf("/readyz %d %v", code, err)
		}
		p, err := ws[0].REST.Placement(ctx)
		if err != nil {
			return false, err.Error()
		}
		after = p
		return harness.AllRunning(tasks)(p) && slices.Equal(keyStrings(p.On(leader.Name)), keyStrings(before.On(leader.Name))), p.String()
	})
	back := time.Since(restartAt)
	for _, w := range others {
		if c := countsOf(ctx, t, w); c != base[w.Name] {
			t.Errorf("%s: %+v after the restart, %+v before: a rebalance or a task start", w.Name, c, base[w.Name])
		}
	}
	// Nothing else happens: no rebalance on the others, no task start.
	testkit.Consistently(t, 3*time.Second, "no rebalance and no task start on the other workers", func() (bool, string) {
		for _, w := range others {
			if c := countsOf(ctx, t, w); c != base[w.Name] {
				return false, fmt.Sprintf("%s: %+v, before the restart %+v", w.Name, c, base[w.Name])
			}
		}
		return true, ""
	})
	c2 := countsOf(ctx, t, nw2)
	if l, err := e.c.Leader(ctx, 10*time.Second); err != nil || l.Name != leader.Name {
		t.Errorf("after the restart the workers agree on leader %v (%v), want the restarted %s", l, err, leader.Name)
	}
	t.Logf("leader %s restarted: its %d tasks RUNNING on it again %s after the restart; others %s %+v and %s %+v (unchanged); restarted %s: rebalances %v (its own join), task starts %v, epoch %v (group epoch before: %v)",
		leader.Name, len(after.On(leader.Name)), back.Round(10*time.Millisecond), others[0].Name, base[others[0].Name], others[1].Name, base[others[1].Name],
		leader.Name, c2.rebalances, c2.taskStarts, c2.epoch, base[others[0].Name].epoch)
	if c2.taskStarts != float64(len(before.On(leader.Name))) {
		t.Errorf("the restarted %s started %v tasks, want its own %d", leader.Name, c2.taskStarts, len(before.On(leader.Name)))
	}
	if c2.epoch != base[others[0].Name].epoch {
		t.Errorf("the restarted %s is in generation %v, the group was in %v: a rebalance happened", leader.Name, c2.epoch, base[others[0].Name].epoch)
	}
	// The restarted leader still leads: a connector created through a
	// follower (forwarded to it) gets its tasks.
	if err := others[0].REST.PutConnector(ctx, "range3", harness.RangeSource("range3", 3)); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, others[0], 30*time.Second, "range3's 3 tasks RUNNING", harness.AllRunning(3), "range3")
}
