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
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// produceTxn writes n records "prefix-i" to topic in one transaction,
// committed or aborted.
func produceTxn(t *testing.T, opts []kgo.Opt, topic, prefix string, n int, commit bool) {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.TransactionalID("txn-"+prefix), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", prefix, i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// A sink caught up on a topic written in transactions (an exactly-once
// source's) is idle, not stalled, and its lag reads 0: the runner counts
// transaction markers as consumed, so it commits past each partition's
// last marker, and past the aborted transaction that ends the topic here
// (read_committed never returns that transaction's records, only its
// marker). Committing only after the last record put left the lag above
// 0 for good, and the stall detector called the caught-up task stalled
// after task.stall.timeout.ms. The aborted transactions' records are
// never put.
func TestSinkCaughtUpOnATransactionalTopicIsNotStalled(t *testing.T) {
	c := cluster(t, map[string]int32{"tx": 2})
	adm := admin(t, c)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	produceTxn(t, opts, "tx", "a", 20, true)
	produceTxn(t, opts, "tx", "b", 6, false)
	produceTxn(t, opts, "tx", "c", 20, true)
	produceTxn(t, opts, "tx", "d", 6, false)

	m := metrics.New()
	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, newStatuses(), ID{"s", 0}, map[string]string{"topics": "tx"}), Task: sink, ReadCommitted: true}
	cfg.OffsetFlushInterval = 50 * time.Millisecond
	cfg.PollTimeout = 50 * time.Millisecond
	cfg.Metrics = m.Task("s", 0)
	r := newSink(t, cfg)

	testkit.Eventually(t, 10*time.Second, "the committed transactions' 40 records put", func() (bool, string) {
		return sink.distinct() == 40, fmt.Sprintf("%d distinct, %d put, state %s", sink.distinct(), sink.total(), r.State())
	})
	ends, err := adm.ListEndOffsets(context.Background(), "tx")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	testkit.Eventually(t, 10*time.Second, "the caught-up task at lag 0, idle, not stalled", func() (bool, string) {
		got := committed(t, adm, connectnames.SinkGroup("s"), "tx")
		done := true
		ends.Each(func(o kadm.ListedOffset) { done = done && got[o.Partition] == o.Offset })
		// Two evaluations an hour apart: a task with work and no progress
		// in between is stalled.
		now = now.Add(time.Hour)
		m.Stalled(time.Minute, now)
		stalled := m.Stalled(time.Minute, now.Add(time.Hour))
		now = now.Add(time.Hour)
		return done && r.Lag() == 0 && len(stalled) == 0, fmt.Sprintf("committed %v, ends %v, lag %d, stalled %+v", got, ends, r.Lag(), stalled)
	})
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for v := range sink.seen {
		if v[0] == 'b' || v[0] == 'd' {
			t.Fatalf("a record of the aborted transaction was put: %s", v)
		}
	}
}
