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
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// wireLog records the requests a kfake cluster handles.
type wireLog struct {
	mu         sync.Mutex
	produce    []*kmsg.ProduceRequest
	produceAt  []time.Time
	fetch      []*kmsg.FetchRequest
	join       []*kmsg.JoinGroupRequest
	heartbeats []time.Time
}

func watchWire(c *kfake.Cluster) *wireLog {
	w := &wireLog{}
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		w.mu.Lock()
		defer w.mu.Unlock()
		switch r := req.(type) {
		case *kmsg.ProduceRequest:
			w.produce = append(w.produce, r)
			w.produceAt = append(w.produceAt, time.Now())
		case *kmsg.FetchRequest:
			w.fetch = append(w.fetch, r)
		case *kmsg.JoinGroupRequest:
			w.join = append(w.join, r)
		case *kmsg.HeartbeatRequest:
			w.heartbeats = append(w.heartbeats, time.Now())
		}
		return nil, nil, false
	})
	return w
}

// batches returns the record batches of every produce request seen.
func (w *wireLog) batches(t *testing.T) []kmsg.RecordBatch {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []kmsg.RecordBatch
	for _, p := range w.produce {
		for _, tp := range p.Topics {
			for _, pp := range tp.Partitions {
				for b := pp.Records; len(b) > 0; {
					var rb kmsg.RecordBatch
					if err := rb.ReadFrom(b); err != nil {
						t.Fatalf("reading a produced record batch: %v", err)
					}
					out = append(out, rb)
					b = b[12+rb.Length:]
				}
			}
		}
	}
	return out
}

// overrideCase is one client override and what shows that it reached the
// client: the value the franz-go client holds for opt (Client.OptValue),
// and, where the broker can see it, what it saw on the wire.
type overrideCase struct {
	key, value string
	extra      map[string]string // other connector keys the case needs
	opt        any               // a kgo option function; nil when only the wire can show it
	want       any
	wire       func(t *testing.T, w *wireLog, r *overrideRun)
}

// overrideRun is the runner a case started and when.
type overrideRun struct {
	client  *kgo.Client
	cluster *kfake.Cluster
	src     *counterSource
	sink    *recordingSink
	polled  time.Time // the source's first poll with records
}

// producerCases run a source task; its producer carries the settings.
func producerCases() []overrideCase {
	return []overrideCase{
		{key: "producer.override.compression.type", value: "gzip", opt: kgo.ProducerBatchCompression, want: []kgo.CompressionCodec{kgo.GzipCompression()},
			wire: codecIs(1)},
		{key: "producer.override.compression.type", value: "zstd", opt: kgo.ProducerBatchCompression, want: []kgo.CompressionCodec{kgo.ZstdCompression()},
			wire: codecIs(4)},
		{key: "producer.override.linger.ms", value: "900", opt: kgo.ProducerLinger, want: 900 * time.Millisecond,
			wire: func(t *testing.T, w *wireLog, r *overrideRun) {
				// The one poll's records wait for the linger before they
				// are sent (without it they go at once).
				w.mu.Lock()
				defer w.mu.Unlock()
				if len(w.produce) == 0 {
					t.Fatal("no produce request seen")
				}
				if d := w.produceAt[0].Sub(r.polled); d < 800*time.Millisecond {
					t.Fatalf("the first produce request went %v after the poll, want at least the linger (900ms)", d)
				}
			}},
		{key: "producer.override.batch.size", value: "1024", extra: map[string]string{"producer.override.compression.type": "none", "producer.override.linger.ms": "200"},
			opt: kgo.ProducerBatchMaxBytes, want: int32(1024), wire: batchesAtMost(1024)},
		{key: "producer.override.max.request.size", value: "2048", extra: map[string]string{"producer.override.compression.type": "none", "producer.override.linger.ms": "200"},
			opt: kgo.BrokerMaxWriteBytes, want: int32(2048), wire: batchesAtMost(2048)},
		{key: "producer.override.acks", value: "1", opt: kgo.RequiredAcks, want: kgo.LeaderAck(), wire: acksAndProducerID(1, false)},
		{key: "producer.override.acks", value: "0", opt: kgo.RequiredAcks, want: kgo.NoAck(), wire: acksAndProducerID(0, false)},
		{key: "producer.override.acks", value: "all", opt: kgo.RequiredAcks, want: kgo.AllISRAcks(), wire: acksAndProducerID(-1, true)},
		{key: "producer.override.enable.idempotence", value: "false", opt: kgo.DisableIdempotentWrite, want: true, wire: acksAndProducerID(-1, false)},
		{key: "producer.override.retries", value: "7", opt: kgo.RecordRetries, want: int64(7)},
		// KIP-714 pushes are off unless asked for (kfake's subscription requests: clientconfig's TestClientMetricsPushOnlyWhenAskedFor).
		{key: "producer.override.enable.metrics.push", value: "true", opt: kgo.DisableClientMetrics, want: false},
		{key: "producer.override.max.in.flight.requests.per.connection", value: "3", extra: map[string]string{"producer.override.enable.idempotence": "false"},
			opt: kgo.MaxProduceRequestsInflightPerBroker, want: 3},
		{key: "producer.override.client.id", value: "orders-producer", opt: kgo.ClientID, want: "orders-producer"},
		{key: "producer.override.request.timeout.ms", value: "4321", opt: kgo.RequestTimeoutOverhead, want: 4321 * time.Millisecond},
	}
}

