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

// Package sinkwriter is the asynchronous half of a sink task: a bounded
// queue that Put fills, writer goroutines that take batches from it, and
// the hand-off of their failures to the next Put or Flush. A sink supplies
// only the write of one batch; Writer does the rest of Kafka Connect's
// SinkTask contract for a sink that writes in the background:
//
//   - Ready (called by Put before it takes its records) waits while the
//     queue is full, then returns a failure of an earlier write: a
//     retriable one once (the runtime puts the same records again), a
//     fatal one every time (the task fails). Add queues the records.
//   - The writer starts a write whenever items are queued, fewer than
//     MaxInFlight writes are in flight, no failure waits to be reported
//     and no Close holds it; a write takes up to BatchSize items, in queue
//     order, once BatchSize are queued, a Flush waits or the oldest has
//     waited Linger (with Linger 0, at once: group commit).
//   - A write that fails retriably puts the items it did not write back at
//     the head of the queue, so they go before anything newer, and the
//     writer starts nothing until the failure was reported. Any other
//     failure (and a panic of the write, which the task context's Go
//     recovers and fails the task with) is fatal.
//   - Flush returns nil only once every item queued so far is written.
//   - Close holds the writer, waits for the writes in flight (cancelling
//     them when its context ends, and still waiting), and only then drops
//     the queued items of the revoked partitions: no write of this task
//     lands after the next owner's.
//   - Stop cancels the writes in flight and waits for every goroutine.
package sinkwriter

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Item is what a sink queues: a record, or what it made of records, that
// knows its partition (for Close).
type Item interface {
	TopicPartition() plugin.TopicPartition
}

// Config is what a sink tells its Writer.
type Config[T Item] struct {
	// Name names the destination in errors and logs ("PostgreSQL").
	Name string
	// Write writes one batch. It returns nil once every item is written
	// (or handed to the errant record reporter); otherwise its error and
	// the items it did not write. A retriable error (plugin.ErrRetriable)
	// queues those items again; any other fails the task. ctx ends when
	// the task stops or a Close gives up waiting: a write that is cut
	// short returns a retriable error (never nil).
	Write func(ctx context.Context, batch []T) (unwritten []T, err error)
	// BatchSize is the most items one write takes (at least 1).
	BatchSize int
	// MaxInFlight is the most writes at once (0: 1). With more than one,
	// writes may complete out of order.
	MaxInFlight int
	// MaxQueued bounds the items queued and not yet taken by a write;
	// MaxHeld bounds those plus the items in flight. Ready waits while
	// either bound (when above 0) is reached.
	MaxQueued, MaxHeld int
	// Linger is how long a write waits for BatchSize items once the
	// oldest was queued (0: it starts at once).
	Linger time.Duration
	// Go starts a goroutine the runtime watches (the task context's Go).
	Go func(func() error)
	// Log, when set, is told of retriable failures.
	Log *slog.Logger
}

// Writer is the queue and the writer goroutines of one sink task. Its
// methods are called from the task's Put, Flush, PreCommit, Close and
// Stop, which the runtime never runs at once. A task embeds it: its Open,
// Flush and Close are a plugin.SinkTask's (and its Put too, for a sink
// that queues the records themselves); the task adds Start, a Stop that
// calls the Writer's, and a Put that calls PutRecords where it renders
// records first.
type Writer[T Item] struct {
	cfg    Config[T]
	ctx    context.Context // the writes' context, cancelled by Stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the dispatcher and every write ended

	mu          sync.Mutex
	cond        *sync.Cond // on mu, broadcast on every change of the fields below
	queue       []T
	flights     map[*flight[T]]struct{}
	inFlight    int // items in flight
	lingerUntil time.Time
	flushing    int  // Flush calls waiting: partial batches go at once
	held        bool // Close holds the writer
	failure     error
	fatal       error
	stopped     bool
}

// flight is one write in flight.
type flight[T Item] struct {
	batch  []T
	cancel context.CancelFunc
}

// Start makes a Writer and starts its dispatcher through cfg.Go.
func Start[T Item](cfg Config[T]) *Writer[T] {
	cfg.BatchSize = max(cfg.BatchSize, 1)
	cfg.MaxInFlight = max(cfg.MaxInFlight, 1)
	w := &Writer[T]{cfg: cfg, done: make(chan struct{}), flights: map[*flight[T]]struct{}{}}
	w.cond = sync.NewCond(&w.mu)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	cfg.Go(func() error { w.dispatch(); return nil })
	return w
}

// Ready waits while the queue is full, then returns the failure Put must
// report (see the package doc); nil means Put may Add its items. When
// ctx ends first it returns a retriable error.
func (w *Writer[T]) Ready(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.waitWhile(ctx, w.full); err != nil {
		return plugin.Retriable(fmt.Errorf("waiting for %s to take %d queued and %d in-flight items: %w", w.cfg.Name, len(w.queue), w.inFlight, err))
	}
	return w.takeFailure()
}

