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

package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/test/cluster/harness"
)

var (
	steadyRecords = flag.Int("steady-records", 5_000_000, "records of the steady-state measurements (0: none)")
	steadyRounds  = flag.Int("steady-rounds", 3, "rounds of the steady-state measurements (the median ratio is reported)")
	sinkFlush     = flag.Duration("steady-sink-flush-interval", 0, "offset.flush.interval.ms of the worker of the steady sink rounds (0: the worker's default, 10s; 200ms: as the other measurements' worker)")
)

// steadyLimit bounds one steady-state run (the issue: under two minutes).
const steadyLimit = 2 * time.Minute

// steady runs the steady-state sink and source measurements, and returns
// their median ratios. The sink rounds run on a worker of their own that
// commits offsets at the worker's default interval (-steady-sink-flush-interval):
// each commit of the file sink is an fsync, and at the 200ms of the other
// measurements' worker these took 6-21% of the sink's time and varied
// fourfold with the machine's disk from one round to the next.
func steady(ctx context.Context, bin string, w *workerProc, dir, addr string, adm *kadm.Client) ([]figure, error) {
	if *steadyRecords <= 0 {
		return nil, nil
	}
	sinkW := w
	if *only == "" || *only == "sink" {
		var extra []string
		if *sinkFlush > 0 {
			extra = append(extra, fmt.Sprintf("offset.flush.interval.ms=%d", sinkFlush.Milliseconds()))
		}
		var err error
		if sinkW, err = startWorker(ctx, bin, dir, addr, "bench-steady-sink", extra...); err != nil {
			return nil, err
		}
		defer sinkW.stop()
	}
	var sink, source []float64
	for round := 1; round <= max(*steadyRounds, 1); round++ {
		if *only == "" || *only == "sink" {
			r, err := steadySinkRound(ctx, sinkW, dir, addr, adm, round)
			if err != nil {
				return nil, err
			}
			sink = append(sink, r)
		}
		if *only == "" || *only == "source" {
			r, err := steadySourceRound(ctx, w, addr, adm, round)
			if err != nil {
				return nil, err
			}
			source = append(source, r)
		}
	}
	var out []figure
	if len(sink) > 0 {
		out = append(out, figure{"sink_steady_vs_raw_ratio", median(sink)})
	}
	if len(source) > 0 {
		out = append(out, figure{"source_steady_vs_raw_ratio", median(source)})
	}
	return out, nil
}

// steadyRate polls count every 10ms until it reaches n and returns the
// records/s between the first poll at or past 20% of n and the poll that
// saw n: start-up, group joins and the first fetches are not counted.
func steadyRate(ctx context.Context, what string, n int64, count func() (int64, error)) (float64, error) {
	start := time.Now()
	var c20 int64
	var t20 time.Time
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := count()
		now := time.Now()
		if err == nil {
			if t20.IsZero() && c >= n/5 {
				c20, t20 = c, now
			}
			if c >= n {
				if now.Equal(t20) {
					return 0, fmt.Errorf("%s: 20%% to 100%% within one poll", what)
				}
				return float64(c-c20) / now.Sub(t20).Seconds(), nil
			}
		}
		if now.Sub(start) > steadyLimit {
			return 0, fmt.Errorf("%s: %d of %d records in %s", what, c, n, steadyLimit)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// endOffsets is the sum of a topic's end offsets: the records in it.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			total += o.Offset
		}
	})
	return total, nil
}