// consumerCases run a sink task on 20 records; its consumer carries them.
func consumerCases() []overrideCase {
	return []overrideCase{
		{key: "consumer.override.max.poll.records", value: "3", wire: func(t *testing.T, w *wireLog, r *overrideRun) {
			r.sink.mu.Lock()
			defer r.sink.mu.Unlock()
			if got := r.sink.putSizes; len(got) == 0 || slices.Max(got) != 3 {
				t.Fatalf("Put sizes %v, want at most 3 and some of 3", got)
			}
		}},
		{key: "consumer.override.auto.offset.reset", value: "latest", opt: kgo.ConsumeResetOffset, want: kgo.NewOffset().AtEnd()},
		{key: "consumer.override.auto.offset.reset", value: "earliest", opt: kgo.ConsumeResetOffset, want: kgo.NewOffset().AtStart()},
		{key: "consumer.override.enable.metrics.push", value: "true", opt: kgo.DisableClientMetrics, want: false},
		{key: "consumer.override.fetch.min.bytes", value: "3", opt: kgo.FetchMinBytes, want: int32(3),
			wire: fetchField("MinBytes", func(f *kmsg.FetchRequest) int64 { return int64(f.MinBytes) }, 3)},
		{key: "consumer.override.fetch.max.bytes", value: "70000", opt: kgo.FetchMaxBytes, want: int32(70000),
			wire: fetchField("MaxBytes", func(f *kmsg.FetchRequest) int64 { return int64(f.MaxBytes) }, 70000)},
		{key: "consumer.override.fetch.max.wait.ms", value: "321", opt: kgo.FetchMaxWait, want: 321 * time.Millisecond,
			wire: fetchField("MaxWaitMillis", func(f *kmsg.FetchRequest) int64 { return int64(f.MaxWaitMillis) }, 321)},
		{key: "consumer.override.max.partition.fetch.bytes", value: "4096", opt: kgo.FetchMaxPartitionBytes, want: int32(4096),
			wire: fetchField("PartitionMaxBytes", func(f *kmsg.FetchRequest) int64 {
				if len(f.Topics) == 0 || len(f.Topics[0].Partitions) == 0 {
					return -1
				}
				return int64(f.Topics[0].Partitions[0].PartitionMaxBytes)
			}, 4096)},
		{key: "consumer.override.isolation.level", value: "read_committed", opt: kgo.FetchIsolationLevel, want: int8(1),
			wire: fetchField("IsolationLevel", func(f *kmsg.FetchRequest) int64 { return int64(f.IsolationLevel) }, 1)},
		{key: "consumer.override.session.timeout.ms", value: "12000", opt: kgo.SessionTimeout, want: 12 * time.Second,
			wire: joinField("SessionTimeoutMillis", func(j *kmsg.JoinGroupRequest) int64 { return int64(j.SessionTimeoutMillis) }, 12000)},
		{key: "consumer.override.max.poll.interval.ms", value: "23000", opt: kgo.RebalanceTimeout, want: 23 * time.Second,
			wire: joinField("RebalanceTimeoutMillis", func(j *kmsg.JoinGroupRequest) int64 { return int64(j.RebalanceTimeoutMillis) }, 23000)},
		{key: "consumer.override.rebalance.timeout.ms", value: "24000", opt: kgo.RebalanceTimeout, want: 24 * time.Second,
			wire: joinField("RebalanceTimeoutMillis", func(j *kmsg.JoinGroupRequest) int64 { return int64(j.RebalanceTimeoutMillis) }, 24000)},
		{key: "consumer.override.heartbeat.interval.ms", value: "1000", opt: kgo.HeartbeatInterval, want: time.Second,
			wire: func(t *testing.T, w *wireLog, r *overrideRun) {
				// The tests' worker options heartbeat every 100 ms; the
				// override's 1 s leaves a few heartbeats in 2.5 s.
				time.Sleep(2500 * time.Millisecond) // counting heartbeats over a fixed window is the observation
				w.mu.Lock()
				defer w.mu.Unlock()
				n := 0
				for _, at := range w.heartbeats {
					if at.After(time.Now().Add(-2500 * time.Millisecond)) {
						n++
					}
				}
				if n > 5 {
					t.Fatalf("%d heartbeats in 2.5 s, want at most 5 at heartbeat.interval.ms=1000", n)
				}
			}},
		{key: "consumer.override.client.id", value: "orders-sink", opt: kgo.ClientID, want: "orders-sink",
			wire: func(t *testing.T, w *wireLog, r *overrideRun) {
				// The group coordinator knows the member by its client id.
				groups, err := admin(t, r.cluster).DescribeGroups(context.Background(), connectnames.SinkGroup("snk"))
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, m := range groups[connectnames.SinkGroup("snk")].Members {
					ids = append(ids, m.ClientID)
				}
				if !slices.Equal(ids, []string{"orders-sink"}) {
					t.Fatalf("group members' client ids %v, want [orders-sink]", ids)
				}
			}},
		{key: "consumer.override.request.timeout.ms", value: "4321", opt: kgo.RequestTimeoutOverhead, want: 4321 * time.Millisecond},
	}
}

