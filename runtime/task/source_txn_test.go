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

package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// These tests run exactly-once source tasks on kfake, which implements
// transactions, read_committed fetches, the last stable offset and
// fencing by InitProducerID. Where kfake differs from Kafka: an
// InitProducerID that meets an open transaction aborts it at once, while
// Kafka answers CONCURRENT_TRANSACTIONS and aborts it in the background
// (the client retries); the outcome the tests check is the same.

const eosGroup = "grp"

// eosSource emits records {"id": n} with offset {"pos": n} in batches;
// with a TransactionContext it follows plan: after batch i it calls
// plan[i] ("commit" or "abort").
type eosSource struct {
	plugin.NopCommitter
	topic        string
	limit, batch int
	plan         map[int]string

	mu      sync.Mutex
	next    int
	polls   int
	start   int // resume position read from the offsets
	commits int
	txc     plugin.TransactionContext
}

func (s *eosSource) Start(ctx context.Context, tc plugin.SourceTaskContext, _ map[string]string) error {
	o, err := tc.OffsetReader().Offset(ctx, map[string]any{"src": "x"})
	if err != nil {
		return err
	}
	if o != nil {
		p, err := plugin.OffsetInt64(o["pos"])
		if err != nil {
			return err
		}
		s.next = int(p) + 1
	}
	s.start = s.next
	s.txc = plugin.TransactionContextOf(tc)
	return nil
}

func (s *eosSource) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.limit {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return nil, nil
	}
	var out []*plugin.SourceRecord
	part := map[string]any{"src": "x"}
	for i := 0; i < s.batch && s.next < s.limit; i++ {
		out = append(out, &plugin.SourceRecord{Topic: s.topic, SourcePartition: part, SourceOffset: map[string]any{"pos": s.next},
			Key: strconv.Itoa(s.next), Value: strconv.Itoa(s.next)})
		s.next++
	}
	if s.txc != nil {
		switch s.plan[s.polls] {
		case "commit":
			s.txc.CommitTransaction()
		case "abort":
			s.txc.AbortTransaction()
		}
	}
	s.polls++
	return out, nil
}

func (s *eosSource) Stop() error { return nil }

// Commit counts the task commits: the runtime calls it only after a
// transaction committed (the CDC source confirms its WAL position here).
func (s *eosSource) Commit(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits++
	return nil
}

func (s *eosSource) commitCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits
}

type eosEnv struct {
	kopts   []kgo.Opt
	adm     *kadm.Client
	offsets *store.OffsetStore
}

func newEOSEnv(t *testing.T) *eosEnv {
	t.Helper()
	_, kopts := kafkatest.Cluster(t)
	return newEOSEnvOn(t, kopts)
}