// steadySinkRound: a bare consumer, then the FileSink, drain the same
// topic of -steady-records records.
func steadySinkRound(ctx context.Context, w *workerProc, dir, addr string, adm *kadm.Client, round int) (float64, error) {
	n := int64(*steadyRecords)
	topic := fmt.Sprintf("bench-steady-sink-%d", round)
	if _, err := adm.CreateTopic(ctx, int32(*partitions), 1, nil, topic); err != nil {
		return 0, fmt.Errorf("creating topic: %w", err)
	}
	defer deleteTopics(ctx, adm, topic)
	logf("steady round %d: producing %d records of %d B into %d partitions", round, n, *recordSize, *partitions)
	if _, err := produceRaw(ctx, addr, topic, int(n), *recordSize); err != nil {
		return 0, err
	}

	// The bare consumer: the same group-member settings as produceRaw's
	// cold twin, counting records as PollFetches returns them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumerGroup(fmt.Sprintf("bench-steady-raw-%d", round)))
	if err != nil {
		return 0, err
	}
	var got atomic.Int64
	pctx, stopPoll := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for got.Load() < n && pctx.Err() == nil {
			got.Add(int64(cl.PollFetches(pctx).NumRecords()))
		}
	}()
	c0 := cpuNow(w)
	raw, err := steadyRate(ctx, "bare consumer", n, func() (int64, error) { return got.Load(), nil })
	c1 := cpuNow(w)
	stopPoll()
	<-polled
	cl.Close()
	if err != nil {
		return 0, err
	}

	out := filepath.Join(dir, topic+".out")
	defer os.Remove(out)
	if err := rest(ctx, "POST", w.url+"/connectors", map[string]any{"name": topic, "config": map[string]string{
		"connector.class": "FileSink", "topics": topic, "file": out, "tasks.max": strconv.Itoa(*sinkTasks),
		"key.converter": "ByteArrayConverter", "value.converter": "ByteArrayConverter",
	}}); err != nil {
		return 0, err
	}
	line := int64(*recordSize + 1)
	sinkStart := time.Now()
	c2 := cpuNow(w)
	sink, err := steadyRate(ctx, "file sink", n, func() (int64, error) {
		st, err := os.Stat(out)
		if err != nil {
			return 0, err
		}
		return st.Size() / line, nil
	})
	c3 := cpuNow(w)
	sinkEnd := time.Now()
	times := sinkTimes(ctx, w, topic)
	if derr := rest(ctx, "DELETE", w.url+"/connectors/"+topic, nil); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return 0, err
	}
	waitGroupEmpty(ctx, adm, connectnames.SinkGroup(topic))
	logf("steady round %d: file sink, over its %.1fs from creation: %s", round, sinkEnd.Sub(sinkStart).Seconds(), times)
	logf("steady round %d: bare consumer %.0f rec/s, file sink %.0f rec/s: sink_steady_vs_raw_ratio %.3f; CPU per 1M records (20%%-100%%): baseline %.2fs, worker run %.2fs; %s",
		round, raw, sink, sink/raw, perMillion(c1.bench-c0.bench, n), perMillion(c3.worker-c2.worker+c3.bench-c2.bench, n), gcSummary(c0, c1, c2, c3))
	return sink / raw, nil
}

// sinkTimes tells, from the worker's metrics, how long the sink task of
// connector spent in the FileSink's Put (which writes the lines to the
// file) and in offset commits (the FileSink's Flush, an fsync, then the
// consumer's commit), in seconds since the task started. These wait on the
// file system, shared with everything else on the machine, which the bare
// consumer never touches.
func sinkTimes(ctx context.Context, w *workerProc, connector string) string {
	m, err := (&harness.Client{BaseURL: w.url, HTTP: http.DefaultClient}).Metrics(ctx)
	if err != nil {
		return fmt.Sprintf("no metrics: %v", err)
	}
	labels := fmt.Sprintf(`{connector=%q,task="0"}`, connector)
	put, _ := harness.MetricValue(m, "kafka_connect_put_batch_time_ms_sum"+labels)
	commit, _ := harness.MetricValue(m, "kafka_connect_offset_commit_time_ms_sum"+labels)
	commits, _ := harness.MetricValue(m, "kafka_connect_offset_commit_time_ms_count"+labels)
	return fmt.Sprintf("puts %.2fs, %.0f offset commits (flush with fsync, then commit) %.2fs", put/1000, commits, commit/1000)
}

