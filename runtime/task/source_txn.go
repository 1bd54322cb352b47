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
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// ExactlyOnce runs a source task transactionally (KIP-618): its producer
// has a transactional.id, and each transaction carries the records of a
// stretch of polls together with their source offsets, written to the
// offsets topic by the same producer. A new instance of the task fences
// the one before it when it starts (InitProducerID with the same id), so a
// zombie's transaction can never commit.
type ExactlyOnce struct {
	// TransactionalID of the task's producer; required
	// (connectnames.TransactionalID).
	TransactionalID string
	// Boundary is plugin.BoundaryPoll (default), BoundaryInterval or
	// BoundaryConnector.
	Boundary string
	// Interval is the length of a BoundaryInterval transaction; default
	// the runner's OffsetFlushInterval.
	Interval time.Duration
}

// TransactionalOffsets is an OffsetStore whose offsets a transactional
// producer writes itself, inside its transactions.
type TransactionalOffsets interface {
	OffsetStore
	// OffsetRecords encodes offsets as records of the offsets topic.
	OffsetRecords(connector string, offsets []SourceOffset) ([]*kgo.Record, error)
	// ReadToEnd returns once the store applied every committed write made
	// before the call (the task reads its offsets after it).
	ReadToEnd(ctx context.Context) error
}

// txnCommitter is the transactional side of a SourceRunner: it begins,
// commits and aborts the producer's transactions. Every method runs on
// the runner's goroutine; the TransactionContext's calls (from Poll)
// only record requests under mu.
type txnCommitter struct {
	r       *SourceRunner
	cfg     ExactlyOnce
	offsets TransactionalOffsets
	open    bool      // a transaction was begun
	began   time.Time // when it was begun

	mu      sync.Mutex
	request txnRequest
}

type txnRequest struct {
	commit, abort bool
	after         *plugin.SourceRecord // commit/abort once this record is sent
}

func newTxnCommitter(r *SourceRunner, cfg ExactlyOnce) (*txnCommitter, error) {
	if cfg.TransactionalID == "" {
		return nil, fmt.Errorf("task %s: ExactlyOnce.TransactionalID is empty", r.cfg.ID)
	}
	to, ok := r.cfg.Offsets.(TransactionalOffsets)
	if !ok {
		return nil, fmt.Errorf("task %s: exactly-once needs an offset store that writes inside transactions (%T does not)", r.cfg.ID, r.cfg.Offsets)
	}
	switch cfg.Boundary {
	case "":
		cfg.Boundary = plugin.BoundaryPoll
	case plugin.BoundaryPoll, plugin.BoundaryInterval, plugin.BoundaryConnector:
	default:
		return nil, fmt.Errorf("task %s: %s=%q: use %s, %s or %s", r.cfg.ID, plugin.KeyTransactionBoundary, cfg.Boundary,
			plugin.BoundaryPoll, plugin.BoundaryInterval, plugin.BoundaryConnector)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = r.cfg.OffsetFlushInterval
	}
	return &txnCommitter{r: r, cfg: cfg, offsets: to}, nil
}

// producerOpts are the transactional producer's options.
func (t *txnCommitter) producerOpts() []kgo.Opt {
	return []kgo.Opt{kgo.TransactionalID(t.cfg.TransactionalID)}
}

// init fences earlier instances of the task (InitProducerID with the
// task's transactional.id: the broker aborts their open transaction and
// refuses their commits from now on), then reads the offsets topic to its
// last stable offset, so the task resumes from what committed last.
func (t *txnCommitter) init(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(ctx, max(t.r.cfg.OffsetFlushTimeout, 30*time.Second))
	defer cancel()
	if _, _, err := t.r.client.ProducerID(ictx); err != nil {
		if errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
			who := "the workers' Kafka principal"
			if p := t.r.cfg.Clients[clientconfig.Producer]; p.Security != nil {
				who = "the Kafka principal of " + p.Key(clientconfig.KeySASLJAASConfig)
			}
			return fmt.Errorf("initializing the transactional producer %q: %s may not use this transactional id (grant WRITE and DESCRIBE on TransactionalId %q, or a prefix of it): %w",
				t.cfg.TransactionalID, who, t.cfg.TransactionalID, err)
		}
		return fmt.Errorf("initializing the transactional producer %q: %w", t.cfg.TransactionalID, err)
	}
	if err := t.offsets.ReadToEnd(ictx); err != nil {
		return fmt.Errorf("reading the offsets topic to its end before starting: %w", err)
	}
	return nil
}

