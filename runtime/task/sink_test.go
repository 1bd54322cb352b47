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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

func newSink(t *testing.T, cfg SinkConfig) *SinkRunner {
	t.Helper()
	r, err := NewSinkRunner(cfg)
	return tasktest.StartMayFail(t, r, err)
}

// A failing Flush keeps the offsets uncommitted; a restarted runner
// re-reads every record; once Flush succeeds the offsets are committed.
func TestSinkCommitsOnlyAfterFlush(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 3})
	adm := admin(t, c)
	produce(t, c, "in", "r", 90)

	m := metrics.New()
	st := newStatuses()
	failing := newRecordingSink()
	failing.flushErr = errors.New("disk full")
	cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: failing}
	cfg.OffsetFlushInterval = 50 * time.Millisecond
	cfg.Metrics = m.Task("s", 0)
	a := newSink(t, cfg)

	testkit.EventuallyTrue(t, 10*time.Second, "all records put and a failed flush", func() bool {
		failing.mu.Lock()
		defer failing.mu.Unlock()
		return len(failing.seen) == 90 && failing.flushes >= 2
	})
	if got := committed(t, adm, connectnames.SinkGroup("s"), "in"); len(got) != 0 {
		t.Fatalf("offsets committed although Flush failed: %v", got)
	}
	if a.State() != StateRunning {
		t.Fatalf("a failing flush must not fail the task; state %s", a.State())
	}
	// The failed flush rewound the consumer: records were put again.
	testkit.EventuallyTrue(t, 10*time.Second, "records delivered again after the rewind", func() bool { return failing.total() > 90 })
	stop(t, a, 5*time.Second)
	if got := committed(t, adm, connectnames.SinkGroup("s"), "in"); len(got) != 0 {
		t.Fatalf("offsets committed on stop although Flush failed: %v", got)
	}

	ok := newRecordingSink()
	cfg.Task = ok
	b := newSink(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "restarted runner re-reads every record", func() bool { return ok.distinct() == 90 })
	testkit.EventuallyTrue(t, 10*time.Second, "offsets committed after a successful flush", func() bool {
		got := committed(t, adm, connectnames.SinkGroup("s"), "in")
		return got[0] == 30 && got[1] == 30 && got[2] == 30
	})
	testkit.EventuallyTrue(t, 5*time.Second, "lag 0", func() bool { return b.Lag() == 0 })
	stop(t, b, 5*time.Second)
	l := map[string]string{"connector": "s", "task": "0"}
	reg := m.Registry()
	if v := metricValue(t, reg, "kafka_connect_offset_commit_failure_total", l); v < 2 {
		t.Errorf("offset_commit_failure_total = %v, want >= 2", v)
	}
	if v := metricValue(t, reg, "kafka_connect_offset_commit_success_total", l); v < 1 {
		t.Errorf("offset_commit_success_total = %v, want >= 1", v)
	}
	if v := metricValue(t, reg, "kafka_connect_sink_record_send_total", l); v < 180 {
		t.Errorf("sink_record_send_total = %v, want >= 180 (90 twice)", v)
	}
	if v := metricValue(t, reg, "kafka_connect_sink_lag", l); v != 0 {
		t.Errorf("sink_lag = %v, want 0", v)
	}
	if !ok.stopped {
		t.Fatal("plugin task not stopped")
	}
}

