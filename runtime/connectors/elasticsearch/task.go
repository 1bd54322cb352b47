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

package elasticsearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Task turns records into _bulk actions and sends them on its own
// goroutines, up to max.in.flight.requests requests at a time, while the
// runtime fetches and converts the next records.
//
// The contract (Kafka Connect's SinkTask one, for a sink that writes
// asynchronously):
//   - Put renders each record's action (a record that makes none is a bad
//     record: errors.tolerance, the dead letter queue) and appends it to
//     the buffer. It waits while max.buffered.records records are buffered
//     or in flight.
//   - A request takes batch.size actions, or fewer once the oldest has
//     waited linger.ms or a Flush asks. Requests may complete in any
//     order: with key.ignore=false every action carries the record's
//     offset as external version, so the server keeps the newest whatever
//     the order; with key.ignore=true every record is its own document.
//   - A request that still fails after max.retries (429, 5xx, network)
//     puts its unwritten records back at the head of the buffer, and the
//     next Put or Flush returns the failure once, as retriable; no request
//     starts until one has (the runtime pauses, then the records go
//     again). Nothing is dropped, so an outage is retried through.
//   - Any other failure (credentials refused, a malformed document under
//     behavior.on.malformed.documents=fail that the errors.* handling does
//     not take) is returned by every later Put and Flush: the task fails.
//   - Flush returns nil only once every record put so far was acknowledged
//     by the server; the runtime then commits their offsets.
//   - Close waits for the requests in flight, then drops the buffered
//     records of the revoked partitions. Stop cancels what is in flight.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter // nil without a dead letter queue or error log
	tc     plugin.SinkTaskContext      // starts the task's goroutines
	client *client

	ctx    context.Context // the requests' context, cancelled by Stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the dispatcher ended; nil before Start
	bodies sync.Pool     // *bytes.Buffer request bodies

	mu sync.Mutex
	ws plugin.WriteState // failures and stop, its Cond on mu, broadcast on every change of the fields below
	// under mu
	buf          []op      // rendered and not yet sent, in put order
	lingerUntil  time.Time // when the oldest buffered action has waited linger.ms
	inFlight     int       // requests in flight
	inFlightRecs int       // their records
	flushing     int       // Flush calls waiting: send partial batches at once
	held         bool      // Close holds the dispatcher
}

// Start parses the configuration and starts the dispatcher.
func (t *Task) Start(_ context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	t.s, t.log, t.errant, t.tc = s, tc.Logger(), tc.ErrantRecordReporter(), tc
	t.client = newClient(s)
	t.bodies.New = func() any { return new(bytes.Buffer) }
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.ws.Cond = sync.NewCond(&t.mu)
	t.done = make(chan struct{})
	t.tc.Go(func() error { t.dispatch(); return nil })
	return nil
}

// Open does nothing: indices are created by the server on first write.
func (t *Task) Open(context.Context, []plugin.TopicPartition) error { return nil }

// Put renders the records' actions and buffers them for the dispatcher.
func (t *Task) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	t.mu.Lock()
	full := func() bool { return len(t.buf)+t.inFlightRecs >= t.s.maxBuffered }
	err := t.ws.WaitWhile(ctx, full)
	if err == nil {
		err = t.ws.TakeFailure()
	}
	t.mu.Unlock()
	if err != nil {
		return err
	}
	ops := make([]op, 0, len(records))
	for _, r := range records {
		o, err := t.s.build(r)
		switch {
		case err == nil:
			ops = append(ops, o)
		case errors.Is(err, errSkip):
		default:
			if err := t.badRecord(ctx, r, fmt.Errorf("record %s cannot be written: %w", position(r), err)); err != nil {
				return err
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) == 0 {
		t.lingerUntil = time.Now().Add(t.s.linger)
		if t.s.linger > 0 {
			time.AfterFunc(t.s.linger, t.ws.Wake)
		}
	}
	t.buf = append(t.buf, ops...)
	t.ws.Cond.Broadcast()
	return nil
}

// badRecord hands a record that cannot be written to the errors.*
// handling (which skips it under errors.tolerance=all, after the dead
// letter queue took it), or returns the error that fails the task.
func (t *Task) badRecord(ctx context.Context, r *plugin.SinkRecord, err error) error {
	if t.errant == nil {
		return err
	}
	return t.errant.Report(ctx, r, err)
}

// Flush sends every buffered action and returns once the server
// acknowledged them all, or with the first failure.
func (t *Task) Flush(ctx context.Context, _ map[plugin.TopicPartition]int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushing++
	t.ws.Cond.Broadcast()
	defer func() { t.flushing-- }()
	pending := func() bool { return len(t.buf) > 0 || t.inFlight > 0 }
	if err := t.ws.WaitWhile(ctx, pending); err != nil {
		return plugin.Retriable(fmt.Errorf("waiting for %d buffered and %d in-flight records: %w", len(t.buf), t.inFlightRecs, err))
	}
	return t.ws.TakeFailure()
}

// Close waits for the requests in flight (so none of this task lands
// after the next owner's), then drops the revoked partitions' buffered
// actions.
func (t *Task) Close(ctx context.Context, partitions []plugin.TopicPartition) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = true
	defer func() {
		t.held = false
		t.ws.Cond.Broadcast()
	}()
	if err := t.ws.WaitWhile(ctx, func() bool { return t.inFlight > 0 }); err != nil {
		t.log.Warn("closing partitions with requests still in flight", "requests", t.inFlight, "error", err)
	}
	gone := map[plugin.TopicPartition]bool{}
	for _, tp := range partitions {
		gone[tp] = true
	}
	t.buf = slices.DeleteFunc(t.buf, func(o op) bool { return gone[o.rec.TopicPartition()] })
	if len(t.buf) == 0 {
		t.ws.Failure = nil // nothing left to retry
	}
	return nil
}

