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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/runtime/connectors/file"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// shareCluster is a kfake cluster for share-group tests.
//
// Where kfake differs from Kafka's share groups (KIP-932), as these tests
// rely on it:
//   - the share group heartbeat interval is a broker config here
//     (group.share.heartbeat.interval.ms, 5 s by default in kfake as in
//     Kafka); the tests lower it so members join in milliseconds;
//   - kfake accepts the group config share.delivery.count.limit but
//     applies only the broker's group.share.delivery.count.limit (Kafka 4.2
//     applies the group's when set); the runner reads the group's first and
//     the broker's after, so the tests set the broker's;
//   - kfake sweeps expired acquisition locks every
//     share.record.lock.sweep.interval.ms (5 s); Kafka times each lock out
//     on its own.
func shareCluster(t *testing.T, topic string, partitions int32, deliveryLimit int) *kfake.Cluster {
	t.Helper()
	c, _ := kafkatest.Cluster(t, kfake.SeedTopics(partitions, topic), kfake.BrokerConfigs(map[string]string{
		"group.share.heartbeat.interval.ms": "100",
		"group.share.delivery.count.limit":  fmt.Sprint(deliveryLimit),
	}))
	return c
}

func shareCommon(c *kfake.Cluster, id ID, config map[string]string) Common {
	cm := common(c, newStatuses(), id, config)
	cm.Config[plugin.KeyConsumerGroupType] = plugin.GroupTypeShare
	return cm
}

// distinctLines reads the files of dir and counts each line.
func distinctLines(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l != "" {
				out[l]++
			}
		}
	}
	return out
}

// Beyond partitions: on a 2-partition topic, 8 share-mode tasks of a
// rate-limited sink all consume (a consumer group would leave 6 idle).
// Then half of them stop, as a planned scale-down: what they held is
// released at once (well before the 30 s acquisition lock), and the other
// four write the rest: every record is written, none lost.
func TestShareSinkTasksBeyondPartitions(t *testing.T) {
	const n = 800
	c := shareCluster(t, "in", 2, 5)
	produce(t, c, "in", "r", n)
	dir := t.TempDir()
	var rs []*SinkRunner
	for i := range 8 {
		cm := shareCommon(c, ID{"wide", i}, map[string]string{"topics": "in", file.KeyFile: filepath.Join(dir, fmt.Sprintf("task-%d.txt", i)), file.KeySinkRate: "40"})
		cm.OffsetFlushTimeout = 5 * time.Second
		rs = append(rs, newSink(t, SinkConfig{Common: cm, Task: &file.SinkTask{}, Share: true, MaxPollRecords: 10}))
	}
	testkit.EventuallyTrue(t, 15*time.Second, "all 8 tasks to write records of the 2-partition topic", func() bool {
		for i := range rs {
			if lines(t, filepath.Join(dir, fmt.Sprintf("task-%d.txt", i))) == 0 {
				return false
			}
		}
		return true
	})
	begin := time.Now()
	for _, r := range rs[4:] {
		stop(t, r, 10*time.Second)
	}
	t.Logf("4 tasks stopped in %s", time.Since(begin).Round(time.Millisecond))
	testkit.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("the 4 remaining tasks to write all %d records", n), func() bool {
		return len(distinctLines(t, dir)) == n
	})
	took := time.Since(begin)
	dup := 0
	for _, k := range distinctLines(t, dir) {
		dup += k - 1
	}
	t.Logf("all %d records written %s after the scale-down; %d written twice", n, took.Round(time.Millisecond), dup)
	if took > 25*time.Second {
		t.Fatalf("the records held by the stopped tasks waited %s: they were not released at once", took)
	}
}

// refusingSink refuses, with a retriable error, every Put holding a record
// whose value is in poison; it records what it wrote.
type refusingSink struct {
	recordingSink
	poison map[string]bool
	mu2    sync.Mutex
	tries  map[string]int
}

func (s *refusingSink) Put(ctx context.Context, recs []*plugin.SinkRecord) error {
	s.mu2.Lock()
	for _, r := range recs {
		if v := fmt.Sprint(r.Value); s.poison[v] {
			s.tries[v]++
			s.mu2.Unlock()
			return plugin.Retriable(fmt.Errorf("value %s violates check constraint \"qty_positive\"", v))
		}
	}
	s.mu2.Unlock()
	return s.recordingSink.Put(ctx, recs)
}

