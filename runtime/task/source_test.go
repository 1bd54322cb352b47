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

package task

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

func newSource(t *testing.T, cfg SourceConfig) *SourceRunner {
	t.Helper()
	r, err := NewSourceRunner(cfg)
	return tasktest.StartMayFail(t, r, err)
}

// slowAcks delays every produce response by d, so acknowledgements lag
// far behind polls.
func slowAcks(c *kfake.Cluster, d time.Duration) {
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { time.Sleep(d) })
		return nil, nil, false
	})
}

func endOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Errorf("listing end offsets: %v", err)
		return -1
	}
	o, _ := ends.Lookup(topic, 0)
	return o.Offset
}

// posOf reads the "pos" of a stored or written offset (int when written by
// the task, float64 after a JSON round trip).
func posOf(o map[string]any) int {
	switch v := o["pos"].(type) {
	case int:
		return v
	case float64:
		return int(v)
	}
	return -1
}

// Offsets reach the store only after the broker acknowledged the record
// and every earlier one, in increasing order; in-flight records stay
// bounded; the producer is idempotent; headers and keys arrive.
func TestSourceOffsetsFollowAcks(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	adm := admin(t, c)
	slowAcks(c, 30*time.Millisecond)

	store := newMemOffsets()
	var mu sync.Mutex
	last, violations := -1, []string{}
	store.check = func(o SourceOffset) error {
		p := posOf(o.Offset)
		// Independent of the runner: the broker must already hold records
		// 0..p (one partition, written in order).
		if end := endOffset(t, adm, "out"); end < int64(p+1) {
			violations = append(violations, fmt.Sprintf("offset pos=%d written while the topic ends at %d", p, end))
		}
		mu.Lock()
		defer mu.Unlock()
		if p <= last {
			violations = append(violations, fmt.Sprintf("offset pos=%d written after pos=%d", p, last))
		}
		last = p
		return nil
	}
	st := newStatuses()
	task := &counterSource{topic: "out", limit: 3000, batch: 100}
	m := metrics.New()
	cfg := SourceConfig{Common: common(c, st, ID{"src", 0}, nil), Task: task, Offsets: store, MaxInFlight: 300}
	cfg.OffsetFlushInterval = 10 * time.Millisecond
	cfg.Metrics = m.Task("src", 0)
	var rp atomic.Pointer[SourceRunner]
	task.onPoll = func() {
		if r := rp.Load(); r != nil {
			if n := r.inFlight(); n > task.maxInFlight {
				task.maxInFlight = n
			}
		}
	}
	r, err := NewSourceRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rp.Store(r)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "all 3000 records acknowledged", func() bool { return task.committedCount() == 3000 })
	testkit.EventuallyTrue(t, 5*time.Second, "last offset stored", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return last == 2999
	})
	stop(t, r, 5*time.Second)

	mu.Lock()
	if len(violations) > 0 {
		t.Fatalf("offset writes broke the ack order:\n%s", strings.Join(violations, "\n"))
	}
	writes := len(store.writes)
	mu.Unlock()
	if writes < 3 {
		t.Fatalf("only %d offset writes; the test did not exercise periodic flushing", writes)
	}
	if task.maxInFlight >= 300 {
		t.Fatalf("polled with %d records in flight, bound 300", task.maxInFlight)
	}
	for i, p := range task.committed {
		if p != i {
			t.Fatalf("CommitRecord #%d got pos %d: not in acknowledgement order", i, p)
		}
	}
	if task.commits == 0 {
		t.Fatal("task.Commit never called after offsets were stored")
	}
	recs := readAll(t, c, "out", 3000)
	for _, kr := range recs[:10] {
		if kr.ProducerID < 0 {
			t.Fatalf("record at %d has no producer id: the producer is not idempotent", kr.Offset)
		}
		if len(kr.Headers) != 1 || kr.Headers[0].Key != "h" || string(kr.Headers[0].Value) != "x" {
			t.Fatalf("headers %v", kr.Headers)
		}
		if want := time.UnixMilli(1_700_000_000_000 + int64(kr.Offset)); !kr.Timestamp.Equal(want) {
			t.Fatalf("record %d timestamp %v, want the task's %v", kr.Offset, kr.Timestamp, want)
		}
		if string(kr.Value) != fmt.Sprintf("v-%s", kr.Key) {
			t.Fatalf("key %q value %q", kr.Key, kr.Value)
		}
	}
	l := map[string]string{"connector": "src", "task": "0"}
	if v := metricValue(t, m.Registry(), "kafka_connect_source_record_write_total", l); v != 3000 {
		t.Errorf("source_record_write_total = %v, want 3000", v)
	}
	if v := metricValue(t, m.Registry(), "kafka_connect_source_record_poll_total", l); v != 3000 {
		t.Errorf("source_record_poll_total = %v, want 3000", v)
	}
	if v := metricValue(t, m.Registry(), "kafka_connect_poll_batch_time_ms", l); v < 30 {
		t.Errorf("poll_batch_time_ms has %v observations, want >= 30", v)
	}
	t.Logf("offset writes: %d, max in flight at poll: %d", writes, task.maxInFlight)
}