// begin opens the next transaction, before anything of it is produced.
func (t *txnCommitter) begin() error {
	if t.open {
		return nil
	}
	if err := t.r.client.BeginTransaction(); err != nil {
		return fmt.Errorf("beginning a transaction: %w", err)
	}
	t.open, t.began = true, time.Now()
	return nil
}

// drain waits until the sender submitted every polled batch and the
// producer delivered every record of the open transaction.
func (t *txnCommitter) drain(ctx context.Context) error {
	r := t.r
	for r.queued.Load() > 0 {
		select {
		case <-r.subs.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := r.client.Flush(ctx); err != nil {
		return fmt.Errorf("delivering the records of the transaction: %w", err)
	}
	return r.producerErr()
}

// commit ends the open transaction with its records and their source
// offsets. Any failure fails the task, as in Kafka: the transaction is
// then aborted by the broker (or by the next instance's fencing), and the
// restarted task polls its records again from the last committed offsets.
func (t *txnCommitter) commit(ctx context.Context) error {
	if !t.open {
		return nil
	}
	r := t.r
	cctx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
	defer cancel()
	start := time.Now()
	err := t.drain(cctx)
	if err == nil {
		err = r.commitRecords()
	}
	var n int
	if err == nil {
		n, err = t.writeOffsets(cctx)
	}
	if err == nil {
		// Not cancelled with cctx: a cancelled EndTxn leaves the outcome
		// unknown.
		err = r.client.EndTransaction(context.WithoutCancel(ctx), kgo.TryCommit)
	}
	t.open = false
	r.cfg.Metrics.OffsetCommit(time.Since(start), err)
	if err != nil {
		t.abortQuietly(ctx)
		return fmt.Errorf("committing the transaction of %s (%d source offsets): %w", t.cfg.TransactionalID, n, err)
	}
	if n > 0 {
		if err := safe("committing source task", func() error { return r.cfg.Task.Commit(cctx) }); err != nil {
			r.cfg.Logger.Warn("source task commit failed", "error", err)
		}
	}
	return nil
}

// writeOffsets produces the committable offsets to the offsets topic
// inside the open transaction and waits for them.
func (t *txnCommitter) writeOffsets(ctx context.Context) (int, error) {
	r := t.r
	offsets := r.subs.committableOffsets()
	if len(offsets) == 0 {
		return 0, nil
	}
	list := make([]SourceOffset, 0, len(offsets))
	for _, o := range offsets {
		list = append(list, o)
	}
	recs, err := t.offsets.OffsetRecords(r.cfg.ID.Connector, list)
	if err != nil {
		return 0, err
	}
	if err := r.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return 0, fmt.Errorf("writing %d source offsets in the transaction: %w", len(recs), err)
	}
	return len(recs), nil
}

// abort aborts the open transaction at the connector's request: its
// records and offsets are discarded, and the task goes on. A failure to
// abort fails the task (the producer is unusable), as in Kafka.
func (t *txnCommitter) abort(ctx context.Context) error {
	if !t.open {
		return nil
	}
	r := t.r
	actx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
	defer cancel()
	if err := t.drain(actx); err != nil {
		return err
	}
	r.ackBuf = r.subs.drainAcked(r.ackBuf) // never committed: not for CommitRecord
	clear(r.ackBuf)
	r.subs.committableOffsets() // dropped: they belong to the aborted records
	t.open = false
	if err := r.client.EndTransaction(context.WithoutCancel(ctx), kgo.TryAbort); err != nil {
		return fmt.Errorf("aborting the transaction of %s: %w", t.cfg.TransactionalID, err)
	}
	return nil
}

// abortQuietly aborts after a failure that already fails the task; its
// own failure only matters to the log (the broker aborts a transaction
// whose producer is gone when it times out or the next instance fences it).
func (t *txnCommitter) abortQuietly(ctx context.Context) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.r.cfg.OffsetFlushTimeout)
	defer cancel()
	if err := t.r.client.AbortBufferedRecords(actx); err != nil {
		t.r.cfg.Logger.Warn("dropping the buffered records of a failed transaction", "error", err)
	}
	if err := t.r.client.EndTransaction(actx, kgo.TryAbort); err != nil {
		t.r.cfg.Logger.Warn("aborting a failed transaction; the broker aborts it when it times out or the next instance of the task fences it", "error", err)
	}
	t.open = false
}