// Two runners in one group split the partitions; when the second joins,
// the first flushes and commits the partitions it gives away before they
// move, so nothing is delivered twice.
func TestSinkRevokeFlushesAndCommitsBeforeMove(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 4})
	adm := admin(t, c)
	produce(t, c, "in", "first", 200)

	st := newStatuses()
	sa := newRecordingSink()
	cfgA := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: sa}
	a := newSink(t, cfgA)
	testkit.EventuallyTrue(t, 10*time.Second, "runner A reads all 200", func() bool { return sa.distinct() == 200 })
	if got := committed(t, adm, connectnames.SinkGroup("s"), "in"); len(got) != 0 {
		t.Fatalf("nothing should be committed yet (flush interval 1h): %v", got)
	}

	sb := newRecordingSink()
	cfgB := SinkConfig{Common: common(c, st, ID{"s", 1}, map[string]string{"topics": "in"}), Task: sb}
	b := newSink(t, cfgB)
	testkit.EventuallyTrue(t, 15*time.Second, "partitions split 2/2", func() bool {
		return len(a.Assignment()) == 2 && len(b.Assignment()) == 2
	})
	all := append(a.Assignment(), b.Assignment()...)
	seen := map[string]bool{}
	for _, tp := range all {
		seen[tp.String()] = true
	}
	if len(seen) != 4 {
		t.Fatalf("assignments overlap or miss partitions: A=%v B=%v", a.Assignment(), b.Assignment())
	}
	// The revoked partitions were committed at their end (50 each).
	got := committed(t, adm, connectnames.SinkGroup("s"), "in")
	for _, tp := range b.Assignment() {
		if got[tp.Partition] != 50 {
			t.Fatalf("partition %v moved to B with committed offset %d, want 50 (all of A's work)", tp, got[tp.Partition])
		}
	}
	// In A's event log each moved partition was flushed before closed.
	ev := sa.eventList()
	for _, tp := range b.Assignment() {
		fi := slices.Index(ev, fmt.Sprintf("flush %s=50", tp))
		ci := slices.Index(ev, "close "+tp.String())
		if fi < 0 || ci < 0 || fi > ci {
			t.Fatalf("partition %s: want flush before close in A's events %v", tp, ev)
		}
	}

	produce(t, c, "in", "second", 200)
	testkit.EventuallyTrue(t, 10*time.Second, "both runners read the second batch", func() bool {
		n := 0
		for _, s := range []*recordingSink{sa, sb} {
			s.mu.Lock()
			for v := range s.seen {
				if strings.HasPrefix(v, "second-") {
					n++
				}
			}
			s.mu.Unlock()
		}
		return n == 200
	})
	if sb.distinct() == 0 || sb.distinct() > 100 {
		t.Fatalf("B read %d distinct records, want its 2 partitions' share (100)", sb.distinct())
	}
	for _, s := range []*recordingSink{sa, sb} {
		s.mu.Lock()
		for v, n := range s.seen {
			if n != 1 {
				t.Errorf("record %s delivered %d times", v, n)
			}
		}
		s.mu.Unlock()
	}
	if sb.seen["first-0"] != 0 {
		for v := range sb.seen {
			if strings.HasPrefix(v, "first-") {
				t.Fatalf("B re-read %s that A had flushed and committed", v)
			}
		}
	}
	stop(t, a, 5*time.Second)
	stop(t, b, 5*time.Second)
	got = committed(t, adm, connectnames.SinkGroup("s"), "in")
	for p := int32(0); p < 4; p++ {
		if got[p] != 100 {
			t.Fatalf("after stop, partition %d committed %d, want 100: %v", p, got[p], got)
		}
	}
}

// A panic in Put fails that task with the stack as trace; a second task
// of another connector keeps running.
func TestSinkPanicFailsOnlyThatTask(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1, "other": 1})
	st := newStatuses()
	bad := newRecordingSink()
	bad.panicPut = true
	good := newRecordingSink()
	rb := newSink(t, SinkConfig{Common: common(c, st, ID{"bad", 0}, map[string]string{"topics": "in"}), Task: bad})
	rg := newSink(t, SinkConfig{Common: common(c, st, ID{"good", 0}, map[string]string{"topics": "other"}), Task: good})
	produce(t, c, "in", "x", 5)
	select {
	case <-rb.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("panicking task did not finish")
	}
	if rb.State() != StateFailed || st.last(ID{"bad", 0}) != StateFailed {
		t.Fatalf("state %s / reported %s, want FAILED", rb.State(), st.last(ID{"bad", 0}))
	}
	tr := st.trace(ID{"bad", 0})
	if !strings.Contains(tr, "sink exploded") || !strings.Contains(tr, "goroutine") || !strings.Contains(tr, "recordingSink).Put") {
		t.Fatalf("trace lacks the panic and its stack:\n%s", tr)
	}
	if !bad.stopped {
		t.Fatal("failed task's plugin was not stopped")
	}
	produce(t, c, "other", "y", 20)
	testkit.EventuallyTrue(t, 10*time.Second, "other task keeps working", func() bool { return good.distinct() == 20 })
	if rg.State() != StateRunning {
		t.Fatalf("other task state %s", rg.State())
	}
}

