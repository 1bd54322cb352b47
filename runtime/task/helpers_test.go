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
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// cluster starts an in-process Kafka with the given topics (name → partitions).
func cluster(t testing.TB, topics map[string]int32) *kfake.Cluster {
	t.Helper()
	var opts []kfake.Opt
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, _ := kafkatest.Cluster(t, opts...)
	return c
}

// kafkaOpts are the worker-level client options used in tests: fast
// heartbeats so rebalances take milliseconds instead of seconds.
func kafkaOpts(c *kfake.Cluster) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.HeartbeatInterval(100 * time.Millisecond)}
}

func admin(t testing.TB, c *kfake.Cluster) *kadm.Client {
	t.Helper()
	return kafkatest.Admin(t, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)})
}

// produce writes n records "prefix-i" with key i to topic, round-robin
// over partitions, and waits for the acks.
func produce(t *testing.T, c *kfake.Cluster, topic, prefix string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i)),
			Headers: []kgo.RecordHeader{{Key: "src", Value: []byte(prefix)}}, Timestamp: time.UnixMilli(1_600_000_000_000 + int64(i))}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

// readAll consumes a topic from the start until it has want records or the
// deadline passes.
func readAll(t *testing.T, c *kfake.Cluster, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(out) < want {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s before the deadline", len(out), want, topic)
		}
		out = append(out, f.Records()...)
	}
	return out
}

// committed returns the group's committed offsets per partition of topic.
func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatalf("fetching offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// statuses records reported task states.
type statuses struct {
	mu     sync.Mutex
	states map[ID][]State
	traces map[ID]string
}

func newStatuses() *statuses {
	return &statuses{states: map[ID][]State{}, traces: map[ID]string{}}
}

func (s *statuses) TaskState(id ID, state State, trace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states[id] = append(s.states[id], state)
	if trace != "" {
		s.traces[id] = trace
	}
}

func (s *statuses) last(id ID) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.states[id]
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

func (s *statuses) trace(id ID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.traces[id]
}

func common(c *kfake.Cluster, st StatusReporter, id ID, config map[string]string) Common {
	return Common{
		ID:                  id,
		Config:              config,
		KeyConverter:        converter.StringConverter{},
		ValueConverter:      converter.StringConverter{},
		Kafka:               kafkaOpts(c),
		Status:              st,
		OffsetFlushInterval: time.Hour, // tests commit on demand unless they set it
		RetryBackoff:        20 * time.Millisecond,
	}
}

// recordingSink is a plugin.SinkTask that records what the runner does.
type recordingSink struct {
	mu         sync.Mutex
	puts       []*plugin.SinkRecord
	putSizes   []int          // records of each Put
	seen       map[string]int // value → times put
	events     []string       // "open t-0", "flush t-0=12", "close t-0"
	flushErr   error
	flushes    int
	blockFlush chan struct{} // when set, Flush waits on it
	panicPut   bool
	stopped    bool
}

func newRecordingSink() *recordingSink { return &recordingSink{seen: map[string]int{}} }

func (s *recordingSink) Start(context.Context, plugin.SinkTaskContext, map[string]string) error {
	return nil
}

func (s *recordingSink) Open(_ context.Context, tps []plugin.TopicPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		s.events = append(s.events, "open "+tp.String())
	}
	return nil
}

func (s *recordingSink) Put(_ context.Context, recs []*plugin.SinkRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panicPut {
		panic("sink exploded")
	}
	s.putSizes = append(s.putSizes, len(recs))
	for _, r := range recs {
		s.puts = append(s.puts, r)
		s.seen[fmt.Sprint(r.Value)]++
	}
	return nil
}

func (s *recordingSink) Flush(ctx context.Context, offsets map[plugin.TopicPartition]int64) error {
	s.mu.Lock()
	block := s.blockFlush
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushes++
	for tp, o := range offsets {
		s.events = append(s.events, fmt.Sprintf("flush %s=%d", tp, o))
	}
	return s.flushErr
}

