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
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/file"
	"github.com/conveyor-dev/conveyor/runtime/connectors/rangesource"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/metrics"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// nopSink counts records and does nothing else.
type nopSink struct {
	recordingSink
	n chan int
}

func (s *nopSink) Put(_ context.Context, recs []*plugin.SinkRecord) error {
	s.n <- len(recs)
	return nil
}

// fillTopic writes n records of 200 bytes round-robin to topic.
func fillTopic(b *testing.B, addrs []string, topic string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	val := make([]byte, 200)
	for i := 0; i < n; i++ {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: val}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSinkRunner drains b.N records of 200 bytes from 4 partitions
// through a sink runner into a no-op task (string converters).
func BenchmarkSinkRunner(b *testing.B) {
	c := cluster(b, map[string]int32{"in": 4})
	fillTopic(b, c.ListenAddrs(), "in", b.N)
	s := &nopSink{n: make(chan int, 1024)}
	cm := common(c, newStatuses(), ID{"bench", 0}, nil)
	r, err := NewSinkRunner(SinkConfig{Common: cm, Task: s, Topics: []string{"in"}})
	benchRunner(b, r, err, func() {
		for got := 0; got < b.N; {
			got += <-s.n
		}
		go func() { // the puts while the runner stops
			for range s.n {
			}
		}()
	})
}

// BenchmarkRawConsumer is the baseline for BenchmarkSinkRunner: a bare
// franz-go group consumer draining the same records.
func BenchmarkRawConsumer(b *testing.B) {
	c := cluster(b, map[string]int32{"in": 4})
	fillTopic(b, c.ListenAddrs(), "in", b.N)
	b.ResetTimer()
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("in"), kgo.ConsumerGroup("raw"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	for got := 0; got < b.N; {
		got += cl.PollFetches(context.Background()).NumRecords()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkSourceRunner produces b.N records of 200 bytes through a source
// runner.
func BenchmarkSourceRunner(b *testing.B) {
	c := cluster(b, map[string]int32{"out": 4})
	defer c.Close()
	task := &counterSource{topic: "out", limit: b.N, batch: 1000}
	cm := common(c, newStatuses(), ID{"bench", 0}, nil)
	r, err := NewSourceRunner(SourceConfig{Common: cm, Task: task, Offsets: newMemOffsets(), MaxInFlight: benchInFlight})
	benchRunner(b, r, err, until(func() bool { return task.committedCount() >= b.N }))
}

// BenchmarkRawProducer is the baseline for BenchmarkSourceRunner: a bare
// idempotent franz-go producer writing the same records.
func BenchmarkRawProducer(b *testing.B) {
	c := cluster(b, map[string]int32{"out": 4})
	cl, err := kgo.NewClient(append(kafkaOpts(c), ProducerOpts(10000, 64<<20)...)...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	b.ResetTimer()
	start := time.Now()
	val := make([]byte, 200)
	for i := 0; i < b.N; i++ {
		cl.Produce(context.Background(), &kgo.Record{Topic: "out", Partition: -1, Key: strconv.AppendInt(nil, int64(i), 10), Value: val}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}

var benchInFlight = 10000

// jsonWithoutSchemas are worker converter settings: JSON without schemas.
var jsonWithoutSchemas = map[string]string{
	"key.converter": converter.JSONClass, "key.converter.schemas.enable": "false",
	"value.converter": converter.JSONClass, "value.converter.schemas.enable": "false",
}

// BenchmarkRangeSourceRunner produces b.N range-source records (200-byte
// payloads, JSON without schemas) through one source runner.
func BenchmarkRangeSourceRunner(b *testing.B) {
	topics := map[string]int32{"out": 4}
	c := cluster(b, topics)
	cfgs := taskConfigs(b, rangesource.Plugin(), map[string]string{
		"name": "range", "connector.class": "RangeSource", "topic": "out", "count": strconv.Itoa(b.N), "record.size": "200", "batch.size": "1000",
	}, topics, 1)
	cm := common(c, newStatuses(), ID{"bench", 0}, cfgs[0])
	cm.KeyConverter, cm.ValueConverter = nil, nil
	cm.Metrics = metrics.New().Task("bench", 0)
	r, err := New(Spec{Common: cm, Plugin: rangesource.Plugin(), Connector: cfgs[0], WorkerConverters: jsonWithoutSchemas, Offsets: newMemOffsets()})
	adm := admin(b, c)
	benchRunner(b, r, err, until(func() bool {
		ends, err := adm.ListEndOffsets(context.Background(), "out")
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n >= int64(b.N)
	}))
}

// BenchmarkFileSinkRunner drains b.N records of 200 bytes from 4 partitions
// through a sink runner into the bundled FileSink (byte-array converters),
// timed until the file holds every record; compare with
// BenchmarkRawConsumer.
func BenchmarkFileSinkRunner(b *testing.B) {
	c := cluster(b, map[string]int32{"in": 4})
	fillTopic(b, c.ListenAddrs(), "in", b.N)
	out := filepath.Join(b.TempDir(), "sink.out")
	cfg := map[string]string{"file": out, "topics": "in", "key.converter": converter.ByteArrayClass, "value.converter": converter.ByteArrayClass}
	cm := common(c, newStatuses(), ID{"bench", 0}, cfg)
	cm.KeyConverter, cm.ValueConverter = nil, nil
	cm.OffsetFlushInterval = 200 * time.Millisecond
	r, err := New(Spec{Common: cm, Plugin: file.SinkPlugin(), Connector: cfg})
	want := int64(b.N) * 201
	benchRunner(b, r, err, until(func() bool {
		st, err := os.Stat(out)
		return err == nil && st.Size() >= want
	}))
}

// benchRunner times r (built by a constructor that returned err) from
// Start until wait returns, reports b.N records over that time, and stops
// r outside the timing.
func benchRunner(b *testing.B, r Runner, err error, wait func()) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	_ = r.Start(context.Background())
	wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Stop(ctx)
}

// until waits for done, looking every 5ms (a benchmark's wait has no
// deadline: the benchmark's own timeout bounds it).
func until(done func() bool) func() {
	return func() {
		for !done() {
			time.Sleep(5 * time.Millisecond)
		}
	}
}