// Stop returns within its bound even when the plugin's Flush hangs.
func TestSinkStopIsBounded(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	st := newStatuses()
	s := newRecordingSink()
	r := newSink(t, SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: s})
	produce(t, c, "in", "x", 10)
	testkit.EventuallyTrue(t, 10*time.Second, "records put", func() bool { return s.distinct() == 10 })
	s.mu.Lock()
	s.blockFlush = make(chan struct{}) // never closed: Flush hangs until its context ends
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.Stop(ctx)
	took := time.Since(start)
	if !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Stop = %v, want ErrStopTimeout", err)
	}
	if took > time.Second {
		t.Fatalf("Stop took %v, bound 300ms", took)
	}
}

// Pause stops deliveries; Resume continues; both states are reported.
func TestSinkPauseResume(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	st := newStatuses()
	s := newRecordingSink()
	r := newSink(t, SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: s})
	produce(t, c, "in", "a", 10)
	testkit.EventuallyTrue(t, 10*time.Second, "first records", func() bool { return s.distinct() == 10 })
	r.Pause()
	testkit.EventuallyTrue(t, 5*time.Second, "PAUSED reported", func() bool { return st.last(ID{"s", 0}) == StatePaused })
	produce(t, c, "in", "b", 10)
	testkit.Consistently(t, 300*time.Millisecond, "a paused task receives nothing", func() (bool, string) {
		n := s.distinct()
		return n == 10, fmt.Sprintf("%d records received", n)
	})
	r.Resume()
	testkit.EventuallyTrue(t, 10*time.Second, "records after resume", func() bool { return s.distinct() == 20 })
	if st.last(ID{"s", 0}) != StateRunning {
		t.Fatalf("state after resume %s", st.last(ID{"s", 0}))
	}
}

// Put batches respect MaxPollRecords and MaxBatchBytes.
func TestSinkBatchBounds(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	st := newStatuses()
	s := &batchSink{recordingSink: newRecordingSink()}
	cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: s,
		MaxPollRecords: 50, MaxBatchBytes: 200}
	newSink(t, cfg)
	produce(t, c, "in", "abcdefghij", 300) // ~14-16 bytes per record
	testkit.EventuallyTrue(t, 10*time.Second, "all put", func() bool { return s.distinct() == 300 })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.sizes {
		if n > 50 {
			t.Fatalf("batch of %d records > MaxPollRecords", n)
		}
	}
	for _, b := range s.bytes {
		if b > 200+20 { // one record may cross the bound
			t.Fatalf("batch of %d bytes > MaxBatchBytes", b)
		}
	}
}

type batchSink struct {
	*recordingSink
	sizes []int
	bytes []int
}

func (s *batchSink) Put(ctx context.Context, recs []*plugin.SinkRecord) error {
	n := 0
	for _, r := range recs {
		n += len(fmt.Sprint(r.Key)) + len(fmt.Sprint(r.Value))
	}
	s.mu.Lock()
	s.sizes = append(s.sizes, len(recs))
	s.bytes = append(s.bytes, n)
	s.mu.Unlock()
	return s.recordingSink.Put(ctx, recs)
}