func (s *recordingSink) Close(_ context.Context, tps []plugin.TopicPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		s.events = append(s.events, "close "+tp.String())
	}
	return nil
}

func (s *recordingSink) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	return nil
}

func (s *recordingSink) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *recordingSink) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.puts)
}

func (s *recordingSink) eventList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

// memOffsets is an in-memory OffsetStore; check, when set, runs on every
// written offset before it is stored.
type memOffsets struct {
	mu     sync.Mutex
	m      map[string]map[string]any
	writes [][]SourceOffset
	check  func(SourceOffset) error
	fail   error
}

func newMemOffsets() *memOffsets { return &memOffsets{m: map[string]map[string]any{}} }

func offKey(connector string, p map[string]any) string {
	b, _ := json.Marshal(p)
	return connector + "/" + string(b)
}

func (s *memOffsets) Read(_ context.Context, connector string, parts []map[string]any) ([]map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(parts))
	for i, p := range parts {
		out[i] = s.m[offKey(connector, p)]
	}
	return out, nil
}

func (s *memOffsets) Write(_ context.Context, connector string, offs []SourceOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, o := range offs {
		if s.check != nil {
			if err := s.check(o); err != nil {
				return err
			}
		}
		// Round-trip through JSON like the offsets topic does (numbers
		// come back as float64).
		b, err := json.Marshal(o.Offset)
		if err != nil {
			return err
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			return err
		}
		s.m[offKey(connector, o.Partition)] = back
	}
	s.writes = append(s.writes, offs)
	return nil
}

// counterSource emits records "v-i" for i from its stored offset (+1) up to
// limit on topic, batch records per poll, one source partition.
type counterSource struct {
	topic     string
	limit     int
	batch     int
	next      int
	panicAt   int // poll panics when next reaches it (0: never)
	mu        sync.Mutex
	committed []int // pos of records passed to CommitRecord
	commits   int

	onPoll      func() // called at each poll, in the runner's goroutine
	maxInFlight int
}

func (s *counterSource) Start(ctx context.Context, tc plugin.SourceTaskContext, _ map[string]string) error {
	off, err := tc.OffsetReader().Offset(ctx, map[string]any{"source": "counter"})
	if err != nil {
		return err
	}
	if off != nil {
		s.next = int(off["pos"].(float64)) + 1
	}
	return nil
}

func (s *counterSource) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	if s.onPoll != nil {
		s.onPoll()
	}
	if s.panicAt > 0 && s.next >= s.panicAt {
		var m map[string]int
		m["boom"] = 1 // a nil map write: a real runtime panic
	}
	if s.next >= s.limit {
		select { // idle like a real source: block a little
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return nil, nil
	}
	var out []*plugin.SourceRecord
	for ; s.next < s.limit && len(out) < s.batch; s.next++ {
		out = append(out, &plugin.SourceRecord{
			SourcePartition: map[string]any{"source": "counter"},
			SourceOffset:    map[string]any{"pos": s.next},
			Topic:           s.topic,
			Key:             strconv.Itoa(s.next),
			Value:           fmt.Sprintf("v-%d", s.next),
			Headers:         data.Headers{{Key: "h", Value: []byte("x")}},
			Timestamp:       time.UnixMilli(1_700_000_000_000 + int64(s.next)),
		})
	}
	return out, nil
}

func (s *counterSource) CommitRecord(r *plugin.SourceRecord, md *plugin.RecordMetadata) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed = append(s.committed, r.SourceOffset["pos"].(int))
	return nil
}

func (s *counterSource) Commit(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits++
	return nil
}

func (s *counterSource) Stop() error { return nil }

func (s *counterSource) committedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.committed)
}

func values(recs []*kgo.Record) map[string]int {
	m := map[string]int{}
	for _, r := range recs {
		m[string(r.Value)]++
	}
	return m
}

func stop(t *testing.T, r interface{ Stop(context.Context) error }, d time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	if err := r.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	return time.Since(start)
}

var _ = errors.New
var _ = strings.Contains
