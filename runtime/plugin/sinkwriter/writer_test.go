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

package sinkwriter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// The contract test drives a Writer whose Write is the test's own: each
// call hands its batch to the test and waits for the test's answer, so
// the test decides when every write ends and how. It is the Writer under
// test, not a destination: each bundled sink's own tests run it against
// the real system.

// item is a record's offset on a partition.
type item struct {
	p   int32
	off int64
}

func (it item) TopicPartition() plugin.TopicPartition {
	return plugin.TopicPartition{Topic: "t", Partition: it.p}
}

func (it item) String() string { return fmt.Sprintf("%d/%d", it.p, it.off) }

// call is one Write waiting for the test's answer.
type call struct {
	ctx   context.Context
	batch []item
	reply chan answer
}

type answer struct {
	unwritten []item
	err       error
	panic     bool
}

// rig is a started Writer and the calls of its Write.
type rig struct {
	w     *Writer[item]
	tc    *plugintest.SinkTaskContext
	calls chan call
}

func start(t *testing.T, cfg Config[item]) *rig {
	t.Helper()
	r := &rig{tc: plugintest.NewSinkTaskContext(), calls: make(chan call, 16)}
	cfg.Name = "test"
	cfg.Go = r.tc.Go
	cfg.Write = func(ctx context.Context, batch []item) ([]item, error) {
		c := call{ctx: ctx, batch: batch, reply: make(chan answer, 1)}
		r.calls <- c
		select {
		case a := <-c.reply:
			if a.panic {
				panic("the write blew up")
			}
			return a.unwritten, a.err
		case <-ctx.Done():
			return batch, plugin.Retriable(fmt.Errorf("cut short: %w", ctx.Err()))
		}
	}
	r.w = Start(cfg)
	t.Cleanup(r.w.Stop)
	return r
}

// next waits for the next Write call.
func (r *rig) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-r.calls:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no write started within 20s")
		return call{}
	}
}

// none checks that no write starts for a while.
func (r *rig) none(t *testing.T, why string) {
	t.Helper()
	select {
	case c := <-r.calls:
		t.Fatalf("a write of %v started; want none: %s", c.batch, why)
	case <-time.After(200 * time.Millisecond):
	}
}

// put is a task's Put.
func (r *rig) put(ctx context.Context, items ...item) error { return r.w.Put(ctx, items) }

func items(p int32, from, to int64) []item {
	var out []item
	for o := from; o < to; o++ {
		out = append(out, item{p, o})
	}
	return out
}

func want(t *testing.T, what string, got, want []item) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// flushAsync runs Flush on a goroutine of the test.
func flushAsync(w *Writer[item]) chan error {
	out := make(chan error, 1)
	go func() { out <- w.Flush(context.Background(), nil) }()
	return out
}

func recv(t *testing.T, what string, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return within 20s", what)
		return nil
	}
}

