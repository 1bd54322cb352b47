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
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

const ordersTable = `CREATE TABLE orders (id bigint PRIMARY KEY, qty integer NOT NULL CHECK (qty > 0), note text, price numeric(10,2), at timestamp NOT NULL)`

func upsertConfig(url string, batch string) map[string]string {
	return with(baseConfig(url), KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyBatchSize, batch)
}

// blocked is a task whose write is in flight and blocked: another
// connection holds an ACCESS EXCLUSIVE lock on table orders.
type blocked struct {
	url        string
	task       *Task
	lock       *pgx.Conn // the lock holder, in its transaction
	release    func()    // ends the lock holder's transaction (also at the test's end)
	pid        int       // the backend of the write in flight
	goroutines int       // before the task started
}

// blockWrite creates table orders (then runs setup), locks it from
// another connection, starts a task with the batch size, puts full (taken
// by a write that waits for the lock: Put returns meanwhile) and then more
// (buffered: Put does not wait for the write while the buffer is not
// full).
func blockWrite(t *testing.T, batchSize string, full, more []*plugin.SinkRecord, setup ...string) *blocked {
	t.Helper()
	ctx := context.Background()
	b := &blocked{url: pg.CreateDatabase(t)}
	pgtest.ExecURL(t, b.url, append([]string{ordersTable}, setup...)...)
	var err error
	if b.lock, err = pgx.Connect(ctx, b.url); err != nil {
		t.Fatal(err)
	}
	if _, err := b.lock.Exec(ctx, "BEGIN; LOCK TABLE orders IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	released := false
	b.release = func() {
		if !released {
			released = true
			_, _ = b.lock.Exec(ctx, "ROLLBACK")
			_ = b.lock.Close(ctx)
		}
	}
	t.Cleanup(b.release)
	b.goroutines = runtime.NumGoroutine()
	b.task = startTask(t, upsertConfig(b.url, batchSize))
	if err := b.task.Put(ctx, full); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "the sink's write to wait for the table lock", func() bool {
		err := b.lock.QueryRow(ctx, `SELECT coalesce(min(pid), 0) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&b.pid)
		if err != nil {
			t.Fatal(err)
		}
		return b.pid != 0
	})
	if err := b.task.Put(ctx, more); err != nil {
		t.Fatal(err)
	}
	return b
}

// terminate ends the backend of the write in flight, then the lock.
func (b *blocked) terminate(t *testing.T) {
	t.Helper()
	if _, err := b.lock.Exec(context.Background(), "SELECT pg_terminate_backend($1)", b.pid); err != nil {
		t.Fatal(err)
	}
	b.release()
}

// waitsForTheLock checks that call (Flush, Close) does not return while
// the write in flight is blocked, and returns nil once the lock is gone.
func (b *blocked) waitsForTheLock(t *testing.T, what string, call func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while the write in flight was blocked", what, err)
	case <-time.After(300 * time.Millisecond):
	}
	b.release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return within 20s of the lock's release", what)
	}
}

func ordersRows(t *testing.T, url string) string {
	t.Helper()
	return pgtest.QueryString(t, url, `SELECT coalesce(string_agg(format('%s:%s:%s', id, qty, coalesce(note, 'NULL')), ' ' ORDER BY id), '') FROM orders`)
}

// A write that fails for good in the background (a CHECK constraint) is
// reported by the next Put or Flush, and by every one after; nothing of
// its transaction is committed.
func TestBackgroundFatalFailureSurfaces(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, ordersTable)
	task := startTask(t, upsertConfig(url, "2"))
	ctx := context.Background()
	if err := task.Put(ctx, []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 0, "bad qty")}); err != nil {
		t.Fatalf("a full batch is handed to the background write: %v", err)
	}
	err := putErr(task, order(2, 3, 30, "c"))
	if err == nil || plugin.IsRetriable(err) || !strings.Contains(err.Error(), "violates check constraint") {
		t.Fatalf("after a failed background write: %v, want a non-retriable check constraint error", err)
	}
	for i, again := range []error{task.Flush(ctx, nil), task.Put(ctx, []*plugin.SinkRecord{order(3, 4, 40, "d")})} {
		if again == nil || plugin.IsRetriable(again) {
			t.Fatalf("call %d after the fatal failure: %v, want it again", i, again)
		}
	}
	if got := ordersRows(t, url); got != "" {
		t.Fatalf("rows %q committed by the failed batch, want none", got)
	}
}

// A write in flight whose connection dies (its backend terminated while
// it waits for a lock) is reported retriably by the next Put, which drops
// its own records; the records put again are written after the failed
// batch, which is retried first: the rows end exactly as if nothing had
// failed, later versions winning.
func TestRetriableBackgroundFailureRetriedInOrder(t *testing.T) {
	b := blockWrite(t, "3", []*plugin.SinkRecord{order(0, 1, 10, "a1"), order(1, 2, 20, "b"), order(2, 3, 30, "c")},
		[]*plugin.SinkRecord{order(3, 1, 11, "a2")})
	task, ctx := b.task, context.Background()
	b.terminate(t)
	waitFailure(t, task)
	redelivered := []*plugin.SinkRecord{order(4, 4, 40, "d"), order(5, 5, 50, "e")}
	err := task.Put(ctx, redelivered)
	if err == nil || !plugin.IsRetriable(err) {
		t.Fatalf("Put after the write in flight lost its connection: %v, want a retriable error", err)
	}
	// The runtime puts the same records again until Put accepts them.
	testkit.Eventually(t, 20*time.Second, "Put to accept the records again", func() (bool, string) {
		err := task.Put(ctx, redelivered)
		if err != nil && !plugin.IsRetriable(err) {
			t.Fatalf("putting the records again: %v", err)
		}
		return err == nil, fmt.Sprint(err)
	})
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := ordersRows(t, b.url), "1:11:a2 2:20:b 3:30:c 4:40:d 5:50:e"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// A write that fails retriably in the background is reported by Flush,
// which keeps its batch: the next Flush writes it.
func TestFlushRetriesAFailedWrite(t *testing.T) {
	b := blockWrite(t, "2", []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, "b")}, []*plugin.SinkRecord{order(2, 1, 11, "a2")})
	task, ctx := b.task, context.Background()
	b.terminate(t)
	if err := task.Flush(ctx, nil); err == nil || !plugin.IsRetriable(err) {
		t.Fatalf("Flush after the write in flight lost its connection: %v, want a retriable error", err)
	}
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := ordersRows(t, b.url), "1:11:a2 2:20:b"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// Flush returns only once the write in flight and the buffered records
// are committed: right after it, another connection sees every row.
func TestFlushWaitsForTheWriteInFlight(t *testing.T) {
	b := blockWrite(t, "2", []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, "b")}, []*plugin.SinkRecord{order(2, 3, 30, "c")})
	b.waitsForTheLock(t, "Flush", func() error { return b.task.Flush(context.Background(), nil) })
	if got, want := ordersRows(t, b.url), "1:10:a 2:20:b 3:30:c"; got != want {
		t.Fatalf("rows right after Flush %q, want %q", got, want)
	}
}

// Stop cancels a write in flight (blocked on a lock that is never
// released while Stop runs), waits for its goroutine and commits nothing.
func TestStopCancelsTheWriteInFlight(t *testing.T) {
	b := blockWrite(t, "2", []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, "b")}, nil)
	task, goroutines := b.task, b.goroutines
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = task.Stop() // the cancelled write may have closed the connection already
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		b.release()
		t.Fatal("Stop did not return within 5s with a write in flight")
	}
	if st := task.State(); st.Writes != 0 {
		t.Fatalf("Stop returned with %d writes in flight", st.Writes)
	}
	testkit.Eventually(t, 5*time.Second, "the goroutines of before Start", func() (bool, string) {
		if n := runtime.NumGoroutine(); n > goroutines {
			buf := make([]byte, 1<<16)
			return false, fmt.Sprintf("%d goroutines after Stop, %d before Start:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
		}
		return true, ""
	})
	b.release()
	if got := ordersRows(t, b.url); got != "" {
		t.Fatalf("rows %q after the cancelled write, want none", got)
	}
}

// Upserts of keys not in the table yet are copied straight in; a batch
// with an existing key falls back to the staged upsert (and the next batch
// skips the attempt); a unique violation that is not about the primary
// key fails the task in both paths.
func TestUpsertCopiesNewKeysAndFallsBack(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, ordersTable, `CREATE UNIQUE INDEX orders_note ON orders (note)`)
	task := startTask(t, upsertConfig(url, "100"))
	w := func() *writer {
		t.Helper()
		w := task.writers["orders"]
		if w == nil {
			t.Fatal("no writer for topic orders")
		}
		return w
	}
	steps := []struct {
		recs             []*plugin.SinkRecord
		rows             string
		backoff, skipped int
	}{
		{[]*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, "b"), order(2, 1, 11, "a2")}, "1:11:a2 2:20:b", 0, 0},
		{[]*plugin.SinkRecord{order(3, 2, 21, "b2"), order(4, 3, 30, "c")}, "1:11:a2 2:21:b2 3:30:c", 1, 1},
		{[]*plugin.SinkRecord{order(5, 4, 40, "d")}, "1:11:a2 2:21:b2 3:30:c 4:40:d", 1, 0},
		{[]*plugin.SinkRecord{order(6, 5, 50, "e")}, "1:11:a2 2:21:b2 3:30:c 4:40:d 5:50:e", 0, 0},
	}
	for i, s := range steps {
		putFlush(t, task, s.recs...)
		if got := ordersRows(t, url); got != s.rows {
			t.Fatalf("step %d: rows %q, want %q", i, got, s.rows)
		}
		if w := w(); w.copyBackoff != s.backoff || w.copySkip != s.skipped {
			t.Fatalf("step %d: copy backoff %d, batches to skip %d; want %d, %d", i, w.copyBackoff, w.copySkip, s.backoff, s.skipped)
		}
	}
	err := putErr(task, order(7, 6, 60, "e"))
	if err == nil || plugin.IsRetriable(err) || !strings.Contains(err.Error(), "orders_note") {
		t.Fatalf("a new key with a duplicate unique note: %v, want a non-retriable error naming orders_note", err)
	}
}

// Close waits for the write in flight (so that no write of this task
// lands after the partition's next owner's), then drops the buffered
// records of the closed partitions only.
func TestCloseWaitsForTheWriteInFlight(t *testing.T) {
	other := order(0, 4, 40, "other partition")
	other.Partition = 1
	b := blockWrite(t, "3", []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, "b"), order(2, 3, 30, "c")},
		[]*plugin.SinkRecord{other, order(3, 5, 50, "closed partition")})
	ctx := context.Background()
	b.waitsForTheLock(t, "Close", func() error { return b.task.Close(ctx, []plugin.TopicPartition{{Topic: "orders", Partition: 0}}) })
	// The writer may already be writing the other partition's record.
	if got, want := ordersRows(t, b.url), "1:10:a 2:20:b 3:30:c"; !strings.HasPrefix(got, want) || strings.Contains(got, "closed partition") {
		t.Fatalf("rows right after Close %q, want %q (and maybe the other partition's row)", got, want)
	}
	if err := b.task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := ordersRows(t, b.url), "1:10:a 2:20:b 3:30:c 4:40:other partition"; got != want {
		t.Fatalf("rows after Flush %q, want %q", got, want)
	}
}