// adminCases build the admin client a sink's dead letter queue uses.
func adminCases() []overrideCase {
	return []overrideCase{
		{key: "admin.override.client.id", value: "orders-admin", opt: kgo.ClientID, want: "orders-admin"},
		// KIP-714 pushes are off unless asked for (kfake's subscription requests: clientconfig's TestClientMetricsPushOnlyWhenAskedFor).
		{key: "admin.override.enable.metrics.push", value: "true", opt: kgo.DisableClientMetrics, want: false},
		{key: "admin.override.request.timeout.ms", value: "4321", opt: kgo.RequestTimeoutOverhead, want: 4321 * time.Millisecond},
	}
}

func codecIs(codec int8) func(t *testing.T, w *wireLog, r *overrideRun) {
	return func(t *testing.T, w *wireLog, r *overrideRun) {
		bs := w.batches(t)
		if len(bs) == 0 {
			t.Fatal("no record batch produced")
		}
		for _, b := range bs {
			if got := int8(b.Attributes & 0x07); got != codec {
				t.Fatalf("a produced batch has codec %d, want %d", got, codec)
			}
		}
	}
}

func batchesAtMost(n int32) func(t *testing.T, w *wireLog, r *overrideRun) {
	return func(t *testing.T, w *wireLog, r *overrideRun) {
		bs := w.batches(t)
		for _, b := range bs {
			if 12+b.Length > n {
				t.Fatalf("a produced batch holds %d bytes, want at most %d", 12+b.Length, n)
			}
		}
		if len(bs) < 3 {
			t.Fatalf("%d batches for 300 records, want them split into several of at most %d bytes", len(bs), n)
		}
	}
}

