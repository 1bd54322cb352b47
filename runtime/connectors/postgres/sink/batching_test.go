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

package sink

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// writerState returns whether a write is in flight, how many records are
// buffered and the failures not reported yet.
func writerState(task *Task) (busy bool, buffered int, failure, fatal error) {
	st := task.State()
	return st.Writes > 0, st.Queued, st.Failure, st.Fatal
}

// waitFailure waits until a write failed and returns the failure, without
// taking it.
func waitFailure(t *testing.T, task *Task) error {
	t.Helper()
	var err error
	testkit.EventuallyTrue(t, 20*time.Second, "a failed write", func() bool {
		_, _, failure, fatal := writerState(task)
		err = cmp.Or(fatal, failure)
		return err != nil
	})
	return err
}

// waitRows waits until table orders holds want, and returns how long that
// took.
func waitRows(t *testing.T, url, want string, within time.Duration) time.Duration {
	t.Helper()
	return testkit.Eventually(t, within, fmt.Sprintf("rows %q without a Flush", want), func() (bool, string) {
		got := ordersRows(t, url)
		return got == want, got
	})
}

// A trickle of records is committed as it comes, without waiting for a
// full batch or for the offset commit's Flush.
func TestTrickleIsWrittenWithoutFlush(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, ordersTable)
	task := startTask(t, upsertConfig(url, "1000"))
	ctx := context.Background()
	if err := task.Put(ctx, []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, "b"), order(2, 3, 30, "c")}); err != nil {
		t.Fatal(err)
	}
	took := waitRows(t, url, "1:10:a 2:20:b 3:30:c", 5*time.Second)
	if err := task.Put(ctx, []*plugin.SinkRecord{order(3, 2, 21, "b2")}); err != nil {
		t.Fatal(err)
	}
	took2 := waitRows(t, url, "1:10:a 2:21:b2 3:30:c", 5*time.Second)
	t.Logf("rows visible %v and %v after Put", took, took2)
}