// full tells whether Ready waits.
func (w *Writer[T]) full() bool {
	return (w.cfg.MaxQueued > 0 && len(w.queue) >= w.cfg.MaxQueued) ||
		(w.cfg.MaxHeld > 0 && len(w.queue)+w.inFlight >= w.cfg.MaxHeld)
}

// Put queues items after Ready allowed it, or returns what Ready
// returned.
func (w *Writer[T]) Put(ctx context.Context, items []T) error {
	if err := w.Ready(ctx); err != nil {
		return err
	}
	w.Add(items...)
	return nil
}

// PutRecords is the Put of a sink that renders each record into an item
// first: it waits as Ready does, then renders the records and queues
// their items. A record that render fails for goes to errant
// (errors.tolerance, the dead letter queue), or fails the Put when errant
// is nil or refuses it; one that render answers ErrSkip for makes no item.
func (w *Writer[T]) PutRecords(ctx context.Context, records []*plugin.SinkRecord, render func(*plugin.SinkRecord) (T, error), errant plugin.ErrantRecordReporter) error {
	if err := w.Ready(ctx); err != nil {
		return err
	}
	items := make([]T, 0, len(records))
	for _, r := range records {
		it, err := render(r)
		switch {
		case err == nil:
			items = append(items, it)
		case errors.Is(err, ErrSkip):
		case errant == nil:
			return err
		default:
			if rerr := errant.Report(ctx, r, err); rerr != nil {
				return rerr
			}
		}
	}
	w.Add(items...)
	return nil
}

// Add queues items for the writer, without waiting; call Ready first.
func (w *Writer[T]) Add(items ...T) {
	if len(items) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.lingerUntil = time.Now().Add(w.cfg.Linger)
		if w.cfg.Linger > 0 {
			time.AfterFunc(w.cfg.Linger, w.wake)
		}
	}
	w.queue = append(w.queue, items...)
	w.cond.Broadcast()
}

// Flush waits until every item queued so far is written and returns the
// failure to report (see Ready); it needs no offsets. When ctx ends
// first it returns a retriable error; the items stay queued.
func (w *Writer[T]) Flush(ctx context.Context, _ map[plugin.TopicPartition]int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushing++
	w.cond.Broadcast()
	defer func() { w.flushing-- }()
	pending := func() bool { return len(w.queue) > 0 || len(w.flights) > 0 }
	if err := w.waitWhile(ctx, pending); err != nil {
		return plugin.Retriable(fmt.Errorf("waiting for %s to write %d queued and %d in-flight items: %w", w.cfg.Name, len(w.queue), w.inFlight, err))
	}
	return w.takeFailure()
}

// Err returns the failure Put must report, without waiting (see Ready):
// for a Put that may queue nothing, and a PreCommit.
func (w *Writer[T]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.takeFailure()
}

// Close holds the writer, waits for the writes in flight (cancelling them
// once ctx ends, and still waiting), then drops the queued items of the
// revoked partitions. A retriable failure with nothing left queued is
// forgotten: there is nothing to write again. It returns nil.
func (w *Writer[T]) Close(ctx context.Context, partitions []plugin.TopicPartition) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = true
	defer func() {
		w.held = false
		w.cond.Broadcast()
	}()
	if len(w.flights) > 0 {
		stop := context.AfterFunc(ctx, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			for f := range w.flights {
				f.cancel()
			}
		})
		for len(w.flights) > 0 {
			w.cond.Wait()
		}
		stop()
	}
	gone := make(map[plugin.TopicPartition]bool, len(partitions))
	for _, tp := range partitions {
		gone[tp] = true
	}
	w.queue = slices.DeleteFunc(w.queue, func(it T) bool { return gone[it.TopicPartition()] })
	if len(w.queue) == 0 {
		w.failure = nil
	}
	return nil
}

// Open does nothing: a task with state per partition (offsets kept in
// the destination) has an Open of its own.
func (w *Writer[T]) Open(context.Context, []plugin.TopicPartition) error { return nil }

// Stop cancels the writes in flight and waits for every goroutine of the
// Writer; queued items are dropped (they were not flushed, so the runtime
// delivers them again). Stop on a nil Writer does nothing.
func (w *Writer[T]) Stop() {
	if w == nil {
		return
	}
	w.cancel()
	w.mu.Lock()
	w.stopped = true
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.done
}

// Pending yields the items queued or in flight, in no set order, with the
// Writer's lock held: yield must not call the Writer. For a sink that
// commits only what is written (plugin.SinkPreCommitter).
func (w *Writer[T]) Pending() iter.Seq[T] {
	return func(yield func(T) bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for f := range w.flights {
			for _, it := range f.batch {
				if !yield(it) {
					return
				}
			}
		}
		for _, it := range w.queue {
			if !yield(it) {
				return
			}
		}
	}
}