func acksAndProducerID(acks int16, idempotent bool) func(t *testing.T, w *wireLog, r *overrideRun) {
	return func(t *testing.T, w *wireLog, r *overrideRun) {
		w.mu.Lock()
		for _, p := range w.produce {
			if p.Acks != acks {
				w.mu.Unlock()
				t.Fatalf("produce request with acks %d, want %d", p.Acks, acks)
			}
		}
		w.mu.Unlock()
		for _, b := range w.batches(t) {
			if got := b.ProducerID >= 0; got != idempotent {
				t.Fatalf("batch with producer id %d: idempotent %v, want %v", b.ProducerID, got, idempotent)
			}
		}
	}
}

func fetchField(name string, get func(*kmsg.FetchRequest) int64, want int64) func(t *testing.T, w *wireLog, r *overrideRun) {
	return func(t *testing.T, w *wireLog, r *overrideRun) {
		w.mu.Lock()
		defer w.mu.Unlock()
		seen := 0
		for _, f := range w.fetch {
			if len(f.Topics) == 0 {
				continue
			}
			seen++
			if got := get(f); got != want {
				t.Fatalf("fetch request with %s %d, want %d", name, got, want)
			}
		}
		if seen == 0 {
			t.Fatal("no fetch request seen")
		}
	}
}

func joinField(name string, get func(*kmsg.JoinGroupRequest) int64, want int64) func(t *testing.T, w *wireLog, r *overrideRun) {
	return func(t *testing.T, w *wireLog, r *overrideRun) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.join) == 0 {
			t.Fatal("no JoinGroup request seen")
		}
		for _, j := range w.join {
			if got := get(j); got != want {
				t.Fatalf("JoinGroup with %s %d, want %d", name, got, want)
			}
		}
	}
}

// Every client override of the table reaches the franz-go client the
// runner builds for it (the client holds the option's value), and, where
// the broker can see it, the broker sees it: the codec of produced batches,
// their size, acks and producer ids, fetch and JoinGroup fields, the
// heartbeat rate, the records per Put, the reset of a new group. Every
// (property, client) pair of the table has a case here or in
// TestClientOverrideIdentity.
func TestEveryClientOverrideReachesItsClient(t *testing.T) {
	covered := map[string]bool{}
	for _, kind := range clientconfig.Kinds {
		for _, name := range clientconfig.Names(kind) {
			if p, _ := clientconfig.Lookup(name); p.Principal {
				covered[kind.OverridePrefix()+name] = false // TestClientOverrideIdentity
			}
		}
	}
	for _, tc := range producerCases() {
		covered[tc.key] = true
		t.Run(tc.key+"="+tc.value, func(t *testing.T) { runProducerCase(t, tc) })
	}
	for _, tc := range consumerCases() {
		covered[tc.key] = true
		t.Run(tc.key+"="+tc.value, func(t *testing.T) { runConsumerCase(t, tc) })
	}
	for _, tc := range adminCases() {
		covered[tc.key] = true
		t.Run(tc.key+"="+tc.value, func(t *testing.T) { runAdminCase(t, tc) })
	}
	for _, kind := range clientconfig.Kinds {
		for _, name := range clientconfig.Names(kind) {
			if _, ok := covered[kind.OverridePrefix()+name]; !ok {
				t.Errorf("%s%s has no case", kind.OverridePrefix(), name)
			}
		}
	}
}

