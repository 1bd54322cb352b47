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
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Task buffers records and writes them in transactions on its own writer
// goroutine, so that the runtime fetches and converts the next records
// while the database works on the previous ones.
//
// Batching adapts to the load, as a group commit does: the writer never
// idles while records are buffered. When no write is in flight, a Put's
// records are written at once (even a single record); while a write is in
// flight, Puts keep appending, and when it ends the next write takes
// everything buffered, up to batch.size records (more stays for the write
// after). Under load batches grow to batch.size by themselves; under a
// trickle each record is committed within about one transaction's time,
// without waiting for the next offset commit.
//
// The contract (Kafka Connect's SinkTask one, for a sink that writes
// asynchronously):
//   - Put appends to the buffer and returns. It blocks only while the
//     buffer already holds batch.size records, until the writer takes
//     them: memory holds at most the batch in flight, a full buffer and
//     the last Put's records.
//   - At most one write is in flight (a pgx.Conn serves one statement at
//     a time), and writes take records in put order: a batch never
//     commits after a later one, which upserts' last-write-wins relies on.
//   - A write's failure is never lost: the next Put or Flush returns it,
//     and the writer starts nothing until one has. A retriable failure
//     puts its batch back at the head of the buffer, so it is written
//     again before anything newer (the writer resumes once the failure is
//     reported); the Put that returns it leaves its own records out, since
//     the runtime puts them again. A non-retriable failure stops the
//     writer and is returned by every later Put and Flush (the task fails).
//   - Flush returns nil only once every record put so far is committed:
//     the runtime commits offsets after it, so upserts stay exactly-once
//     under redelivery. It writes nothing itself; with nothing buffered
//     and nothing in flight it returns at once. A failed Flush keeps the
//     unwritten records (the runtime may not deliver all of them again);
//     records delivered again are written again, which upserts absorb.
//   - Close holds the writer, waits for the write in flight and only then
//     drops the closed partitions' buffered records. Stop cancels the
//     write in flight and waits for the writer goroutine to end.
//
// The runtime serialises Put, Flush, Close and Stop; they and the writer
// goroutine share the fields under mu. The writer alone uses conn, writers
// and stages, except before it starts and after it ended.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter // nil without a dead letter queue or error log
	tc     plugin.SinkTaskContext
	// offConn reads the stored offsets in Open (exactly.once); the
	// runtime's goroutine's own, as conn is the writer's
	offConn *pgx.Conn

	// writer state: the writer goroutine's own
	conn    *pgx.Conn
	writers map[string]*writer // by topic; valid for the current connection
	stages  int

	ctx    context.Context // the writes' context, cancelled by Stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the writer goroutine ended; nil before Start

	mu sync.Mutex
	ws plugin.WriteState // failures and stop, its Cond on mu, signalled on every change of the fields below
	// under mu
	buf         []*plugin.SinkRecord // put and not taken by a write, in put order
	spare       []*plugin.SinkRecord // a written batch's emptied slice, reused for buf
	busy        bool                 // a write is in flight
	cancelWrite context.CancelFunc   // cancels the write in flight
	held        bool                 // Close holds the writer: no new write starts
}

// Start parses the configuration, opens the connection and starts the
// writer goroutine.
func (t *Task) Start(ctx context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	t.s, t.log, t.errant, t.tc = s, tc.Logger(), tc.ErrantRecordReporter(), tc
	t.writers = map[string]*writer{}
	conn, err := connect(ctx, config)
	if err != nil {
		return err
	}
	if s.exactlyOnce {
		if err := ensureOffsetsTable(ctx, conn, s.offsetsTable); err != nil {
			conn.Close(context.Background())
			return err
		}
	}
	t.conn = conn
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.ws.Cond = sync.NewCond(&t.mu)
	t.done = make(chan struct{})
	tc.Go(t.run)
	return nil
}

// Open seeks the partitions to the offsets stored in the database with
// exactly.once; otherwise it does nothing (tables are found on their first
// record).
func (t *Task) Open(ctx context.Context, partitions []plugin.TopicPartition) error {
	if !t.s.exactlyOnce {
		return nil
	}
	return t.openExactlyOnce(ctx, partitions)
}

// Put appends the records to the buffer, for the writer to take as soon
// as no write is in flight. It waits only while the buffer already holds
// batch.size records. It returns a failure of an earlier write instead of
// taking the records (a retriable one: the runtime puts them again).
func (t *Task) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	full := func() bool { return len(t.buf) >= t.s.batchSize }
	if err := t.ws.WaitWhile(ctx, full); err != nil {
		return plugin.Retriable(fmt.Errorf("waiting for the write in flight to make room for %d records (%d buffered): %w", len(records), len(t.buf), err))
	}
	if err := t.ws.TakeFailure(); err != nil {
		return err
	}
	t.buf = append(t.buf, records...)
	t.ws.Cond.Broadcast()
	return nil
}

// Flush returns once every record put so far is committed: it waits for
// the writer to empty the buffer and finish its write. It returns the
// first failure; unwritten records stay for the writer to try again.
func (t *Task) Flush(ctx context.Context, _ map[plugin.TopicPartition]int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	pending := func() bool { return t.busy || len(t.buf) > 0 }
	if err := t.ws.WaitWhile(ctx, pending); err != nil {
		return plugin.Retriable(fmt.Errorf("waiting for %d buffered records and the write in flight: %w", len(t.buf), err))
	}
	return t.ws.TakeFailure()
}

