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
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

func rec(part string, pos int) *plugin.SourceRecord {
	return &plugin.SourceRecord{SourcePartition: map[string]any{"p": part}, SourceOffset: map[string]any{"pos": pos}}
}

// Out-of-order acknowledgements advance a source partition's committable
// offset only over a gap-free prefix; partitions are independent.
func TestSubmittedCommittableOffsets(t *testing.T) {
	s := newSubmitted()
	a0 := s.submit(`a`, rec("a", 0))
	a1 := s.submit(`a`, rec("a", 1))
	b0 := s.submit(`b`, rec("b", 0))
	a2 := s.submit(`a`, rec("a", 2))

	s.ack(a1, nil)
	s.ack(a2, nil)
	s.ack(b0, nil)
	got := s.committableOffsets()
	if _, ok := got["a"]; ok {
		t.Fatalf("a committable although a0 is not acknowledged: %v", got)
	}
	if got["b"].Offset["pos"] != 0 {
		t.Fatalf("b: %v", got["b"])
	}
	if n := s.inFlight(); n != 3 {
		t.Fatalf("in flight %d, want 3 (a0..a2 pending; 3 acks not handed over)", n)
	}
	s.ack(a0, nil)
	got = s.committableOffsets()
	if got["a"].Offset["pos"] != 2 || len(got) != 1 {
		t.Fatalf("after a0: %v, want only a@2", got)
	}
	if acked := s.drainAcked(nil); len(acked) != 4 || acked[0].record.SourceOffset["pos"] != 1 {
		t.Fatalf("acked records in ack order: %v", acked)
	}
	if n := s.inFlight(); n != 0 {
		t.Fatalf("in flight %d, want 0", n)
	}
	if got := s.committableOffsets(); len(got) != 0 {
		t.Fatalf("nothing new, got %v", got)
	}

	// A failed write is restored unless something newer arrived.
	a3 := s.submit(`a`, rec("a", 3))
	s.ack(a3, nil)
	failed := s.committableOffsets()
	s.restore(failed)
	if again := s.committableOffsets(); again["a"].Offset["pos"] != 3 {
		t.Fatalf("restored offset lost: %v", again)
	}
	a4 := s.submit(`a`, rec("a", 4))
	failed = s.committableOffsets() // empty
	s.ack(a4, nil)
	old := map[string]SourceOffset{"a": {Partition: map[string]any{"p": "a"}, Offset: map[string]any{"pos": 3}}}
	s.restore(old)
	if again := s.committableOffsets(); again["a"].Offset["pos"] != 4 {
		t.Fatalf("restore overwrote a newer offset: %v (%v)", again, failed)
	}
}

// Records with an explicit partition go there; the others are hashed by key.
func TestExplicitPartitioner(t *testing.T) {
	tp := newSourcePartitioner().ForTopic("t")
	if p := tp.Partition(&kgo.Record{Partition: 5}, 8); p != 5 {
		t.Fatalf("explicit partition 5 → %d", p)
	}
	if !tp.RequiresConsistency(&kgo.Record{Partition: 5}) {
		t.Fatal("explicit partition must require consistency")
	}
	k := &kgo.Record{Partition: -1, Key: []byte("user-42")}
	p1, p2 := tp.Partition(k, 8), tp.Partition(&kgo.Record{Partition: -1, Key: []byte("user-42")}, 8)
	if p1 != p2 || p1 < 0 || p1 >= 8 {
		t.Fatalf("keyed records must hash consistently: %d %d", p1, p2)
	}
}