// Poison records: a record the sink always refuses (retriably) comes back
// until the share group's delivery limit, alone in its Put after its first
// failure, and then goes to the dead letter queue with the reason in its
// headers; it is counted, and every other record is written.
func TestShareSinkPoisonRecordToDeadLetterQueueAtDeliveryLimit(t *testing.T) {
	const limit = 3
	c := shareCluster(t, "in", 2, limit)
	produce(t, c, "in", "r", 60)
	sink := &refusingSink{recordingSink: *newRecordingSink(), poison: map[string]bool{"r-7": true}, tries: map[string]int{}}
	m := metrics.New()
	cm := shareCommon(c, ID{"poison", 0}, map[string]string{"topics": "in"})
	cm.Errors = ErrorConfig{ToleranceAll: true, DLQTopic: "dlq", DLQContextHeaders: true, DLQReplication: 1}
	cm.Metrics = m.Task("poison", 0)
	r := newSink(t, SinkConfig{Common: cm, Task: sink, Share: true, MaxPollRecords: 50})
	dead := readAll(t, c, "dlq", 1)
	if len(dead) != 1 || string(dead[0].Value) != "r-7" {
		t.Fatalf("dead letters %v, want the one poison record r-7", values(dead))
	}
	headers := map[string]string{}
	for _, h := range dead[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	msg := headers[HeaderErrorMessage]
	if !strings.Contains(msg, "qty_positive") || !strings.Contains(msg, fmt.Sprintf("delivered %d times, the share group's delivery limit", limit)) || headers[HeaderErrorStage] != string(StageTaskPut) {
		t.Fatalf("dead letter headers %v: want the sink's reason, the delivery limit and stage TASK_PUT", headers)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "the 59 other records to be written", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.seen) == 59
	})
	sink.mu2.Lock()
	tries := sink.tries["r-7"]
	sink.mu2.Unlock()
	if tries != limit {
		t.Fatalf("the poison record was put %d times, want %d (the delivery limit)", tries, limit)
	}
	if r.shareLimit != limit {
		t.Fatalf("the runner read delivery limit %d, want the broker's %d", r.shareLimit, limit)
	}
	l := map[string]string{"connector": "poison"}
	past := metricValue(t, m.Registry(), "kafka_connect_share_records_past_delivery_limit_total", l)
	redelivered := metricValue(t, m.Registry(), "kafka_connect_share_records_redelivered_total", l)
	t.Logf("poison record put %d times; past the delivery limit: %v; redelivered records: %v", tries, past, redelivered)
	if past != 1 || redelivered < limit-1 {
		t.Fatalf("share_records_past_delivery_limit_total=%v (want 1), share_records_redelivered_total=%v (want >= %d: the poison record came back)", past, redelivered, limit-1)
	}
	// The rest goes on: later records are written too.
	produce(t, c, "in", "s", 20)
	testkit.EventuallyTrue(t, 10*time.Second, "later records to be written", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.seen) == 79
	})
	if st := r.State(); st != StateRunning {
		t.Fatalf("task state %s, want RUNNING", st)
	}
}

// Switching a connector from the consumer group to share mode: the new
// share group starts where connect-<name> committed (AlterShareGroupOffsets
// while it has no member), so the switch neither repeats nor skips records.
func TestShareSinkSeedsFromConsumerGroup(t *testing.T) {
	c := shareCluster(t, "in", 2, 5)
	produce(t, c, "in", "r", 40) // 20 a partition
	adm := admin(t, c)
	committed := kadm.Offsets{}
	committed.AddOffset("in", 0, 15, -1)
	committed.AddOffset("in", 1, 15, -1)
	if resp, err := adm.CommitOffsets(context.Background(), "connect-switch", committed); err != nil || resp.Error() != nil {
		t.Fatalf("committing the consumer group's offsets: %v %v", err, resp.Error())
	}
	sink := newRecordingSink()
	newSink(t, SinkConfig{Common: shareCommon(c, ID{"switch", 0}, map[string]string{"topics": "in"}), Task: sink, Share: true})
	testkit.EventuallyTrue(t, 10*time.Second, "the 10 records after the committed offsets", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.seen) >= 10
	})
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, r := range sink.puts {
		if r.Offset < 15 {
			t.Fatalf("put %s-%d@%d, below the consumer group's committed offset 15", r.Topic, r.Partition, r.Offset)
		}
	}
	if len(sink.seen) != 10 {
		t.Fatalf("%d records put, want the 10 after the committed offsets", len(sink.seen))
	}
}