// gcSummary tells this program's garbage collections in the baseline's
// window (c0 to c1) and in the worker's (c2 to c3). The broker in this
// program holds every record of the round, and the bare clients run here
// too: their collections cost the baseline's window CPU (and
// the broker's latency) that the worker's window mostly does not pay, and
// how much varies from round to round.
func gcSummary(c0, c1, c2, c3 cpuTimes) string {
	return fmt.Sprintf("bench GC: baseline %d cycles %.2fs, worker run %d cycles %.2fs",
		c1.gcCycles-c0.gcCycles, c1.gcCPU-c0.gcCPU, c3.gcCycles-c2.gcCycles, c3.gcCPU-c2.gcCPU)
}

// perMillion scales CPU seconds spent on 80% of n records to 1M records.
func perMillion(sec float64, n int64) float64 { return sec / (0.8 * float64(n)) * 1e6 }

// steadySourceRound: a bare producer, then the RangeSource, write
// -steady-records records into topics of the same partitions.
func steadySourceRound(ctx context.Context, w *workerProc, addr string, adm *kadm.Client, round int) (float64, error) {
	n := int64(*steadyRecords)
	rawTopic, topic := fmt.Sprintf("bench-steady-raw-src-%d", round), fmt.Sprintf("bench-steady-src-%d", round)
	defer deleteTopics(ctx, adm, rawTopic, topic)

	var acked atomic.Int64
	done := make(chan error, 1)
	c0 := cpuNow(w)
	go func() { done <- produceCounted(ctx, addr, rawTopic, int(n), *recordSize, &acked) }()
	raw, err := steadyRate(ctx, "bare producer", n, func() (int64, error) { return acked.Load(), nil })
	if perr := <-done; perr != nil && err == nil {
		err = perr
	}
	c1 := cpuNow(w)
	if err != nil {
		return 0, err
	}
	// The raw topic's records go before the source runs: the broker is in
	// this process and would carry them.
	deleteTopics(ctx, adm, rawTopic)

	if err := rest(ctx, "POST", w.url+"/connectors", map[string]any{"name": topic, "config": map[string]string{
		"connector.class": "RangeSource", "topic": topic, "count": strconv.FormatInt(n, 10), "tasks.max": strconv.Itoa(*srcTasks),
		"record.size": strconv.Itoa(max(*recordSize-30, 0)), "batch.size": "2000",
		"value.converter": "JsonConverter", "value.converter.schemas.enable": "false", "key.converter": "StringConverter",
	}}); err != nil {
		return 0, err
	}
	c2 := cpuNow(w)
	source, err := steadyRate(ctx, "range source", n, func() (int64, error) { return endOffsets(ctx, adm, topic) })
	c3 := cpuNow(w)
	if derr := rest(ctx, "DELETE", w.url+"/connectors/"+topic, nil); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return 0, err
	}
	logf("steady round %d: bare producer %.0f rec/s, range source %.0f rec/s: source_steady_vs_raw_ratio %.3f; CPU per 1M records (20%%-100%%): baseline %.2fs, worker run %.2fs; %s",
		round, raw, source, source/raw, perMillion(c1.bench-c0.bench, n), perMillion(c3.worker-c2.worker+c3.bench-c2.bench, n), gcSummary(c0, c1, c2, c3))
	return source / raw, nil
}

// produceCounted writes n records with a bare idempotent franz-go producer
// (acks=all, as the source runner) and counts acknowledged records into
// acked (when not nil).
func produceCounted(ctx context.Context, addr, topic string, n, size int, acked *atomic.Int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(10000))
	if err != nil {
		return err
	}
	defer cl.Close()
	val := payload(size)
	var failed atomic.Value
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(err)
			}
			if acked != nil {
				acked.Add(1)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err, _ := failed.Load().(error); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	return nil
}