// A stopped source resumes from its stored offsets: nothing lost, nothing
// duplicated across a graceful stop in the middle of the stream.
func TestSourceResumesFromStoredOffsets(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	adm := admin(t, c)
	store := newMemOffsets()
	st := newStatuses()

	first := &counterSource{topic: "out", limit: 20000, batch: 100}
	cfg := SourceConfig{Common: common(c, st, ID{"src", 0}, nil), Task: first, Offsets: store, MaxInFlight: 1000}
	r1 := newSource(t, cfg)
	testkit.EventuallyTrue(t, 20*time.Second, "some records acknowledged", func() bool { return first.committedCount() >= 500 })
	took := stop(t, r1, 5*time.Second)
	if st.last(ID{"src", 0}) != StateUnassigned {
		t.Fatalf("state after stop %s", st.last(ID{"src", 0}))
	}
	stored, _ := store.Read(context.Background(), "src", []map[string]any{{"source": "counter"}})
	if stored[0] == nil {
		t.Fatal("no offset stored on stop")
	}
	sent := endOffset(t, adm, "out")
	if int64(posOf(stored[0])+1) != sent {
		t.Fatalf("stored pos %d after stop, but the topic holds %d records", posOf(stored[0]), sent)
	}
	t.Logf("first run: %d records, stop took %v", sent, took)
	if took > 2*time.Second {
		t.Fatalf("graceful stop took %v", took)
	}

	second := &counterSource{topic: "out", limit: 20000, batch: 100}
	cfg.Task = second
	newSource(t, cfg)
	testkit.EventuallyTrue(t, 30*time.Second, "the rest acknowledged", func() bool { return endOffset(t, adm, "out") >= 20000 })
	if second.next != 20000 {
		t.Fatalf("second task ended at %d", second.next)
	}
	recs := readAll(t, c, "out", 20000)
	vals := values(recs)
	if len(vals) != 20000 {
		t.Fatalf("%d distinct records, want 20000", len(vals))
	}
	if end := endOffset(t, adm, "out"); end != 20000 {
		t.Fatalf("topic holds %d records, want exactly 20000 (duplicates after resume)", end)
	}
}

// A panicking source task goes FAILED with a trace and still stores the
// offsets of what Kafka acknowledged; another task keeps running.
func TestSourcePanicFailsOnlyThatTask(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1, "other": 1})
	adm := admin(t, c)
	store := newMemOffsets()
	st := newStatuses()
	bad := &counterSource{topic: "out", limit: 1000, batch: 10, panicAt: 50}
	rb := newSource(t, SourceConfig{Common: common(c, st, ID{"bad", 0}, nil), Task: bad, Offsets: store})
	good := &counterSource{topic: "other", limit: 500, batch: 10}
	rg := newSource(t, SourceConfig{Common: common(c, st, ID{"good", 0}, nil), Task: good, Offsets: store})

	select {
	case <-rb.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("panicking task did not finish")
	}
	if rb.State() != StateFailed {
		t.Fatalf("state %s, want FAILED", rb.State())
	}
	tr := st.trace(ID{"bad", 0})
	if !strings.Contains(tr, "assignment to entry in nil map") || !strings.Contains(tr, "counterSource).Poll") {
		t.Fatalf("trace lacks the panic and its stack:\n%s", tr)
	}
	stored, _ := store.Read(context.Background(), "bad", []map[string]any{{"source": "counter"}})
	if stored[0] == nil || posOf(stored[0]) != 49 {
		t.Fatalf("offsets of the 50 acknowledged records not stored after the failure: %v", stored[0])
	}
	testkit.EventuallyTrue(t, 10*time.Second, "other task delivers", func() bool { return endOffset(t, adm, "other") == 500 })
	if rg.State() != StateRunning {
		t.Fatalf("other task %s", rg.State())
	}
}