// Close drops buffered records of revoked partitions (they were flushed
// unless the flush failed, and another task now owns them). It holds the
// writer and waits for the write in flight first, so that no write of
// this task lands after the next owner's; when ctx ends first it cancels
// that write and still waits for it.
func (t *Task) Close(ctx context.Context, partitions []plugin.TopicPartition) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = true
	defer func() {
		t.held = false
		t.ws.Cond.Broadcast()
	}()
	if t.busy {
		stop := context.AfterFunc(ctx, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.cancelWrite != nil {
				t.cancelWrite()
			}
		})
		defer stop()
		for t.busy {
			t.ws.Cond.Wait()
		}
	}
	gone := map[plugin.TopicPartition]bool{}
	for _, tp := range partitions {
		gone[tp] = true
	}
	t.buf = slices.DeleteFunc(t.buf, func(r *plugin.SinkRecord) bool { return gone[r.TopicPartition()] })
	if len(t.buf) == 0 {
		t.ws.Failure = nil // nothing left to retry or to report
	}
	return nil
}

// Stop cancels the write in flight, waits for the writer goroutine and
// closes the connection; unflushed records are delivered again.
func (t *Task) Stop() error {
	if t.cancel != nil {
		t.cancel()
	}
	if t.done != nil {
		t.mu.Lock()
		t.ws.Stopped = true
		t.ws.Cond.Broadcast()
		t.mu.Unlock()
		<-t.done
	}
	if t.offConn != nil {
		_ = t.offConn.Close(context.Background())
		t.offConn = nil
	}
	if t.conn != nil {
		err := t.conn.Close(context.Background())
		t.conn = nil
		return err
	}
	return nil
}

// run is the writer goroutine, started through the task context's Go: it
// writes buffered records, batch.size at most at a time, whenever there
// are some and nothing holds it back. It holds mu only inside next and
// writeBatch's deferred settling, so that a panic while writing (which
// the runtime recovers, failing the task) leaves mu unlocked and the
// task's waits ended.
func (t *Task) run() error {
	defer close(t.done)
	for {
		batch, ctx, ok := t.next()
		if !ok {
			return nil
		}
		t.writeBatch(ctx, batch)
	}
}

// errWriterPanicked is the task's failure once the writer panicked.
var errWriterPanicked = errors.New("the PostgreSQL writer panicked")

// next waits for the next batch; false when the task stops. The batch's
// context is cancelled by Close and Stop through t.cancelWrite.
func (t *Task) next() ([]*plugin.SinkRecord, context.Context, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for !t.ws.Stopped && (len(t.buf) == 0 || t.held || t.ws.Failure != nil || t.ws.Fatal != nil) {
		t.ws.Cond.Wait()
	}
	if t.ws.Stopped {
		return nil, nil, false
	}
	batch := t.take()
	ctx, cancel := context.WithCancel(t.ctx)
	t.busy, t.cancelWrite = true, cancel
	t.ws.Cond.Broadcast() // room in the buffer
	return batch, ctx, true
}

// writeBatch writes one batch and settles its outcome, also when the
// write panics.
func (t *Task) writeBatch(ctx context.Context, batch []*plugin.SinkRecord) {
	done, err := 0, errWriterPanicked
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.cancelWrite != nil {
			t.cancelWrite()
		}
		t.busy, t.cancelWrite = false, nil
		t.settle(batch, done, err)
		t.ws.Cond.Broadcast()
	}()
	err = t.write(ctx, batch)
	if err != nil && !plugin.IsRetriable(err) && t.errant != nil {
		done, err = t.writeEach(ctx, batch)
	}
}

// writeEach writes the records of a batch that failed for good one at a
// time, in order, each in its own transaction, and hands those that fail
// for good themselves to the errant record reporter (errors.tolerance, the
// dead letter queue), as Kafka Connect's JDBC sink does: one bad record
// then costs one record, not the task. It returns how many records are
// done (written or reported) and the error that stopped it: a retriable
// one (the rest is written again) or one the reporter did not take.
func (t *Task) writeEach(ctx context.Context, batch []*plugin.SinkRecord) (int, error) {
	for i, r := range batch {
		err := t.write(ctx, batch[i:i+1])
		if err == nil {
			continue
		}
		if plugin.IsRetriable(err) {
			return i, err
		}
		// The reporter logs it when errors.log.enable asks for it.
		if rerr := t.errant.Report(ctx, r, err); rerr != nil {
			return i, rerr
		}
	}
	return len(batch), nil
}

// take removes the next batch from the head of the buffer.
func (t *Task) take() []*plugin.SinkRecord {
	batch := t.buf
	if n := t.s.batchSize; len(batch) > n {
		t.buf = append(t.spare, batch[n:]...)
		batch = batch[:n]
	} else {
		t.buf = t.spare
	}
	t.spare = nil
	return batch
}

// settle takes the result of a write whose first done records are
// written or reported: success frees the batch's slice for reuse, a
// retriable failure puts the rest of the batch back at the head of the
// buffer and a non-retriable one fails the task.
func (t *Task) settle(batch []*plugin.SinkRecord, done int, err error) {
	switch {
	case err == nil:
		clear(batch[:cap(batch)])
		t.spare = batch[:0]
	case plugin.IsRetriable(err):
		t.buf, t.ws.Failure = append(batch[done:], t.buf...), err
	default:
		t.ws.Fatal = err
	}
}