// finish ends the task's last transaction when it stops: committed after
// a clean stop, aborted after a failure.
func (t *txnCommitter) finish(ctx context.Context, failed bool) error {
	if failed {
		if t.open {
			t.abortQuietly(ctx)
		}
		return nil
	}
	return t.commit(ctx)
}

// afterPoll decides, once a polled batch was handed to the sender, whether
// the transaction ends now: after every poll with BoundaryPoll, when the
// interval is up with BoundaryInterval, and on the task's request with
// BoundaryConnector.
func (t *txnCommitter) afterPoll(ctx context.Context, polled bool) error {
	switch t.cfg.Boundary {
	case plugin.BoundaryPoll:
		if polled {
			return t.commit(ctx)
		}
	case plugin.BoundaryInterval:
		if t.open && time.Since(t.began) >= t.cfg.Interval {
			return t.commit(ctx)
		}
	case plugin.BoundaryConnector:
		req := t.take()
		switch {
		case req.abort:
			return t.abort(ctx)
		case req.commit:
			return t.commit(ctx)
		}
	}
	return nil
}

// split cuts a polled batch after the record a CommitTransactionAfter or
// AbortTransactionAfter named: the head belongs to the ending transaction,
// the tail to the next one. ok is false when no such record is in recs.
func (t *txnCommitter) split(recs []*plugin.SourceRecord) (head, tail []*plugin.SourceRecord, ok bool) {
	t.mu.Lock()
	after := t.request.after
	t.mu.Unlock()
	if after == nil {
		return recs, nil, false
	}
	for i, rec := range recs {
		if rec == after {
			return recs[:i+1], recs[i+1:], true
		}
	}
	return recs, nil, false
}

func (t *txnCommitter) take() txnRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	req := t.request
	t.request = txnRequest{}
	return req
}

// TransactionContext implementation, for BoundaryConnector.

func (t *txnCommitter) set(commit bool, after *plugin.SourceRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if commit {
		t.request.commit = true
	} else {
		t.request.abort = true
	}
	t.request.after = after
}

func (t *txnCommitter) CommitTransaction()                              { t.set(true, nil) }
func (t *txnCommitter) CommitTransactionAfter(rec *plugin.SourceRecord) { t.set(true, rec) }
func (t *txnCommitter) AbortTransaction()                               { t.set(false, nil) }
func (t *txnCommitter) AbortTransactionAfter(rec *plugin.SourceRecord)  { t.set(false, rec) }

var _ plugin.TransactionContext = (*txnCommitter)(nil)

// txnTaskContext is the source task context of a connector with
// transaction.boundary=connector: it offers the TransactionContext.
type txnTaskContext struct {
	*sourceTaskContext
	txn *txnCommitter
}

func (c txnTaskContext) TransactionContext() plugin.TransactionContext { return c.txn }

// taskContext is the context handed to the task's Start: with
// BoundaryConnector it offers the TransactionContext.
func (t *txnCommitter) taskContext(tc *sourceTaskContext) plugin.SourceTaskContext {
	if t.cfg.Boundary == plugin.BoundaryConnector {
		return txnTaskContext{sourceTaskContext: tc, txn: t}
	}
	return tc
}

// sendTransactional hands a polled batch to the sender inside the open
// transaction (begun first) and ends the transaction where the boundary
// says: a batch cut by CommitTransactionAfter or AbortTransactionAfter
// sends its head, ends the transaction and sends its tail in the next.
func (r *SourceRunner) sendTransactional(ctx context.Context, recs []*plugin.SourceRecord) error {
	t := r.txn
	head, tail, cut := t.split(recs)
	if len(head) > 0 {
		if err := t.begin(); err != nil {
			return err
		}
		r.send(head)
	}
	if err := t.afterPoll(ctx, len(recs) > 0); err != nil {
		return err
	}
	if cut && len(tail) > 0 {
		if err := t.begin(); err != nil {
			return err
		}
		r.send(tail)
	}
	return nil
}