// While a write is in flight (blocked by a table lock), Puts accumulate;
// once it commits, the next transaction takes everything buffered, up to
// batch.size records, and the rest goes in the one after. Transactions
// keep put order: later versions of a key win.
func TestGroupCommitTakesEverythingBuffered(t *testing.T) {
	// Every row written, with the transaction that wrote it.
	b := blockWrite(t, "4", []*plugin.SinkRecord{order(0, 1, 10, "a")}, []*plugin.SinkRecord{order(1, 2, 20, "b"), order(2, 1, 11, "a2")},
		`CREATE TABLE writes (id bigint, qty integer, tx bigint)`,
		`CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN INSERT INTO writes VALUES (NEW.id, NEW.qty, txid_current()); RETURN NEW; END $$`,
		`CREATE TRIGGER log_write AFTER INSERT OR UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION log_write()`)
	task, ctx := b.task, context.Background()
	for _, recs := range [][]*plugin.SinkRecord{
		{order(3, 3, 30, "c")},
		{order(4, 2, 21, "b2"), order(5, 4, 40, "d"), order(6, 5, 50, "e")}, // 3 buffered before: no wait
	} {
		if err := task.Put(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	if busy, buffered, _, _ := writerState(task); !busy || buffered != 6 {
		t.Fatalf("write in flight %v, %d records buffered; want a write in flight and 6", busy, buffered)
	}
	b.waitsForTheLock(t, "Flush", func() error { return task.Flush(ctx, nil) })
	if got, want := ordersRows(t, b.url), "1:11:a2 2:21:b2 3:30:c 4:40:d 5:50:e"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
	txs := pgtest.QueryString(t, b.url, `SELECT string_agg(rows, ' | ' ORDER BY tx) FROM
		(SELECT tx, string_agg(format('%s:%s', id, qty), ',' ORDER BY id) AS rows FROM writes GROUP BY tx) w`)
	if want := "1:10 | 1:11,2:21,3:30 | 4:40,5:50"; txs != want {
		t.Fatalf("rows written by transaction %q, want %q", txs, want)
	}
}

// With a write in flight and batch.size records buffered, Put waits for
// the writer to take them (or gives up retriably when its context ends,
// without taking its records).
func TestPutWaitsWhileTheBufferIsFull(t *testing.T) {
	b := blockWrite(t, "2", []*plugin.SinkRecord{order(0, 1, 10, "a")}, []*plugin.SinkRecord{order(1, 2, 20, "b"), order(2, 3, 30, "c")})
	task := b.task
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := task.Put(short, []*plugin.SinkRecord{order(3, 9, 90, "given up")}); err == nil || !plugin.IsRetriable(err) {
		t.Fatalf("Put with a full buffer and an ending context: %v, want a retriable error", err)
	}
	if _, buffered, _, _ := writerState(task); buffered != 2 {
		t.Fatalf("%d records buffered after the Put that gave up, want 2", buffered)
	}
	ctx := context.Background()
	b.waitsForTheLock(t, "Put", func() error { return task.Put(ctx, []*plugin.SinkRecord{order(3, 4, 40, "d")}) })
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := ordersRows(t, b.url), "1:10:a 2:20:b 3:30:c 4:40:d"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// A write the writer starts by itself (once the one in flight ends, with
// no Put or Flush waiting) and that fails for good is reported by the next
// Put and Flush; nothing of it is committed.
func TestFatalFailureOfAWriteNobodyWaitsFor(t *testing.T) {
	b := blockWrite(t, "10", []*plugin.SinkRecord{order(0, 1, 10, "a")}, []*plugin.SinkRecord{order(1, 2, 20, "b"), order(2, 3, 0, "bad qty")})
	b.release()
	if err := waitFailure(t, b.task); plugin.IsRetriable(err) || !strings.Contains(err.Error(), "violates check constraint") {
		t.Fatalf("the second write failed with %v, want a non-retriable check constraint error", err)
	}
	ctx := context.Background()
	for i, err := range []error{b.task.Put(ctx, []*plugin.SinkRecord{order(3, 4, 40, "d")}), b.task.Flush(ctx, nil)} {
		if err == nil || plugin.IsRetriable(err) || !strings.Contains(err.Error(), "violates check constraint") {
			t.Fatalf("call %d after the failure: %v, want the check constraint error", i, err)
		}
	}
	if got, want := ordersRows(t, b.url), "1:10:a"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// A background write that loses its connection with nobody waiting is
// reported retriably by the next Put, which leaves its records out; the
// failed batch is written again (on a new connection) before the records
// put again.
func TestRetriableFailureOfAWriteNobodyWaitsFor(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, ordersTable)
	task := startTask(t, upsertConfig(url, "10"))
	ctx := context.Background()
	putFlush(t, task, order(0, 1, 10, "a"))
	// End the sink's idle connection, and wait until its backend is gone.
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close(ctx) }()
	var ended bool
	if err := admin.QueryRow(ctx, `SELECT bool_and(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&ended); err != nil || !ended {
		t.Fatalf("terminating the sink's connection: %v (ended %v)", err, ended)
	}
	if err := task.Put(ctx, []*plugin.SinkRecord{order(1, 1, 11, "a2")}); err != nil {
		t.Fatal(err)
	}
	if err := waitFailure(t, task); !plugin.IsRetriable(err) {
		t.Fatalf("the write on the ended connection failed with %v, want a retriable error", err)
	}
	again := []*plugin.SinkRecord{order(2, 1, 12, "a3")}
	if err := task.Put(ctx, again); err == nil || !plugin.IsRetriable(err) {
		t.Fatalf("Put after the failure: %v, want the retriable failure", err)
	}
	if _, buffered, _, _ := writerState(task); buffered > 1 {
		t.Fatalf("%d records buffered, want at most the failed one: the Put that reported the failure keeps its records out", buffered)
	}
	putFlush(t, task, again...)
	if got, want := ordersRows(t, url), "1:12:a3"; got != want {
		t.Fatalf("rows %q, want %q (the failed batch written again before the later one)", got, want)
	}
}

// A Close whose context ends while the write in flight is blocked cancels
// that write and still waits for it; the cancelled batch goes back to the
// buffer, where the closed partition's records are dropped with the
// others: only the open partition's record is written afterwards.
func TestCloseCancelsTheWriteInFlightWhenItsContextEnds(t *testing.T) {
	other := order(3, 4, 40, "other partition")
	other.Partition = 1
	b := blockWrite(t, "3", []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, "b"), order(2, 3, 30, "c")}, []*plugin.SinkRecord{other})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- b.task.Close(ctx, []plugin.TopicPartition{{Topic: "orders", Partition: 0}}) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return within 20s of its context's end")
	}
	busy, buffered, failure, _ := writerState(b.task)
	if busy || buffered != 1 || !plugin.IsRetriable(failure) {
		t.Fatalf("after Close: write in flight %v, %d records buffered, failure %v; want none, 1 and the cancelled write's", busy, buffered, failure)
	}
	b.release()
	if err := b.task.Flush(context.Background(), nil); err == nil || !plugin.IsRetriable(err) {
		t.Fatalf("first Flush after the cancelled write: %v, want its retriable failure", err)
	}
	if err := b.task.Flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := ordersRows(t, b.url), "4:40:other partition"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
}