func TestContract(t *testing.T) {
	ctx := context.Background()

	// Group commit: a write starts at once; while it is in flight, items
	// queue, and the next write takes everything queued up to BatchSize,
	// in queue order. Flush returns once all is written.
	t.Run("batches in order", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 3})
		_ = r.put(ctx, item{0, 0})
		first := r.next(t)
		want(t, "first write", first.batch, items(0, 0, 1))
		_ = r.put(ctx, items(0, 1, 3)...)
		_ = r.put(ctx, items(0, 3, 5)...)
		r.none(t, "one write at a time")
		flushed := flushAsync(r.w)
		first.reply <- answer{}
		c := r.next(t)
		want(t, "second write", c.batch, items(0, 1, 4))
		c.reply <- answer{}
		c = r.next(t)
		want(t, "third write", c.batch, items(0, 4, 5))
		c.reply <- answer{}
		if err := recv(t, "Flush", flushed); err != nil {
			t.Fatal(err)
		}
	})

	// Ready waits while MaxQueued items are queued; when its context ends
	// it gives up retriably, taking nothing.
	t.Run("bounded queue", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 2, MaxQueued: 2})
		_ = r.put(ctx, item{0, 0})
		first := r.next(t)
		_ = r.put(ctx, items(0, 1, 3)...)
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := r.w.Ready(short); !plugin.IsRetriable(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Ready with a full queue and an ending context: %v, want a retriable deadline error", err)
		}
		ready := make(chan error, 1)
		go func() { ready <- r.w.Ready(ctx) }()
		select {
		case err := <-ready:
			t.Fatalf("Ready returned %v with the queue full", err)
		case <-time.After(100 * time.Millisecond):
		}
		first.reply <- answer{}
		if err := recv(t, "Ready", ready); err != nil {
			t.Fatal(err)
		}
		r.next(t).reply <- answer{}
	})

	// MaxHeld counts the items in flight too.
	t.Run("bounded queue and flight", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10, MaxHeld: 3})
		_ = r.put(ctx, items(0, 0, 3)...)
		c := r.next(t)
		if st := r.w.State(); st.InFlight != 3 || st.Queued != 0 {
			t.Fatalf("state %+v, want 3 in flight", st)
		}
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := r.w.Ready(short); !plugin.IsRetriable(err) {
			t.Fatalf("Ready with 3 items in flight: %v, want it to wait", err)
		}
		c.reply <- answer{}
		if err := r.w.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// Up to MaxInFlight writes run at once, never more.
	t.Run("in-flight limit", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 1, MaxInFlight: 2})
		_ = r.put(ctx, items(0, 0, 3)...)
		a, b := r.next(t), r.next(t)
		r.none(t, "two writes in flight")
		b.reply <- answer{}
		c := r.next(t)
		got := append(append(a.batch, b.batch...), c.batch...)
		slices.SortFunc(got, func(x, y item) int { return int(x.off - y.off) }) // two writes start at once
		want(t, "writes", got, items(0, 0, 3))
		a.reply <- answer{}
		c.reply <- answer{}
		if err := r.w.Flush(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})

	// A partial batch waits Linger, or a Flush.
	t.Run("linger", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10, Linger: time.Hour})
		_ = r.put(ctx, items(0, 0, 2)...)
		r.none(t, "a partial batch lingers")
		flushed := flushAsync(r.w)
		c := r.next(t)
		want(t, "the write Flush asked for", c.batch, items(0, 0, 2))
		c.reply <- answer{}
		if err := recv(t, "Flush", flushed); err != nil {
			t.Fatal(err)
		}
		r2 := start(t, Config[item]{BatchSize: 10, Linger: 50 * time.Millisecond})
		_ = r2.put(ctx, item{0, 0})
		r2.next(t).reply <- answer{}
	})

	// PutRecords queues what render makes of the records: a record it
	// skips makes nothing, one it fails for goes to the errant record
	// reporter, or fails the Put (queueing nothing) without one.
	t.Run("put records", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10, Linger: time.Hour})
		render := func(rec *plugin.SinkRecord) (item, error) {
			switch rec.Offset % 3 {
			case 1:
				return item{}, ErrSkip
			case 2:
				return item{}, fmt.Errorf("record %d is bad", rec.Offset)
			}
			return item{rec.Partition, rec.Offset}, nil
		}
		var recs []*plugin.SinkRecord
		for o := range int64(6) {
			recs = append(recs, &plugin.SinkRecord{Topic: "t", Partition: 0, Offset: o})
		}
		if err := r.w.PutRecords(ctx, recs, render, nil); err == nil || err.Error() != "record 2 is bad" {
			t.Fatalf("PutRecords without a reporter: %v, want the bad record's error", err)
		}
		if st := r.w.State(); st.Queued != 0 {
			t.Fatalf("%d items queued by the failed Put", st.Queued)
		}
		errant := &plugintest.ErrantRecords{Tolerate: true}
		if err := r.w.PutRecords(ctx, recs, render, errant); err != nil {
			t.Fatal(err)
		}
		if got, _ := errant.Reported(); len(got) != 2 || got[0].Offset != 2 || got[1].Offset != 5 {
			t.Fatalf("reported %v, want records 2 and 5", got)
		}
		flushed := flushAsync(r.w)
		c := r.next(t)
		want(t, "the write", c.batch, []item{{0, 0}, {0, 3}})
		c.reply <- answer{}
		if err := recv(t, "Flush", flushed); err != nil {
			t.Fatal(err)
		}
	})

	// A retriable failure is reported once, by the next Ready or Flush;
	// the writer starts nothing until then, and writes the unwritten items
	// again before anything newer.
	t.Run("retriable failure", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10})
		_ = r.put(ctx, items(0, 0, 3)...)
		c := r.next(t)
		_ = r.put(ctx, item{0, 3})
		c.reply <- answer{unwritten: items(0, 1, 3), err: plugin.Retriable(errors.New("busy"))}
		testkit.EventuallyTrue(t, 20*time.Second, "the failure recorded", func() bool { return r.w.State().Failure != nil })
		r.none(t, "the failure is not reported yet")
		if err := r.put(ctx, item{0, 4}); !plugin.IsRetriable(err) || !strings.Contains(err.Error(), "busy") {
			t.Fatalf("Put after the failure: %v, want it", err)
		}
		if err := r.w.Err(); err != nil {
			t.Fatalf("Err after the failure was reported: %v", err)
		}
		c = r.next(t)
		want(t, "the write after the failure", c.batch, items(0, 1, 4))
		c.reply <- answer{}
		if err := r.w.Flush(ctx, nil); err != nil {
			t.Fatalf("second report of a retriable failure: %v", err)
		}
	})

	// A fatal failure is returned by every later Ready and Flush.
	t.Run("fatal failure", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10})
		_ = r.put(ctx, items(0, 0, 2)...)
		r.next(t).reply <- answer{unwritten: items(0, 0, 2), err: errors.New("refused")}
		for i := range 3 {
			if err := r.w.Flush(ctx, nil); err == nil || plugin.IsRetriable(err) || err.Error() != "refused" {
				t.Fatalf("Flush %d: %v, want the fatal failure", i, err)
			}
			if err := r.w.Ready(ctx); err == nil || err.Error() != "refused" {
				t.Fatalf("Ready %d: %v, want the fatal failure", i, err)
			}
			if err := r.w.Err(); err == nil || err.Error() != "refused" {
				t.Fatalf("Err %d: %v, want the fatal failure", i, err)
			}
		}
	})

	// A write that panics fails the task through the task context's Go,
	// and Flush returns instead of waiting for ever.
	t.Run("panic", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10})
		_ = r.put(ctx, item{0, 0})
		r.next(t).reply <- answer{panic: true}
		if err := recv(t, "Flush", flushAsync(r.w)); !errors.Is(err, ErrPanicked) || err.Error() != "test: the writer panicked" {
			t.Fatalf("Flush after the panic: %v", err)
		}
		// Flush returns once the deferred settling ran, while the panic
		// unwinds, before the task context's Go records it.
		testkit.EventuallyTrue(t, 5*time.Second, "the panic recorded", func() bool { return len(r.tc.Failures.Errors()) > 0 })
		fails := r.tc.Failures.Errors()
		if len(fails) != 1 || !guard.IsPanic(fails[0]) || !strings.Contains(fails[0].Error(), "the write blew up") {
			t.Fatalf("task failures %v, want the panic", fails)
		}
	})

	// Close waits for the write in flight, then drops the revoked
	// partition's queued items; the others are written.
	t.Run("close", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10})
		_ = r.put(ctx, item{0, 0})
		c := r.next(t)
		_ = r.put(ctx, item{0, 1}, item{1, 1}, item{0, 2})
		closed := make(chan error, 1)
		go func() { closed <- r.w.Close(ctx, []plugin.TopicPartition{{Topic: "t", Partition: 0}}) }()
		select {
		case <-closed:
			t.Fatal("Close returned with a write in flight")
		case <-time.After(100 * time.Millisecond):
		}
		r.none(t, "Close holds the writer")
		c.reply <- answer{}
		if err := recv(t, "Close", closed); err != nil {
			t.Fatal(err)
		}
		c = r.next(t)
		want(t, "the write after Close", c.batch, []item{{1, 1}})
		c.reply <- answer{}
	})

	// A Close whose context ends cancels the write in flight and still
	// waits for it; the cut-short batch is queued again, its revoked
	// items dropped, and its failure reported, since items remain.
	t.Run("close cancels", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10})
		_ = r.put(ctx, item{0, 0}, item{1, 0})
		c := r.next(t)
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_ = r.w.Close(short, []plugin.TopicPartition{{Topic: "t", Partition: 0}})
		if c.ctx.Err() == nil {
			t.Fatal("the write in flight was not cancelled")
		}
		if st := r.w.State(); st.Writes != 0 || st.Queued != 1 || !plugin.IsRetriable(st.Failure) {
			t.Fatalf("after Close: %+v, want no write, 1 queued and the retriable failure", st)
		}
		if err := r.w.Flush(ctx, nil); !plugin.IsRetriable(err) {
			t.Fatalf("Flush: %v, want the cut-short write's failure", err)
		}
		c = r.next(t)
		want(t, "the write after Close", c.batch, []item{{1, 0}})
		c.reply <- answer{}
		// Nothing left to write again: the failure is forgotten.
		_ = r.put(ctx, item{0, 1})
		c = r.next(t)
		c.reply <- answer{unwritten: c.batch, err: plugin.Retriable(errors.New("busy"))}
		testkit.EventuallyTrue(t, 20*time.Second, "the failure recorded", func() bool { return r.w.State().Failure != nil })
		_ = r.w.Close(ctx, []plugin.TopicPartition{{Topic: "t", Partition: 0}})
		if err := r.w.Flush(ctx, nil); err != nil {
			t.Fatalf("Flush after closing the only failed partition: %v", err)
		}
	})

	// Stop cancels the write in flight and waits for it; later waits end.
	t.Run("stop", func(t *testing.T) {
		r := start(t, Config[item]{BatchSize: 10, MaxQueued: 1})
		_ = r.put(ctx, item{0, 0})
		c := r.next(t)
		_ = r.put(ctx, item{0, 1})
		ready := make(chan error, 1)
		go func() { ready <- r.w.Ready(ctx) }()
		r.w.Stop()
		if c.ctx.Err() == nil {
			t.Fatal("the write in flight was not cancelled")
		}
		if err := recv(t, "Ready", ready); !errors.Is(err, ErrStopped) {
			t.Fatalf("Ready during Stop: %v, want ErrStopped", err)
		}
		if st := r.w.State(); st.Writes != 0 || st.Failure != nil || st.Fatal != nil {
			t.Fatalf("after Stop: %+v", st)
		}
	})
}