func newEOSEnvOn(t *testing.T, kopts []kgo.Opt) *eosEnv {
	t.Helper()
	adm := kafkatest.Admin(t, kopts)
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	open := kafkatest.Opener(kopts)
	offs, err := store.OpenOffsetStore(context.Background(), func(ctx context.Context, tp kafkalog.Topic, apply func(kafkalog.Record)) (*kafkalog.Log, error) {
		tp.ReadCommitted = true
		return open(ctx, tp, apply)
	}, kafkalog.Topic{Name: "offsets", CreatePartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(offs.Close)
	return &eosEnv{kopts: kopts, adm: adm, offsets: offs}
}

func (e *eosEnv) runner(t *testing.T, src *eosSource, boundary string, status task.StatusReporter) *task.SourceRunner {
	t.Helper()
	if status == nil {
		status = task.StatusFunc(func(task.ID, task.State, string) {})
	}
	r, err := task.NewSourceRunner(task.SourceConfig{
		Common: task.Common{ID: task.ID{Connector: "src", Task: 0}, KeyConverter: converter.StringConverter{}, ValueConverter: converter.StringConverter{},
			Kafka: e.kopts, Status: status, OffsetFlushInterval: 50 * time.Millisecond, OffsetFlushTimeout: 10 * time.Second},
		Task: src, Offsets: store.TaskOffsets{Store: e.offsets},
		ExactlyOnce: &task.ExactlyOnce{TransactionalID: connectnames.TransactionalID(eosGroup, "src", 0), Boundary: boundary},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
	return r
}

// readTopic reads every record of topic (all partitions) with the given
// isolation, until the (committed or high-watermark) end.
func readTopic(t *testing.T, kopts []kgo.Opt, adm *kadm.Client, topic string, committed bool) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ends kadm.ListedOffsets
	var err error
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
		ends, err = adm.ListCommittedOffsets(ctx, topic)
	} else {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	cl, err := kgo.NewClient(append(slices.Clip(kopts), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pos := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if pos[p] < end {
				return false
			}
		}
		return true
	}
	var out []*kgo.Record
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading topic %s: got to %v of %v", topic, pos, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

// offsetValues returns the "pos" values of the connector's offset records.
func offsetValues(t *testing.T, recs []*kgo.Record) []int {
	t.Helper()
	var out []int
	for _, r := range recs {
		var o map[string]any
		if err := json.Unmarshal(r.Value, &o); err != nil {
			t.Fatalf("offset record %s: %v", r.Value, err)
		}
		p, err := plugin.OffsetInt64(o["pos"])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, int(p))
	}
	slices.Sort(out)
	return out
}

func ids(recs []*kgo.Record) []int {
	out := make([]int, 0, len(recs))
	for _, r := range recs {
		n, _ := strconv.Atoi(string(r.Value))
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// Records and their source offsets commit together: every offset that a
// read_committed reader sees covers records it sees too, the data topic
// carries transaction markers (the records were written transactionally),
// and the broker knows the task's transactional id, derived as Kafka
// derives it.
func TestExactlyOnceOffsetsCommitWithRecords(t *testing.T) {
	e := newEOSEnv(t)
	src := &eosSource{topic: "out", limit: 600, batch: 40}
	e.runner(t, src, plugin.BoundaryPoll, nil)
	testkit.EventuallyTrue(t, 30*time.Second, "the last offset committed", func() bool {
		o := e.offsets.Offset("src", map[string]any{"src": "x"})
		p, err := plugin.OffsetInt64(o["pos"])
		return o != nil && err == nil && p == 599
	})
	data := readTopic(t, e.kopts, e.adm, "out", true)
	if got := ids(data); !slices.Equal(got, seq(0, 600)) {
		t.Fatalf("read_committed reader saw %d records, want ids 0..599 once each", len(got))
	}
	offs := offsetValues(t, readTopic(t, e.kopts, e.adm, "offsets", true))
	if len(offs) < 600/40 {
		t.Fatalf("%d committed offset records, want one per poll (%d): %v", len(offs), 600/40, offs)
	}
	ends, err := e.adm.ListEndOffsets(context.Background(), "out")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := ends.Lookup("out", 0); end.Offset <= 600 {
		t.Fatalf("data topic ends at %d with 600 records: no transaction markers, so the records were not written in transactions", end.Offset)
	}
	txns, err := e.adm.DescribeTransactions(context.Background(), "grp-src-0")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := txns["grp-src-0"]; !ok || d.Err != nil {
		t.Fatalf("the broker does not know transactional id grp-src-0 (<group>-<connector>-<task>): %v", txns)
	}
}

// A transaction the connector aborts leaves neither records nor offsets:
// the connector commits after poll 0, aborts after poll 1 and commits
// after poll 2. The aborted records were written (a read_uncommitted
// reader sees them), but a read_committed reader does not, and no offset
// of them is ever stored.
func TestExactlyOnceAbortedTransactionLeavesNoOffsets(t *testing.T) {
	e := newEOSEnv(t)
	src := &eosSource{topic: "out", limit: 30, batch: 10, plan: map[int]string{0: "commit", 1: "abort", 2: "commit"}}
	e.runner(t, src, plugin.BoundaryConnector, nil)
	testkit.EventuallyTrue(t, 30*time.Second, "offset pos=29 committed", func() bool {
		o := e.offsets.Offset("src", map[string]any{"src": "x"})
		p, err := plugin.OffsetInt64(o["pos"])
		return o != nil && err == nil && p == 29
	})
	if all := ids(readTopic(t, e.kopts, e.adm, "out", false)); !slices.Equal(all, seq(0, 30)) {
		t.Fatalf("records written %v: the aborted transaction never wrote 10..19, so the test proves nothing", all)
	}
	want := append(seq(0, 10), seq(20, 30)...)
	if got := ids(readTopic(t, e.kopts, e.adm, "out", true)); !slices.Equal(got, want) {
		t.Fatalf("read_committed records %v, want %v (10..19 aborted)", got, want)
	}
	if all := offsetValues(t, readTopic(t, e.kopts, e.adm, "offsets", false)); !slices.Equal(all, []int{9, 29}) {
		t.Fatalf("offsets written %v, want [9 29]: an aborted transaction writes no offset", all)
	}
}

// A transaction whose commit fails is aborted with its offset: the broker
// refuses the third EndTxn commit (injected). The offset the transaction
// carried was written (read_uncommitted) but is never visible
// read_committed nor stored; the task fails, and a restarted instance
// resumes from the last committed offset, so every id is delivered
// exactly once in the end.
func TestExactlyOnceFailedCommitAbortsOffsets(t *testing.T) {
	c, kopts := kafkatest.Cluster(t)
	e := newEOSEnvOn(t, kopts)
	commits := 0
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.EndTxnRequest)
		c.KeepControl()
		if !r.Commit {
			return nil, nil, false
		}
		commits++
		if commits != 3 {
			c.KeepControl()
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true
	})
	src := &eosSource{topic: "out", limit: 100, batch: 10}
	r := e.runner(t, src, plugin.BoundaryPoll, nil)
	select {
	case <-r.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the task did not fail after its commit was refused")
	}
	if r.State() != task.StateFailed || !errors.Is(r.Err(), kerr.InvalidTxnState) {
		t.Fatalf("task ended %s with %v, want FAILED by the refused commit", r.State(), r.Err())
	}
	committed := offsetValues(t, readTopic(t, e.kopts, e.adm, "offsets", true))
	if !slices.Equal(committed, []int{9, 19}) {
		t.Fatalf("committed offsets %v, want [9 19]: the refused transaction's offset 29 must not be visible", committed)
	}
	if all := offsetValues(t, readTopic(t, e.kopts, e.adm, "offsets", false)); !slices.Contains(all, 29) {
		t.Fatalf("offsets written %v: the refused transaction never wrote offset 29, so the test proves nothing", all)
	}
	if n := src.commitCount(); n != 2 {
		t.Fatalf("the task's Commit ran %d times, want 2: never for the refused transaction (a CDC source would confirm a WAL position that is not in Kafka)", n)
	}
	if err := e.offsets.ReadToEnd(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, _ := plugin.OffsetInt64(e.offsets.Offset("src", map[string]any{"src": "x"})["pos"]); p != 19 {
		t.Fatalf("stored offset %d, want 19", p)
	}

	again := &eosSource{topic: "out", limit: 100, batch: 10}
	r2 := e.runner(t, again, plugin.BoundaryPoll, nil)
	testkit.EventuallyTrue(t, 30*time.Second, "the restarted task commits pos=99", func() bool {
		if r2.State() == task.StateFailed {
			t.Fatalf("restarted task failed: %v", r2.Err())
		}
		p, err := plugin.OffsetInt64(e.offsets.Offset("src", map[string]any{"src": "x"})["pos"])
		return err == nil && p == 99
	})
	if again.start != 20 {
		t.Fatalf("the restarted task resumed at %d, want 20", again.start)
	}
	if got := ids(readTopic(t, e.kopts, e.adm, "out", true)); !slices.Equal(got, seq(0, 100)) {
		t.Fatalf("read_committed reader saw %d records, want ids 0..99 exactly once", len(got))
	}
}

// A zombie cannot commit. First an old-generation producer, started by
// hand with the task's transactional id, has an open transaction holding
// records and an offset when the task starts: the task's start fences it,
// its commit fails and nothing of it is visible. Then a newer instance,
// again by hand, fences the running task: the task's next commit fails and
// the task turns FAILED, naming the fencing.
func TestExactlyOnceFencedZombieCannotCommit(t *testing.T) {
	e := newEOSEnv(t)
	ctx := context.Background()
	txnID := connectnames.TransactionalID(eosGroup, "src", 0)

	zombie, err := kgo.NewClient(append(slices.Clip(e.kopts), kgo.TransactionalID(txnID))...)
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Close()
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	recs, err := e.offsets.Records("src", []store.SourceOffset{{Partition: map[string]any{"src": "x"}, Offset: map[string]any{"pos": 999}}})
	if err != nil {
		t.Fatal(err)
	}
	recs = append(recs, &kgo.Record{Topic: "out", Value: []byte("zombie")})
	if err := zombie.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var states []string
	status := task.StatusFunc(func(_ task.ID, s task.State, trace string) {
		mu.Lock()
		defer mu.Unlock()
		states = append(states, string(s)+": "+trace)
	})
	src := &eosSource{topic: "out", limit: 1 << 30, batch: 20}
	r := e.runner(t, src, plugin.BoundaryPoll, status)
	testkit.EventuallyTrue(t, 30*time.Second, "the task commits", func() bool {
		return e.offsets.Offset("src", map[string]any{"src": "x"}) != nil
	})
	if src.start != 0 {
		t.Fatalf("the task resumed at %d: it read the zombie's uncommitted offset", src.start)
	}
	err = zombie.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced zombie's commit succeeded")
	}
	t.Logf("zombie commit: %v", err)
	for _, rec := range readTopic(t, e.kopts, e.adm, "out", true) {
		if string(rec.Value) == "zombie" {
			t.Fatal("the zombie's record is visible to a read_committed reader")
		}
	}
	if o := e.offsets.Offset("src", map[string]any{"src": "x"}); o["pos"] == float64(999) {
		t.Fatal("the zombie's offset reached the store")
	}

	// Now the running task is the old generation.
	newer, err := kgo.NewClient(append(slices.Clip(e.kopts), kgo.TransactionalID(txnID))...)
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	if _, _, err := newer.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced task is still running")
	}
	if r.State() != task.StateFailed || r.Err() == nil {
		t.Fatalf("fenced task ended %s (%v), want FAILED", r.State(), r.Err())
	}
	// Kafka answers a fenced producer PRODUCER_FENCED (EndTxn) or
	// INVALID_PRODUCER_EPOCH (Produce). kfake, with KIP-890's epoch bump
	// per transaction, may take a producer fenced by exactly one epoch for
	// a retry of an ended transaction and answer INVALID_TXN_STATE: a
	// refusal all the same.
	fenced := errors.Is(r.Err(), kerr.ProducerFenced) || errors.Is(r.Err(), kerr.InvalidProducerEpoch) ||
		errors.Is(r.Err(), kerr.InvalidProducerIDMapping) || errors.Is(r.Err(), kerr.InvalidTxnState)
	if !fenced {
		t.Fatalf("fenced task failed with %v, want a fencing error", r.Err())
	}
	mu.Lock()
	last := states[len(states)-1]
	mu.Unlock()
	if !strings.HasPrefix(last, "FAILED") || !strings.Contains(last, txnID) {
		t.Fatalf("last reported state %q, want FAILED naming %s", last, txnID)
	}
	fmt.Fprintln(testWriter{t}, "fenced task:", r.Err())
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