// Pause stops polling; Resume continues.
func TestSourcePauseResume(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	st := newStatuses()
	task := &counterSource{topic: "out", limit: 1 << 30, batch: 10}
	r := newSource(t, SourceConfig{Common: common(c, st, ID{"src", 0}, nil), Task: task, Offsets: newMemOffsets()})
	testkit.EventuallyTrue(t, 10*time.Second, "records flowing", func() bool { return task.committedCount() > 100 })
	r.Pause()
	testkit.EventuallyTrue(t, 5*time.Second, "PAUSED", func() bool { return st.last(ID{"src", 0}) == StatePaused })
	// r.inFlight counts the batches still queued for the sender too.
	testkit.EventuallyTrue(t, 5*time.Second, "in-flight drained", func() bool { return r.inFlight() == 0 })
	n := task.committedCount()
	testkit.Consistently(t, 200*time.Millisecond, "a paused task produces nothing", func() (bool, string) {
		m := task.committedCount()
		return m == n, fmt.Sprintf("%d more records produced", m-n)
	})
	r.Resume()
	testkit.EventuallyTrue(t, 5*time.Second, "records after resume", func() bool { return task.committedCount() > n+100 })
}

// A retriable Poll error is retried, not fatal.
func TestSourceRetriablePoll(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	st := newStatuses()
	task := &flakySource{counterSource: counterSource{topic: "out", limit: 100, batch: 10}, failures: 3}
	newSource(t, SourceConfig{Common: common(c, st, ID{"src", 0}, nil), Task: task, Offsets: newMemOffsets()})
	testkit.EventuallyTrue(t, 10*time.Second, "all records despite retriable errors", func() bool { return task.committedCount() == 100 })
	if st.last(ID{"src", 0}) != StateRunning {
		t.Fatalf("state %s", st.last(ID{"src", 0}))
	}
}

type flakySource struct {
	counterSource
	failures int
}

func (s *flakySource) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	if s.failures > 0 {
		s.failures--
		return nil, plugin.Retriable(fmt.Errorf("source busy"))
	}
	return s.counterSource.Poll(ctx)
}

// slowStartSource is a counterSource whose Start waits for release.
type slowStartSource struct {
	*counterSource
	release chan struct{}
}

func (s *slowStartSource) Start(ctx context.Context, tc plugin.SourceTaskContext, cfg map[string]string) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.counterSource.Start(ctx, tc, cfg)
}

// The producer gets its producer id while the task starts, before the
// task returned a record, and keeps it for the records.
func TestSourceInitializesProducerWhileTaskStarts(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	adm := admin(t, c)
	var inits atomic.Int32
	c.ControlKey(int16(kmsg.InitProducerID), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		inits.Add(1)
		return nil, nil, false
	})
	src := &slowStartSource{counterSource: &counterSource{topic: "out", limit: 10, batch: 10}, release: make(chan struct{})}
	newSource(t, SourceConfig{Common: common(c, newStatuses(), ID{"init", 0}, nil), Task: src, Offsets: newMemOffsets()})
	testkit.EventuallyTrue(t, 10*time.Second, "the producer id requested while the task starts", func() bool { return inits.Load() > 0 })
	close(src.release)
	testkit.EventuallyTrue(t, 10*time.Second, "the task's records in Kafka", func() bool { return endOffset(t, adm, "out") == 10 })
	if n := inits.Load(); n != 1 {
		t.Fatalf("%d InitProducerID requests, want 1 (the records use the id got at start)", n)
	}
}
