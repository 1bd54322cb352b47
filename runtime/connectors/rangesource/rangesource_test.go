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

package rangesource

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		r    Range
		n    int
		want string
	}{
		{Range{0, 10}, 3, "0-4,4-7,7-10"},
		{Range{5, 7}, 4, "5-6,6-7"},
		{Range{0, 0}, 3, "0-0"},
		{Range{100, 200}, 1, "100-200"},
	}
	for _, c := range cases {
		var parts []string
		for _, r := range Split(c.r, c.n) {
			parts = append(parts, r.String())
		}
		if got := strings.Join(parts, ","); got != c.want {
			t.Errorf("Split(%v,%d) = %s want %s", c.r, c.n, got, c.want)
		}
	}
}

func connector(t *testing.T, cfg map[string]string) *Connector {
	t.Helper()
	c := &Connector{}
	if err := c.Start(context.Background(), plugintest.NewConnectorContext(nil), cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTaskConfigs(t *testing.T) {
	ctx := context.Background()
	c := connector(t, map[string]string{"topic": "t", "start": "10", "count": "100"})
	limit, reason, _ := c.NaturalLimit(ctx)
	if limit != 100 || reason != plugin.Ranges {
		t.Fatal(limit, reason)
	}
	tcs, err := c.TaskConfigs(4)
	if err != nil || len(tcs) != 4 {
		t.Fatal(len(tcs), err)
	}
	var got []string
	for _, tc := range tcs {
		got = append(got, tc[KeyTaskRanges])
		if tc[KeyTaskCount] != "4" {
			t.Fatal(tc)
		}
	}
	if strings.Join(got, "|") != "10-35|35-60|60-85|85-110" {
		t.Fatal(got)
	}

	// Fixed ranges: natural limit = ranges; tasks get contiguous groups.
	c = connector(t, map[string]string{"topic": "t", "end": "90", "ranges": "6"})
	limit, _, _ = c.NaturalLimit(ctx)
	if limit != 6 {
		t.Fatal(limit)
	}
	n, r := plugin.EffectiveTasks(10, limit, plugin.Ranges)
	if n != 6 || r != plugin.Ranges {
		t.Fatal(n, r)
	}
	tcs, _ = c.TaskConfigs(4)
	got = nil
	for _, tc := range tcs {
		got = append(got, tc[KeyTaskRanges])
	}
	if strings.Join(got, "|") != "0-15,15-30|30-45,45-60|60-75|75-90" {
		t.Fatal(got)
	}

	// The range.* aliases (used by the sample manifests) work like start/end.
	c = connector(t, map[string]string{"topic": "t", "range.start": "0", "range.end": "1000000"})
	limit, _, _ = c.NaturalLimit(ctx)
	tcs, _ = c.TaskConfigs(4)
	if limit != 1000000 || len(tcs) != 4 || tcs[3][KeyTaskRanges] != "750000-1000000" || tcs[0][KeyEnd] != "1000000" {
		t.Fatal(limit, tcs)
	}

	// Validation.
	for cfg, msg := range map[string]string{
		"start=1,range.start=2": "alias of start",
		"end=5,count=5":         "only one of end and count",
		"":                      "set end or count",
		"start=9,end=5":         "below start",
	} {
		m := map[string]string{"name": "r", "connector.class": "RangeSource", "topic": "t"}
		for _, kv := range strings.Split(cfg, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		res := plugin.ValidateConfig(ctx, Plugin(), m)
		if res.ErrorCount == 0 || !strings.Contains(res.Errors()[0].Message, msg) {
			t.Errorf("%s: %+v", cfg, res.Errors())
		}
	}
}

func TestTasksEmitEveryIDOnceAndResume(t *testing.T) {
	ctx := context.Background()
	c := connector(t, map[string]string{"topic": "ids", "count": "1000", "ranges": "7", "batch.size": "64", "record.size": "50", "poll.interval.ms": "1"})
	tcs, _ := c.TaskConfigs(3)
	store := plugintest.NewOffsetStore()
	seen := map[int64]int{}
	for _, cfg := range tcs {
		task := &Task{}
		if err := task.Start(ctx, &plugintest.SourceTaskContext{Store: store}, cfg); err != nil {
			t.Fatal(err)
		}
		// Stop each task half-way, then resume with a fresh task.
		recs, err := plugintest.Drain(ctx, task, store, 150, 2)
		if err != nil {
			t.Fatal(err)
		}
		_ = task.Stop()
		task2 := &Task{}
		if err := task2.Start(ctx, &plugintest.SourceTaskContext{Store: store}, cfg); err != nil {
			t.Fatal(err)
		}
		more, err := plugintest.Drain(ctx, task2, store, 1000, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !task2.Done() {
			t.Fatal("task not done")
		}
		for _, r := range append(recs, more...) {
			id := r.Key.(int64)
			seen[id]++
			v := r.Value.(*data.Struct)
			if v.Get("id") != id || v.Get("payload") != Payload(id, 50) || len(v.Get("payload").(string)) != 50 {
				t.Fatalf("record %d: %v", id, v)
			}
			if err := v.Validate(); err != nil {
				t.Fatal(err)
			}
			// Offsets advance per batch: at most the record's own.
			if next, ok := r.SourceOffset[OffsetNext].(int64); !ok || next > id+1 || next < id+1-64 || r.Topic != "ids" {
				t.Fatalf("record %d: offset %v", id, r.SourceOffset)
			}
		}
	}
	if len(seen) != 1000 {
		t.Fatalf("%d distinct IDs", len(seen))
	}
	for id, n := range seen {
		if id < 0 || id >= 1000 || n != 1 {
			t.Fatalf("id %d seen %d times", id, n)
		}
	}
	if store.Len() != 7 {
		t.Fatalf("%d source partitions stored", store.Len())
	}
}

func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	task := &Task{now: func() time.Time { return now }}
	cfg := map[string]string{"topic": "t", "count": "100", "rate": "20", "batch.size": "100", "task.ranges": "0-100", "task.count": "2"}
	if err := task.Start(ctx, &plugintest.SourceTaskContext{Store: plugintest.NewOffsetStore()}, cfg); err != nil {
		t.Fatal(err)
	}
	// 20/s shared by 2 tasks = 10/s for this one.
	recs, _ := task.Poll(ctx)
	if len(recs) != 1 {
		t.Fatalf("first poll: %d", len(recs))
	}
	now = now.Add(time.Second)
	recs, _ = task.Poll(ctx)
	if len(recs) != 10 {
		t.Fatalf("after 1s: %d", len(recs))
	}
	// Nothing is due: Poll waits briefly and returns nothing.
	recs, _ = task.Poll(ctx)
	if len(recs) != 0 {
		t.Fatalf("ahead of rate: %d", len(recs))
	}
	if Payload(12345, 3) != "123" || Payload(7, 5) != "7-xxx" {
		t.Fatal(Payload(12345, 3), Payload(7, 5))
	}
}

func TestBatchOffsets(t *testing.T) {
	ctx := context.Background()
	task := &Task{}
	cfg := map[string]string{"topic": "t", "count": "10", "batch.size": "4", "record.size": "8", "task.ranges": "0-3,3-10"}
	if err := task.Start(ctx, &plugintest.SourceTaskContext{Store: plugintest.NewOffsetStore()}, cfg); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for !task.Done() {
		recs, err := task.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, r.SourceOffset[OffsetNext].(int64))
			if v := r.Value.(*data.Struct); v.Get("payload") != Payload(r.Key.(int64), 8) || v.Get("id") != r.Key {
				t.Fatalf("record %v: value %v", r.Key, v)
			}
		}
	}
	// Batches [0 1 2 | 3] [4 5 6 7] [8 9]: within a range, records carry
	// the offset where the batch started, the last one its exact offset.
	want := []int64{0, 0, 3, 4, 4, 4, 4, 8, 8, 10}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}
}