// State is a Writer's state, for tests.
type State struct {
	// Writes and InFlight count the writes in flight and their items;
	// Queued the items waiting for a write.
	Writes, InFlight, Queued int
	// Failure and Fatal are the failures not reported yet (Fatal is
	// reported every time).
	Failure, Fatal error
}

// State returns the Writer's state.
func (w *Writer[T]) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return State{Writes: len(w.flights), InFlight: w.inFlight, Queued: len(w.queue), Failure: w.failure, Fatal: w.fatal}
}

var (
	// ErrStopped is what a wait returns once the Writer is stopped.
	ErrStopped = errors.New("the task is stopped")
	// ErrSkip is what a render answers for a record that makes no item
	// on purpose (PutRecords).
	ErrSkip = errors.New("the record makes no item")
	// ErrPanicked is the fatal failure of a write that panicked.
	ErrPanicked = errors.New("the writer panicked")
)

// waitWhile waits with mu held while pending holds, there is no failure
// to report and the Writer runs. It returns ctx's cause when ctx ends
// first, and ErrStopped once the Writer is stopped with no failure to
// report.
func (w *Writer[T]) waitWhile(ctx context.Context, pending func() bool) error {
	blocked := func() bool { return pending() && w.failure == nil && w.fatal == nil && !w.stopped }
	if blocked() {
		stop := context.AfterFunc(ctx, w.wake)
		defer stop()
		for blocked() {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			w.cond.Wait()
		}
	}
	if w.stopped && w.fatal == nil && w.failure == nil {
		return ErrStopped
	}
	return nil
}

// takeFailure returns the fatal failure every time, a retriable one once
// (the writer then resumes).
func (w *Writer[T]) takeFailure() error {
	if w.fatal != nil {
		return w.fatal
	}
	err := w.failure
	if err != nil {
		w.failure = nil
		w.cond.Broadcast()
	}
	return err
}

// wake broadcasts cond, taking mu: for timers and context callbacks.
func (w *Writer[T]) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cond.Broadcast()
}

// ready tells whether the dispatcher starts a write now.
func (w *Writer[T]) ready() bool {
	if len(w.queue) == 0 || w.held || w.failure != nil || w.fatal != nil || len(w.flights) >= w.cfg.MaxInFlight {
		return false
	}
	return len(w.queue) >= w.cfg.BatchSize || w.flushing > 0 || !time.Now().Before(w.lingerUntil)
}

// dispatch starts a write whenever ready, and once the Writer stops waits
// for the writes in flight.
func (w *Writer[T]) dispatch() {
	defer close(w.done)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for !w.stopped && !w.ready() {
			w.cond.Wait()
		}
		if w.stopped {
			for len(w.flights) > 0 {
				w.cond.Wait()
			}
			return
		}
		n := min(len(w.queue), w.cfg.BatchSize)
		f := &flight[T]{batch: slices.Clone(w.queue[:n])}
		w.queue = slices.Delete(w.queue, 0, n)
		if len(w.queue) > 0 {
			w.lingerUntil = time.Now() // the rest has waited long enough
		}
		var ctx context.Context
		ctx, f.cancel = context.WithCancel(w.ctx)
		w.flights[f] = struct{}{}
		w.inFlight += n
		w.cond.Broadcast() // room in the queue
		w.cfg.Go(func() error { w.write(ctx, f); return nil })
	}
}

// write runs one write and settles its outcome, also when it panics (the
// task context's Go recovers the panic and fails the task; settling ends
// the waits of Put, Flush and Close).
func (w *Writer[T]) write(ctx context.Context, f *flight[T]) {
	unwritten, err := f.batch, error(fmt.Errorf("%s: %w", w.cfg.Name, ErrPanicked))
	defer func() { w.settle(f, unwritten, err) }()
	unwritten, err = w.cfg.Write(ctx, f.batch)
}

// settle records the outcome of a write.
func (w *Writer[T]) settle(f *flight[T], unwritten []T, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f.cancel()
	delete(w.flights, f)
	w.inFlight -= len(f.batch)
	switch {
	case err == nil:
	case w.stopped:
		// Stopping: the items are delivered again.
	case plugin.IsRetriable(err):
		w.queue = append(slices.Clip(unwritten), w.queue...)
		if w.failure == nil {
			w.failure = err
		}
		if w.cfg.Log != nil {
			w.cfg.Log.Warn("a write failed; its items stay queued and go again", "destination", w.cfg.Name, "items", len(unwritten), "error", err)
		}
	default:
		if w.fatal == nil {
			w.fatal = err
		}
	}
	w.cond.Broadcast()
}
