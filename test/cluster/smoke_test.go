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
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestSingleWorker: one worker process runs a 6-task FileSink, every
// produced record reaches the file, each task started once (read from the
// status topic), REST needs the cluster's token, and SIGTERM stops the
// worker cleanly.
func TestSingleWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e := newEnv(t, harness.Options{}, kfake.SeedTopics(6, "events"))
	since := time.Now()
	w := e.start(ctx, "w1")[0]

	anon := harness.NewClient(w.URL, "")
	code, err := anon.Do(ctx, "GET", "/connectors", nil, nil)
	var apiErr *harness.APIError
	if code != 401 || !errors.As(err, &apiErr) || apiErr.ErrorCode != 401 {
		t.Fatalf("GET /connectors without the token: %d %v, want 401 in the error shape", code, err)
	}

	out := outPath(e, "out.txt")
	if err := w.REST.PutConnector(ctx, "sink", harness.FileSink("events", out, 6)); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, w, 30*time.Second, "6 tasks RUNNING on w1", harness.Balanced(6, "w1"), "sink")

	p := startProducer(t, e.broker.Addr, "events", 5000)
	if err := testkit.Until(ctx, 20*time.Second, "1000 records acknowledged", func(context.Context) (bool, error) {
		return p.acked.Load() >= 1000, nil
	}); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if p.err != nil {
		t.Fatalf("producing: %v", p.err)
	}
	acked := p.Acked()
	var counts map[int]int
	var lines, torn int
	if err := testkit.Until(ctx, 30*time.Second, "every acknowledged record in the sink file", func(context.Context) (bool, error) {
		var err error
		counts, lines, torn, err = sinkFile(out)
		if err != nil {
			return false, err
		}
		for id := range acked {
			if counts[id] == 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("records=%d lines=%d duplicates=%d torn=%d", len(acked), lines, lines-len(counts), torn)
	if torn != 0 {
		t.Errorf("%d torn lines in the sink file", torn)
	}

	starts, err := e.broker.TaskStarts(ctx, "connect-status", since)
	if err != nil {
		t.Fatal(err)
	}
	counted := harness.StartCounts(starts)
	if len(counted) != 6 {
		t.Fatalf("starts recorded for %d tasks, want 6: %v", len(counted), starts)
	}
	for k, n := range counted {
		if n != 1 {
			t.Errorf("task %s started %d times, want 1", k, n)
		}
	}
	for _, s := range starts {
		if s.Worker != "w1" {
			t.Errorf("task %s started on %q, want w1", s.TaskKey, s.Worker)
		}
	}

	if err := w.Terminate(); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
}