// metricValue returns the value of a counter or gauge with the given labels
// in reg, or -1 when absent.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return value(m)
		}
	}
	return -1
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// Equal partitions get equal keys, different ones different keys.
func TestPartitionKey(t *testing.T) {
	k := func(m map[string]any) string {
		s, err := partitionKey(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if k(map[string]any{"a": "x", "b": 1}) != k(map[string]any{"b": 1, "a": "x"}) {
		t.Fatal("key order must not matter")
	}
	distinct := []map[string]any{
		{"a": "x"}, {"a": "y"}, {"a": 1}, {"a": "1"}, {"b": "x"}, {"a": "x", "b": "y"},
		{"a": `x","b":"y`}, {"a": 1.5}, {"a": []any{"x"}}, {"a": true}, {},
	}
	seen := map[string]int{}
	for i, m := range distinct {
		key := k(m)
		if j, ok := seen[key]; ok {
			t.Fatalf("partitions %v and %v share key %q", distinct[j], m, key)
		}
		seen[key] = i
	}
}

// A batch submitted under one lock keeps submission order per source
// partition; with skipAcked the acknowledged records are not kept for
// CommitRecord, while committable offsets advance exactly as before.
func TestSubmittedBatchSkipAcked(t *testing.T) {
	s := newSubmitted()
	s.skipAcked = true
	subs := s.submitBatch([]pendingRecord{
		{key: "a", rec: rec("a", 0)}, {key: "a", rec: rec("a", 1)}, {key: "b", rec: rec("b", 0)}, {key: "a", rec: rec("a", 2)},
	})
	if n := s.inFlight(); n != 4 {
		t.Fatalf("in flight %d, want 4", n)
	}
	s.ack(subs[1], &kgo.Record{Topic: "t"})
	s.ack(subs[2], &kgo.Record{Topic: "t"})
	got := s.committableOffsets()
	if _, ok := got["a"]; ok || got["b"].Offset["pos"] != 0 {
		t.Fatalf("after a1, b0: %v, want only b@0", got)
	}
	s.ack(subs[0], &kgo.Record{Topic: "t"})
	got = s.committableOffsets()
	if got["a"].Offset["pos"] != 1 || len(got) != 1 {
		t.Fatalf("after a0: %v, want only a@1", got)
	}
	s.ack(subs[3], &kgo.Record{Topic: "t"})
	if got = s.committableOffsets(); got["a"].Offset["pos"] != 2 {
		t.Fatalf("after a2: %v, want a@2", got)
	}
	if n := s.inFlight(); n != 0 {
		t.Fatalf("in flight %d, want 0", n)
	}
	if acked := s.drainAcked(nil); len(acked) != 0 {
		t.Fatalf("kept %d acknowledged records although CommitRecord is skipped", len(acked))
	}
}

type skipTask struct {
	plugin.SourceTask
	skip bool
}

func (s skipTask) SkipRecordCommits() bool { return s.skip }

func TestSkipsRecordCommits(t *testing.T) {
	if plugin.SkipsRecordCommits(rangeLikeTask{}) {
		t.Fatal("a task embedding NopCommitter must not skip CommitRecord implicitly")
	}
	if plugin.SkipsRecordCommits(skipTask{skip: false}) || !plugin.SkipsRecordCommits(skipTask{skip: true}) {
		t.Fatal("SkipsRecordCommits does not follow SkipRecordCommits")
	}
}

// rangeLikeTask embeds NopCommitter, like most bundled sources.
type rangeLikeTask struct{ plugin.NopCommitter }

func (rangeLikeTask) Start(context.Context, plugin.SourceTaskContext, map[string]string) error {
	return nil
}
func (rangeLikeTask) Poll(context.Context) ([]*plugin.SourceRecord, error) { return nil, nil }
func (rangeLikeTask) Stop() error                                          { return nil }

// A long run through one source partition, acknowledged out of order
// within a window of records in flight (as Kafka partitions acknowledge),
// keeps the committable offset at the gap-free prefix, compared with a
// model, while the queue's popped head is reused.
func TestSubmittedQueueOutOfOrderModel(t *testing.T) {
	s := newSubmitted()
	s.skipAcked = true
	const total, window = 20000, 300
	var subs []*submittedRecord
	acked := make([]bool, total)
	prefix := -1 // the model: the last position acknowledged with all before it
	next := 0    // next position to acknowledge, in a shuffled order per window
	for pos := 0; pos < total; pos++ {
		subs = append(subs, s.submit("a", rec("a", pos)))
		if pos-next+1 < window && pos < total-1 {
			continue
		}
		// Acknowledge the oldest half of the window, odd positions first.
		end := min(next+window/2, pos+1)
		for _, odd := range []int{1, 0} {
			for i := next; i < end; i++ {
				if i%2 == odd {
					s.ack(subs[i], nil)
					acked[i] = true
				}
			}
		}
		next = end
		for prefix+1 < total && acked[prefix+1] {
			prefix++
		}
		got := s.committableOffsets()
		if o, ok := got["a"]; !ok || o.Offset["pos"] != prefix {
			t.Fatalf("after acknowledging up to %d: committable %v, want pos %d", next-1, got, prefix)
		}
	}
	for i := next; i < total; i++ {
		s.ack(subs[i], nil)
	}
	if got := s.committableOffsets(); got["a"].Offset["pos"] != total-1 {
		t.Fatalf("at the end: committable %v, want pos %d", got, total-1)
	}
	if n := s.inFlight(); n != 0 {
		t.Fatalf("in flight %d, want 0", n)
	}
}

// In a steady state (a window of records in flight, the oldest half
// acknowledged while the next half is submitted, as the source runner
// does with its reused batch buffers) the tracker allocates nothing: the
// queue's popped head is reused, not left behind while append copies the
// queue into a new array every few hundred records.
func TestSubmittedQueueSteadyStateAllocatesNothing(t *testing.T) {
	s := newSubmitted()
	s.skipAcked = true
	const half = 256
	rcs := make([]recordContext, 2*half)
	pend := make([]pendingRecord, half)
	for i := range pend {
		pend[i] = pendingRecord{key: "a", rec: rec("a", i)}
	}
	cur := 0
	s.submitInto(rcs[:half], pend, nil)
	cycle := func() {
		next := 1 - cur
		s.submitInto(rcs[next*half:(next+1)*half], pend, nil)
		old := rcs[cur*half : (cur+1)*half]
		for i := len(old) - 1; i >= 0; i-- { // the head last: out of order
			s.ack(&old[i].sub, nil)
		}
		cur = next
	}
	cycle() // the queue's array reaches its size
	if n := testing.AllocsPerRun(5, func() {
		for range 100 {
			cycle()
		}
	}); n != 0 {
		t.Fatalf("%v allocations per 100 windows of %d records, want 0", n, half)
	}
	if c := cap(s.parts["a"].queue); c > 4*half {
		t.Fatalf("the queue's array grew to %d entries for %d in flight", c, 2*half)
	}
	if n := s.inFlight(); n != half {
		t.Fatalf("in flight %d, want %d", n, half)
	}
}
