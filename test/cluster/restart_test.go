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
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
)

// TestRestart200Connectors is issue 4's second must-show: 200 connectors
// with 1000 tasks on 5 worker processes; after all workers restart (SIGTERM
// all, start all), every task is RUNNING again within 30s, and each task
// was started anew (status topic).
func TestRestart200Connectors(t *testing.T) {
	const connectors, perConnector, workers = 200, 5, 5
	const tasks = connectors * perConnector
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := newEnv(t, harness.Options{})
	names := make([]string, workers)
	for i := range names {
		names[i] = fmt.Sprintf("w%d", i+1)
	}
	begin := time.Now()
	ws := e.start(ctx, names...)
	if err := harness.CreateConnectors(ctx, ws, "range", connectors, harness.RangeSource("range", perConnector)); err != nil {
		t.Fatal(err)
	}
	created := time.Since(begin)
	_, at := e.waitPlacement(ctx, ws[0], 90*time.Second, fmt.Sprintf("%d tasks RUNNING, balanced on %d workers", tasks, workers), harness.Balanced(tasks, names...))
	t.Logf("%d connectors created in %s; %d tasks RUNNING and balanced %s after the first start", connectors, created.Round(time.Millisecond), tasks, at.Sub(begin).Round(time.Millisecond))

	restartAt := time.Now()
	if err := harness.TerminateAll(ws, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Since(restartAt)
	startAt := time.Now()
	ws = e.start(ctx, names...)
	_, at = e.waitPlacement(ctx, ws[0], 60*time.Second, fmt.Sprintf("%d tasks RUNNING after the restart", tasks), harness.AllRunning(tasks))
	restart := at.Sub(restartAt)
	t.Logf("restart of %d workers: stopped in %s; every task RUNNING %s after the new processes started, %s after the SIGTERMs",
		workers, stopped.Round(time.Millisecond), at.Sub(startAt).Round(time.Millisecond), restart.Round(time.Millisecond))
	if restart > 30*time.Second {
		t.Errorf("every task RUNNING again %s after the restart began, want <= 30s", restart.Round(time.Millisecond))
	}
	_, bal := e.waitPlacement(ctx, ws[0], 60*time.Second, "the tasks balanced on 5 workers", harness.Balanced(tasks, names...))
	t.Logf("balanced %s after the SIGTERMs", bal.Sub(restartAt).Round(time.Millisecond))

	// The leaders log each assignment step with its duration: decoding the
	// members' metadata, reading the config topic to its end (a broker round
	// trip), the assignor and encoding; so this is reported, not held to the
	// assignor's 50ms (runtime/assignor's test and make bench time that).
	var took []time.Duration
	for _, l := range e.c.LogLines(`msg="assigned connectors and tasks"`, "members=5") {
		if _, v, ok := strings.Cut(l, " took="); ok {
			if d, err := time.ParseDuration(strings.Fields(v)[0]); err == nil {
				took = append(took, d)
			}
		}
	}
	if len(took) == 0 {
		t.Errorf("no assignment for 5 members found in the worker logs (msg=\"assigned connectors and tasks\" ... took=)")
	} else {
		slices.Sort(took)
		t.Logf("leader assignment steps for 5 members: %d, median %s, slowest %s", len(took), took[len(took)/2], took[len(took)-1])
	}

	starts, err := e.broker.TaskStarts(ctx, "connect-status", startAt)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(harness.StartCounts(starts)); n != tasks {
		t.Errorf("%d tasks recorded a start after the restart, want %d", n, tasks)
	}
}