// topics.regex subscribes to every matching topic; RequestCommit from the
// task commits without waiting for the flush interval.
func TestSinkTopicsRegexAndRequestCommit(t *testing.T) {
	c := cluster(t, map[string]int32{"orders.eu": 1, "orders.us": 2, "audit": 1})
	adm := admin(t, c)
	st := newStatuses()
	s := &committingSink{recordingSink: newRecordingSink()}
	cfg := SinkConfig{Common: common(c, st, ID{"rx", 0}, map[string]string{"topics.regex": `orders\..*`}), Task: s}
	r := newSink(t, cfg)
	produce(t, c, "orders.eu", "eu", 10)
	produce(t, c, "orders.us", "us", 20)
	produce(t, c, "audit", "audit", 5)
	testkit.EventuallyTrue(t, 10*time.Second, "both order topics read", func() bool { return s.distinct() == 30 })
	if n := len(r.Assignment()); n != 3 {
		t.Fatalf("assigned %v, want the 3 partitions of orders.*", r.Assignment())
	}
	testkit.EventuallyTrue(t, 10*time.Second, "commit on the task's request", func() bool {
		eu, us := committed(t, adm, connectnames.SinkGroup("rx"), "orders.eu"), committed(t, adm, connectnames.SinkGroup("rx"), "orders.us")
		return eu[0] == 10 && us[0]+us[1] == 20
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.puts {
		h, ok := rec.Headers.Last("src")
		if !ok || string(h.Value.([]byte)) != strings.SplitN(rec.Value.(string), "-", 2)[0] {
			t.Fatalf("record %v lacks its header: %v", rec.Value, rec.Headers)
		}
		if rec.Timestamp.UnixMilli() < 1_600_000_000_000 || rec.Timestamp.UnixMilli() >= 1_600_000_000_020 {
			t.Fatalf("record %v has timestamp %v, not the produced one", rec.Value, rec.Timestamp)
		}
		if rec.Key == nil {
			t.Fatalf("record %v lost its key", rec.Value)
		}
	}
	for v := range s.seen {
		if strings.HasPrefix(v, "audit") {
			t.Fatalf("read %s from a topic outside the regex", v)
		}
	}
}

// committingSink asks for a commit after every put.
type committingSink struct {
	*recordingSink
	tc plugin.SinkTaskContext
}

func (s *committingSink) Start(_ context.Context, tc plugin.SinkTaskContext, _ map[string]string) error {
	s.tc = tc
	return nil
}

func (s *committingSink) Put(ctx context.Context, recs []*plugin.SinkRecord) error {
	if err := s.recordingSink.Put(ctx, recs); err != nil {
		return err
	}
	s.tc.RequestCommit()
	return nil
}

// An error from Open (called in the rebalance callback) fails the task
// and commits nothing.
func TestSinkOpenErrorFails(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 2})
	adm := admin(t, c)
	produce(t, c, "in", "x", 10)
	st := newStatuses()
	s := &openFailSink{recordingSink: newRecordingSink()}
	r := newSink(t, SinkConfig{Common: common(c, st, ID{"o", 0}, map[string]string{"topics": "in"}), Task: s})
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("task with a failing Open did not finish")
	}
	if r.State() != StateFailed || !strings.Contains(st.trace(ID{"o", 0}), "table missing") {
		t.Fatalf("state %s trace %q", r.State(), st.trace(ID{"o", 0}))
	}
	if got := committed(t, adm, connectnames.SinkGroup("o"), "in"); len(got) != 0 {
		t.Fatalf("a failed task committed %v", got)
	}
	if !s.stopped {
		t.Fatal("plugin task not stopped")
	}
}

type openFailSink struct{ *recordingSink }

func (s *openFailSink) Open(context.Context, []plugin.TopicPartition) error {
	return errors.New("table missing")
}

// An offset the task asks for in Open (an exactly-once sink seeking to the
// offset it stored itself, ahead of the group's) takes effect before any
// record of the partition is delivered: no record below it is put, and no
// record twice, although the consumer had fetched from the group's offset.
func TestSinkOpenResetTakesEffectBeforeDelivery(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 2})
	produce(t, c, "in", "r", 400) // 200 a partition
	st := newStatuses()
	s := &seekingSink{recordingSink: newRecordingSink(), to: 150}
	r := newSink(t, SinkConfig{Common: common(c, st, ID{"seek", 0}, map[string]string{"topics": "in"}), Task: s})
	testkit.EventuallyTrue(t, 10*time.Second, "offsets 150-199 of both partitions put", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, rec := range s.puts {
			if rec.Offset >= 150 {
				n++
			}
		}
		return n >= 100
	})
	stop(t, r, 5*time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]int{}
	for _, rec := range s.puts {
		at := fmt.Sprintf("%d@%d", rec.Partition, rec.Offset)
		if rec.Offset < 150 {
			t.Fatalf("put %s, below the offset 150 the task asked for in Open", at)
		}
		if seen[at]++; seen[at] > 1 {
			t.Fatalf("put %s twice", at)
		}
	}
	if len(seen) != 100 {
		t.Fatalf("put %d distinct records, want 100", len(seen))
	}
}

// seekingSink asks in Open for every partition to start at offset to.
type seekingSink struct {
	*recordingSink
	tc plugin.SinkTaskContext
	to int64
}

func (s *seekingSink) Start(_ context.Context, tc plugin.SinkTaskContext, _ map[string]string) error {
	s.tc = tc
	return nil
}

func (s *seekingSink) Open(ctx context.Context, tps []plugin.TopicPartition) error {
	seek := map[plugin.TopicPartition]int64{}
	for _, tp := range tps {
		seek[tp] = s.to
	}
	s.tc.ResetOffsets(seek)
	return s.recordingSink.Open(ctx, tps)
}