// Stop cancels the requests in flight and waits for them.
func (t *Task) Stop() error {
	if t.done == nil {
		return nil
	}
	t.cancel()
	t.mu.Lock()
	t.ws.Stopped = true
	t.ws.Cond.Broadcast()
	t.mu.Unlock()
	<-t.done
	t.client.close()
	return nil
}

// ready says whether the dispatcher should start a request now.
func (t *Task) ready() bool {
	if len(t.buf) == 0 || t.held || t.ws.Failure != nil || t.ws.Fatal != nil || t.inFlight >= t.s.maxInFlight {
		return false
	}
	return len(t.buf) >= t.s.batchSize || t.flushing > 0 || !time.Now().Before(t.lingerUntil)
}

// dispatch starts a request whenever ready, and waits for every request
// once the task stops.
func (t *Task) dispatch() {
	defer close(t.done)
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		for !t.ws.Stopped && !t.ready() {
			t.ws.Cond.Wait()
		}
		if t.ws.Stopped {
			for t.inFlight > 0 {
				t.ws.Cond.Wait()
			}
			return
		}
		n := min(len(t.buf), t.s.batchSize)
		batch := slices.Clone(t.buf[:n])
		t.buf = slices.Delete(t.buf, 0, n)
		if len(t.buf) > 0 {
			t.lingerUntil = time.Now() // the rest has waited long enough
		}
		t.inFlight++
		t.inFlightRecs += n
		t.tc.Go(func() error { return t.request(batch) })
	}
}

// request sends one batch and settles its outcome, also when sending
// panics (the runtime recovers the panic and fails the task; settle ends
// the task's waits).
func (t *Task) request(batch []op) error {
	err, left := error(errRequestPanicked), []op(nil)
	defer func() { t.settle(len(batch), left, err) }()
	body := t.bodies.Get().(*bytes.Buffer)
	out := t.client.send(t.ctx, batch, body)
	if body.Cap() <= 64<<20 {
		t.bodies.Put(body)
	}
	err, left = out.err, out.left
	for _, rj := range out.rejected {
		if err != nil && !plugin.IsRetriable(err) {
			break
		}
		if rerr := t.malformed(rj); rerr != nil {
			err = rerr
		}
	}
	return nil
}

// errRequestPanicked is the task's failure once a request panicked.
var errRequestPanicked = errors.New("a _bulk request panicked")

// settle records the outcome of a request of n records: left are those
// not written when err is retriable.
func (t *Task) settle(n int, left []op, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	t.inFlightRecs -= n
	switch {
	case err == nil:
	case plugin.IsRetriable(err) && !t.ws.Stopped:
		t.buf = append(slices.Clip(left), t.buf...)
		if t.ws.Failure == nil {
			t.ws.Failure = err
		}
		t.log.Warn("a _bulk request failed after its retries; its records stay buffered and go again", "records", len(left), "error", err)
	case plugin.IsRetriable(err):
	default:
		if t.ws.Fatal == nil {
			t.ws.Fatal = err
		}
	}
	t.ws.Cond.Broadcast()
}

// malformed applies behavior.on.malformed.documents to a refused document.
func (t *Task) malformed(rj rejection) error {
	switch t.s.malformed {
	case BehaviorIgnore:
		return nil
	case BehaviorWarn:
		t.log.Warn("skipping a document the server refused", "topic", rj.rec.Topic, "partition", rj.rec.Partition, "offset", rj.rec.Offset, "status", rj.status, "reason", rj.reason)
		return nil
	}
	return t.badRecord(t.ctx, rj.rec, rj.error())
}
