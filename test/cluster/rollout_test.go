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

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestRollingUpdateMovesEachTaskOnce replaces 2 workers of revision "a" by
// 2 of revision "b" one at a time, as the worker Deployment's rolling
// update does (maxSurge 1, maxUnavailable 0; the operator gives each pod
// its pod-template-hash as worker.revision): the new worker starts and is
// ready, then the old one gets SIGTERM and exits. Every task starts exactly
// once during the update, on a new worker: the surge worker takes no task
// it would give back, and the remaining old worker takes none of the
// leaver's. (Without revisions 4 tasks start 5 or 6 times here.)
func TestRollingUpdateMovesEachTaskOnce(t *testing.T) {
	const tasks = 4
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old, next := []string{"w1", "w2"}, []string{"w3", "w4"}
	e := newEnv(t, harness.Options{PerWorker: func(name string) []string {
		if slices.Contains(old, name) {
			return []string{"worker.revision=a"}
		}
		return []string{"worker.revision=b"}
	}})
	ws := e.start(ctx, old...)
	if err := ws[0].REST.PutConnector(ctx, "range", harness.RangeSource("range", tasks)); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, ws[0], 60*time.Second, "4 tasks balanced on w1 and w2", harness.Balanced(tasks, old...))
	begin := time.Now()
	for i, o := range old {
		nw := e.start(ctx, next[i])[0]
		testkit.Eventually(t, 30*time.Second, next[i]+" ready", func() (bool, string) {
			code, err := nw.REST.Do(ctx, "GET", "/readyz", nil, nil)
			return err == nil && code == 200, fmt.Sprintf("/readyz %d %v", code, err)
		})
		if err := e.c.Worker(o).Terminate(); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Worker(o).Wait(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	e.waitPlacement(ctx, e.c.Worker("w3"), 60*time.Second, "4 tasks balanced on w3 and w4", harness.Balanced(tasks, next...))
	starts, err := e.broker.TaskStarts(ctx, "connect-status", begin)
	if err != nil {
		t.Fatal(err)
	}
	per := map[harness.TaskKey][]string{}
	for _, s := range starts {
		per[s.TaskKey] = append(per[s.TaskKey], s.Worker)
	}
	t.Logf("task starts during the rolling update: %v", per)
	if len(starts) != tasks {
		t.Errorf("%d task starts for %d tasks, want each task started once", len(starts), tasks)
	}
	for k, on := range per {
		if len(on) != 1 || !slices.Contains(next, on[0]) {
			t.Errorf("task %v started on %v, want once on a new worker", k, on)
		}
	}
}
