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
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestRESTAcrossWorkers: every worker answers reads alike; writes sent to
// followers (create, pause, resume, delete) reach the leader with the
// token; a follower refuses a request without the token itself; each
// worker's metrics agree with the placement (its own task and connector
// counts, the same leader, completed rebalances).
func TestRESTAcrossWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newEnv(t, harness.Options{}, kfake.SeedTopics(6, "events"))
	names := []string{"w1", "w2", "w3"}
	begin := time.Now()
	ws := e.start(ctx, names...)
	leader, followers := followersOf(ctx, t, e, ws)
	f1, f2 := followers[0], followers[1]

	if code, err := harness.NewClient(f1.URL, "").Do(ctx, "PUT", "/connectors/x/config", harness.FileSink("events", outPath(e, "x.txt"), 1), nil); code != http.StatusUnauthorized {
		t.Fatalf("PUT to a follower without the token: %d %v, want 401", code, err)
	}
	if err := f1.REST.PutConnector(ctx, "sink", harness.FileSink("events", outPath(e, "out.txt"), 6)); err != nil {
		t.Fatalf("creating a connector through the follower %s: %v", f1.Name, err)
	}
	p, _ := e.waitPlacement(ctx, f2, 60*time.Second, "6 tasks balanced on 3 workers", harness.Balanced(6, names...), "sink")
	for _, w := range ws {
		q, _, err := w.REST.WaitPlacement(ctx, 10*time.Second, "the same placement on "+w.Name, func(q harness.Placement) bool { return q.String() == p.String() }, "sink")
		if err != nil {
			t.Errorf("%s answers another placement than %s: %v", w.Name, f2.Name, err)
		}
		_ = q
	}
	t.Logf("placement %s (%s)", p, time.Since(begin).Round(time.Millisecond))

	// Metrics: each worker counts its own tasks; all name the same leader.
	for _, w := range ws {
		want := float64(len(p.On(w.Name)))
		err := testkit.Until(ctx, 15*time.Second, w.Name+"'s metrics", func(ctx context.Context) (bool, error) {
			m, err := w.REST.Metrics(ctx)
			if err != nil {
				return false, err
			}
			running, _ := harness.MetricValue(m, `kafka_connect_task_count{state="RUNNING"}`)
			rebalances, _ := harness.MetricValue(m, "kafka_connect_completed_rebalances_total")
			lead, _ := harness.MetricValue(m, fmt.Sprintf(`kafka_connect_leader_name{leader=%q}`, leader.URL))
			if running != want || rebalances < 1 || lead != 1 {
				return false, fmt.Errorf("task_count RUNNING=%v (want %v), completed_rebalances_total=%v, leader_name{leader=%q}=%v", running, want, rebalances, leader.URL, lead)
			}
			return true, nil
		})
		if err != nil {
			t.Error(err)
		}
	}

	t.Logf("metrics agree (%s)", time.Since(begin).Round(time.Millisecond))
	if _, err := f2.REST.Do(ctx, "PUT", "/connectors/sink/pause", nil, nil); err != nil {
		t.Fatalf("pausing through the follower %s: %v", f2.Name, err)
	}
	paused := func(q harness.Placement) bool {
		for _, ts := range q {
			if ts.State != "PAUSED" {
				return false
			}
		}
		return len(q) == 6
	}
	for _, w := range ws {
		e.waitPlacement(ctx, w, 20*time.Second, "6 tasks PAUSED seen by "+w.Name, paused, "sink")
	}
	if _, err := f1.REST.Do(ctx, "PUT", "/connectors/sink/resume", nil, nil); err != nil {
		t.Fatalf("resuming through the follower %s: %v", f1.Name, err)
	}
	e.waitPlacement(ctx, leader, 20*time.Second, "6 tasks RUNNING again", harness.AllRunning(6), "sink")

	t.Logf("paused and resumed (%s)", time.Since(begin).Round(time.Millisecond))
	if _, err := f2.REST.Do(ctx, "DELETE", "/connectors/sink", nil, nil); err != nil {
		t.Fatalf("deleting through the follower %s: %v", f2.Name, err)
	}
	for _, w := range ws {
		err := testkit.Until(ctx, 20*time.Second, "the connector gone on "+w.Name, func(ctx context.Context) (bool, error) {
			code, _ := w.REST.Do(ctx, "GET", "/connectors/sink", nil, nil)
			return code == http.StatusNotFound, nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("deleted (%s)", time.Since(begin).Round(time.Millisecond))
}