func checkOpt(t *testing.T, cl *kgo.Client, tc overrideCase) {
	t.Helper()
	if tc.opt == nil {
		return
	}
	if got := cl.OptValue(tc.opt); !reflect.DeepEqual(got, tc.want) {
		t.Fatalf("the client holds %#v (%T), want %#v", got, got, tc.want)
	}
}

func overrideConfig(tc overrideCase, base map[string]string) map[string]string {
	cfg := map[string]string{tc.key: tc.value}
	for k, v := range tc.extra {
		cfg[k] = v
	}
	for k, v := range base {
		cfg[k] = v
	}
	return cfg
}

func runProducerCase(t *testing.T, tc overrideCase) {
	c := cluster(t, map[string]int32{"out": 1})
	w := watchWire(c)
	run := &overrideRun{src: &counterSource{topic: "out", limit: 300, batch: 300}}
	var once sync.Once
	run.src.onPoll = func() { once.Do(func() { run.polled = time.Now() }) }
	s := spec(c, ID{"src", 0})
	s.Plugin = plugin.Plugin{Class: "test.Source", Kind: plugin.KindSource, NewSourceTask: func() plugin.SourceTask { return run.src }}
	s.Connector = overrideConfig(tc, nil)
	s.Offsets = newMemOffsets()
	r, err := New(s)
	sr := tasktest.Start(t, r, err).(*SourceRunner)
	testkit.EventuallyTrue(t, 15*time.Second, "every record acknowledged", func() bool { return run.src.committedCount() >= 300 })
	run.client, run.cluster = sr.Client(), c
	checkOpt(t, run.client, tc)
	if tc.wire != nil {
		tc.wire(t, w, run)
	}
}

func runConsumerCase(t *testing.T, tc overrideCase) {
	c := cluster(t, map[string]int32{"in": 1})
	produce(t, c, "in", "old", 20)
	w := watchWire(c)
	run := &overrideRun{sink: newRecordingSink()}
	s := spec(c, ID{"snk", 0})
	s.Plugin = plugin.Plugin{Class: "test.Sink", Kind: plugin.KindSink, NewSinkTask: func() plugin.SinkTask { return run.sink }}
	s.Connector = overrideConfig(tc, map[string]string{"topics": "in"})
	s.WorkerConverters = map[string]string{"key.converter": converter.StringClass, "value.converter": converter.StringClass}
	r, err := New(s)
	sr := tasktest.Start(t, r, err).(*SinkRunner)
	want := 20
	if tc.value == "latest" {
		// A new group reading from the end gets only what comes after it
		// found the end: wait for its first fetch, then write more.
		testkit.EventuallyTrue(t, 15*time.Second, "the consumer fetching", func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return slices.ContainsFunc(w.fetch, func(f *kmsg.FetchRequest) bool { return len(f.Topics) > 0 })
		})
		produce(t, c, "in", "new", 5)
		want = 5
	}
	testkit.EventuallyTrue(t, 15*time.Second, fmt.Sprintf("%d records put", want), func() bool { return run.sink.total() >= want })
	if got := run.sink.total(); got != want {
		t.Fatalf("%d records put, want %d", got, want)
	}
	run.client, run.cluster = sr.Client(), c
	checkOpt(t, run.client, tc)
	if tc.wire != nil {
		tc.wire(t, w, run)
	}
}

func runAdminCase(t *testing.T, tc overrideCase) {
	c := cluster(t, map[string]int32{"in": 1})
	s := spec(c, ID{"snk", 0})
	s.Plugin = plugin.Plugin{Class: "test.Sink", Kind: plugin.KindSink, NewSinkTask: func() plugin.SinkTask { return newRecordingSink() }}
	s.Connector = overrideConfig(tc, map[string]string{"topics": "in"})
	r, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	// The admin client the dead letter queue opens with.
	sr := r.(*SinkRunner)
	cl, err := kgo.NewClient(sr.cfg.clientOpts(clientconfig.Admin, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	checkOpt(t, cl, tc)
}
