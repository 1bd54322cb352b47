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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// SourceConfig configures a SourceRunner.
type SourceConfig struct {
	Common
	// Task is a fresh, unstarted plugin source task; required.
	Task plugin.SourceTask
	// Offsets stores the connector's source offsets; required.
	Offsets OffsetStore
	// MaxInFlight bounds the records polled but not yet acknowledged and
	// committable (the producer's MaxBufferedRecords and the runner's
	// tracking). Default 10000.
	MaxInFlight int
	// MaxInFlightBytes bounds the producer's buffered bytes. Default 64 MiB.
	MaxInFlightBytes int
	// Producer holds producer settings by Kafka's names (the worker's
	// producer.* keys without the prefix), used when Common.Clients has no
	// producer (a runner built without New); see ProducerSettings.
	Producer map[string]string
	// ExactlyOnce, when set, runs the task transactionally (source_txn.go);
	// Offsets must then implement TransactionalOffsets.
	ExactlyOnce *ExactlyOnce
	// TopicCreation, when set, creates each topic the task writes to that
	// does not exist yet, before its first record (KIP-158).
	TopicCreation *plugin.TopicCreation
}

// ProducerSettings turns the worker's producer settings (Kafka's names,
// without the producer. prefix) into producer options through the table
// of client properties (runtime/clientconfig): compression.type (snappy
// unless set), linger.ms, batch.size, acks and the others. A key the
// table does not have, or a bad value, is an error naming the key.
func ProducerSettings(m map[string]string) ([]kgo.Opt, error) {
	st, err := clientconfig.Worker(clientconfig.Producer, m)
	if err != nil {
		return nil, err
	}
	return st.Opts, nil
}

// SourceRunner runs one source task: Poll → convert → produce with the
// idempotent producer (acks=all), tracking per source partition the latest
// offset whose record and all earlier ones Kafka acknowledged; those offsets
// are written through the OffsetStore every OffsetFlushInterval and on
// stop, after which the task's Commit is called.
type SourceRunner struct {
	lifecycle
	cfg SourceConfig
	// topics creates the task's topics (SourceConfig.TopicCreation); nil
	// creates none.
	topics *topicCreator

	client *kgo.Client
	subs   *submitted
	errs   *errorHandler // errors.* handling of failed records (handler.go)

	produceMu  sync.Mutex
	produceErr error // first produce failure

	ackBuf []ackedRecord

	// Polled batches go to the sender goroutine, which converts and
	// produces them in order while the next Poll runs: Poll and the
	// conversion overlap, but Poll, CommitRecord and Commit still run on
	// the runner's goroutine only. At most one batch waits in sendCh and
	// one is being sent; queued counts their records not yet submitted, so
	// the MaxInFlight bound covers them too.
	sendCh     chan []*plugin.SourceRecord
	senderDone chan struct{}
	queued     atomic.Int64

	// the key of the last source partition map seen: sources usually
	// reuse one map per partition, which saves encoding it per record
	lastPart uintptr
	lastKey  string

	// keyApp and valueApp are the converters as converter.Appender, nil
	// when they are not.
	keyApp, valueApp converter.Appender
	promise          func(*kgo.Record, error)
	bufs             *sendPool // buffers of finished batches, for the next ones

	producerOpts []kgo.Opt // the transactional producer's, after the settings

	txn *txnCommitter // nil unless exactly-once
}

// NewSourceRunner checks cfg and creates the runner; Start runs it.
func NewSourceRunner(cfg SourceConfig) (*SourceRunner, error) {
	if err := cfg.Common.check(); err != nil {
		return nil, err
	}
	if cfg.Task == nil {
		return nil, fmt.Errorf("task %s: SourceConfig.Task is nil", cfg.ID)
	}
	if cfg.Offsets == nil {
		return nil, fmt.Errorf("task %s: SourceConfig.Offsets is nil", cfg.ID)
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 10000
	}
	if cfg.MaxInFlightBytes <= 0 {
		cfg.MaxInFlightBytes = 64 << 20
	}
	if _, ok := cfg.Clients[clientconfig.Producer]; !ok {
		// Built without New: the worker's producer settings alone.
		st, err := clientconfig.Worker(clientconfig.Producer, cfg.Producer)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", cfg.ID, err)
		}
		cfg.Clients = maps.Clone(cfg.Clients)
		if cfg.Clients == nil {
			cfg.Clients = map[clientconfig.Kind]Client{}
		}
		cfg.Clients[clientconfig.Producer] = Client{Settings: st}
	}
	if p := cfg.Clients[clientconfig.Producer]; cfg.ExactlyOnce != nil && !p.Idempotent {
		return nil, fmt.Errorf("task %s: %s/%s: exactly-once source tasks write in transactions, which need idempotent writes with acks=all", cfg.ID, p.Key("acks"), p.Key("enable.idempotence"))
	}
	var err error
	r := &SourceRunner{cfg: cfg, subs: newSubmitted(), sendCh: make(chan []*plugin.SourceRecord, 1), senderDone: make(chan struct{})}
	r.subs.skipAcked = plugin.SkipsRecordCommits(cfg.Task)
	r.keyApp, _ = cfg.KeyConverter.(converter.Appender)
	r.valueApp, _ = cfg.ValueConverter.(converter.Appender)
	r.promise = r.produced
	r.bufs = newSendPool()
	r.lifecycle = newLifecycle(&r.cfg.Common)
	r.errs = newErrorHandler(&r.cfg.Common, r.sleep)
	if cfg.TopicCreation != nil {
		r.topics = &topicCreator{cfg: cfg.TopicCreation, common: &r.cfg.Common, log: r.cfg.Logger, known: map[string]bool{}}
	}
	if cfg.ExactlyOnce != nil {
		if r.txn, err = newTxnCommitter(r, *cfg.ExactlyOnce); err != nil {
			return nil, err
		}
		r.producerOpts = append(r.producerOpts, r.txn.producerOpts()...)
	}
	return r, nil
}

// ProducerOpts returns the producer options a source runner adds to the
// worker's Kafka options: idempotent writes with acks=all (franz-go's
// defaults, stated explicitly), bounded buffering, and a partitioner that
// honours a record's explicit partition and otherwise hashes the key like
// Kafka's default partitioner.
func ProducerOpts(maxRecords, maxBytes int) []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(maxRecords),
		kgo.MaxBufferedBytes(maxBytes),
		kgo.RecordPartitioner(newSourcePartitioner()),
	}
}

// Start creates the producer and runs the task in its own goroutine. It
// returns an error only for a runner that cannot start at all (bad Kafka
// options); a failing plugin Start turns the task FAILED.
func (r *SourceRunner) Start(ctx context.Context) error {
	opts := append(r.cfg.clientOpts(clientconfig.Producer, ProducerOpts(r.cfg.MaxInFlight, r.cfg.MaxInFlightBytes)), r.producerOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("task %s: creating producer: %w", r.cfg.ID, err)
	}
	r.client = cl
	if err := r.start(ctx, r.run); err != nil {
		cl.Close()
		return err
	}
	return nil
}

// Client returns the runner's Kafka client (for tests and diagnostics).
func (r *SourceRunner) Client() *kgo.Client { return r.client }

func (r *SourceRunner) run(ctx context.Context) {
	defer r.client.Close()
	if r.topics != nil {
		defer r.topics.close()
	}
	log := r.cfg.Logger
	// The producer gets its producer id while the task starts, as Kafka's
	// idempotent producer does as soon as it is created: the first records
	// then do not wait for it behind the task's polling, and a broker that
	// refuses idempotent writes shows in the log at once.
	// A failure here changes nothing: producing fetches the id again and
	// fails the task if it cannot.
	// A transactional producer instead fences the task's earlier
	// instances before the task starts, and a failure fails the task.
	var tc plugin.SourceTaskContext = &sourceTaskContext{life: &r.lifecycle, log: log, reader: &offsetReader{store: r.cfg.Offsets, connector: r.cfg.ID.Connector}}
	if r.txn != nil {
		if err := r.txn.init(ctx); err != nil {
			r.fail(err)
			return
		}
		tc = r.txn.taskContext(tc.(*sourceTaskContext))
	} else {
		go func() {
			ictx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
			defer cancel()
			if _, _, err := r.client.ProducerID(ictx); err != nil && ictx.Err() == nil && !r.isStopping() {
				log.Warn("initializing the idempotent producer failed; producing will retry", "error", err)
			}
		}()
	}
	if err := safe("starting source task", func() error { return r.cfg.Task.Start(r.cfg.Grants.Context(ctx), tc, r.cfg.Config) }); err != nil {
		r.fail(err)
		r.stopTask()
		return
	}
	r.setState(StateRunning, "")

	pollCtx, cancelPoll := context.WithCancel(ctx)
	defer cancelPoll()
	go func() { // a stop interrupts a blocking Poll
		select {
		case <-r.stopped:
			cancelPoll()
		case <-pollCtx.Done():
		}
	}()

	go r.sender(ctx)
	flush := time.NewTicker(r.flushPeriod())
	defer flush.Stop()
	err := r.loop(ctx, pollCtx, flush.C)
	// Every polled batch was handed to the sender; let it submit them (or
	// give up after a failure) before draining the producer.
	close(r.sendCh)
	<-r.senderDone
	if err == nil {
		err = r.producerErr()
	}
	if errors.Is(err, errStopped) { // stopped while retrying a record
		err = nil
	}
	if err != nil {
		r.fail(err)
	}

	if r.txn != nil {
		// The last transaction commits after a clean stop and is
		// aborted after a failure.
		if terr := r.txn.finish(ctx, err != nil || r.failed() != nil); terr != nil {
			r.fail(terr)
		}
		r.stopTask()
		if r.failed() == nil {
			r.setState(StateUnassigned, "")
		}
		return
	}
	// Drain: wait (bounded) for the producer to deliver what it holds, then
	// store the offsets of everything acknowledged. This holds after a
	// failure too: acknowledged records' offsets are safe to store, and
	// storing them avoids duplicates on restart.
	fctx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
	if ferr := r.client.Flush(fctx); ferr != nil {
		log.Warn("producer did not deliver every record before stopping", "error", ferr)
	}
	cancel()
	if cerr := r.commitRecords(); cerr != nil && err == nil {
		r.fail(cerr)
	}
	if werr := r.commitOffsets(ctx); werr != nil {
		log.Warn("writing source offsets on stop failed", "error", werr)
	}
	r.stopTask()
	if r.failed() == nil {
		r.setState(StateUnassigned, "")
	}
}

func (r *SourceRunner) stopTask() {
	if err := safe("stopping source task", r.cfg.Task.Stop); err != nil {
		r.cfg.Logger.Warn("source task stop failed", "error", err)
	}
}

// loop polls and produces until stop or a fatal error.
func (r *SourceRunner) loop(ctx, pollCtx context.Context, flush <-chan time.Time) error {
	for {
		if r.isStopping() || r.failed() != nil { // failed: by a goroutine of the task
			return nil
		}
		if err := r.producerErr(); err != nil {
			return err
		}
		if err := r.commitRecords(); err != nil {
			return err
		}
		select {
		case <-flush:
			if err := r.flushTick(ctx); err != nil {
				return err
			}
		default:
		}
		if r.targetPaused() {
			r.setState(StatePaused, "")
			select {
			case <-r.wake:
			case <-r.subs.changed: // hand late acknowledgements to CommitRecord
			case <-flush:
				if err := r.flushTick(ctx); err != nil {
					return err
				}
			}
			continue
		}
		r.setState(StateRunning, "")
		// Backpressure: while MaxInFlight records are neither committable
		// nor handed to CommitRecord, wait for acknowledgements.
		if r.inFlight() >= r.cfg.MaxInFlight {
			select {
			case <-r.subs.changed:
			case <-r.stopped:
			case <-flush:
				if err := r.flushTick(ctx); err != nil {
					return err
				}
			}
			continue
		}

		start := time.Now()
		var recs []*plugin.SourceRecord
		err := safe("polling source task", func() error {
			var err error
			recs, err = r.cfg.Task.Poll(pollCtx)
			return err
		})
		r.cfg.Metrics.SourcePolled(len(recs), time.Since(start))
		if err != nil {
			if pollCtx.Err() != nil && r.isStopping() {
				return nil
			}
			if plugin.IsRetriable(err) {
				r.cfg.Logger.Info("retriable poll error; polling again", "error", err)
				r.sleep(r.cfg.RetryBackoff)
				continue
			}
			return err
		}
		if r.txn != nil {
			if err := r.sendTransactional(ctx, recs); err != nil {
				return err
			}
			continue
		}
		r.send(recs)
	}
}

// send hands a polled batch to the sender. It blocks while the sender
// still has a batch waiting; the sender always drains (Produce blocks only
// while the producer's bounded buffer is full).
func (r *SourceRunner) send(recs []*plugin.SourceRecord) {
	if len(recs) > 0 {
		r.queued.Add(int64(len(recs)))
		r.sendCh <- recs
	}
}

// flushPeriod is the period of the offset flush ticker: the offset flush
// interval, or a transaction's interval when it is shorter.
func (r *SourceRunner) flushPeriod() time.Duration {
	if r.txn != nil && r.txn.cfg.Boundary == plugin.BoundaryInterval {
		return min(r.txn.cfg.Interval, r.cfg.OffsetFlushInterval)
	}
	return r.cfg.OffsetFlushInterval
}

// flushTick writes the committable offsets at the offset flush interval; a
// failure is retried at the next one. A transactional task instead ends
// its transaction when its boundary says so, and a failure to commit
// fails the task.
func (r *SourceRunner) flushTick(ctx context.Context) error {
	if r.txn != nil {
		return r.txn.afterPoll(ctx, false)
	}
	if err := r.commitOffsets(ctx); err != nil {
		r.cfg.Logger.Warn("writing source offsets failed; retrying at the next interval", "error", err)
	}
	return nil
}

// inFlight counts the records polled and not yet committable or handed to
// CommitRecord, including those still queued for the sender.
func (r *SourceRunner) inFlight() int {
	return r.subs.inFlight() + int(r.queued.Load())
}

// commitRecords hands acknowledged records to the task's CommitRecord.
func (r *SourceRunner) commitRecords() error {
	r.ackBuf = r.subs.drainAcked(r.ackBuf)
	defer clear(r.ackBuf)
	r.cfg.Metrics.SetSourceActive(r.subs.inFlight())
	if len(r.ackBuf) == 0 {
		return nil
	}
	// One recover frame for the whole batch; the first error stops it.
	return safe("committing a record of the source task", func() error {
		for _, a := range r.ackBuf {
			if err := r.cfg.Task.CommitRecord(a.record, a.metadata); err != nil {
				return err
			}
		}
		return nil
	})
}

// commitOffsets writes the committable source offsets through the offset
// store (returns after the broker acknowledged) and then calls the task's
// Commit.
func (r *SourceRunner) commitOffsets(ctx context.Context) error {
	offsets := r.subs.committableOffsets()
	if len(offsets) == 0 {
		return nil
	}
	start := time.Now()
	list := make([]SourceOffset, 0, len(offsets))
	for _, o := range offsets {
		list = append(list, o)
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
	defer cancel()
	err := r.cfg.Offsets.Write(wctx, r.cfg.ID.Connector, list)
	r.cfg.Metrics.OffsetCommit(time.Since(start), err)
	if err != nil {
		r.subs.restore(offsets)
		return fmt.Errorf("writing %d source offsets: %w", len(list), err)
	}
	if err := safe("committing source task", func() error { return r.cfg.Task.Commit(wctx) }); err != nil {
		r.cfg.Logger.Warn("source task commit failed", "error", err)
	}
	return nil
}

// partitionKey returns the key of p, reusing the last one when the task
// handed the same map again (a partition map must not change once a record
// carrying it was returned by Poll).
func (r *SourceRunner) partitionKey(p map[string]any) (string, error) {
	ptr := reflect.ValueOf(p).Pointer()
	if ptr != 0 && ptr == r.lastPart {
		return r.lastKey, nil
	}
	k, err := partitionKey(p)
	if err != nil {
		return "", err
	}
	r.lastPart, r.lastKey = ptr, k
	return k, nil
}

// partitionKey is a canonical string for a source partition map. Small
// maps of plain values (the usual {"file": "/a"} or {"table": "t",
// "shard": 3}) are encoded by hand, with sorted keys; anything else goes
// through encoding/json (which sorts map keys too). Both encodings are
// only compared with each other within one runner.
func partitionKey(p map[string]any) (string, error) {
	if len(p) <= 4 {
		var keys [4]string
		ks := keys[:0]
		for k := range p {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		b := make([]byte, 0, 64)
		simple := true
		for _, k := range ks {
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			switch v := p[k].(type) {
			case string:
				b = strconv.AppendQuote(b, v)
			case int:
				b = strconv.AppendInt(b, int64(v), 10)
			case int32:
				b = strconv.AppendInt(b, int64(v), 10)
			case int64:
				b = strconv.AppendInt(b, v, 10)
			case bool:
				b = strconv.AppendBool(b, v)
			default:
				simple = false
			}
			if !simple {
				break
			}
			b = append(b, ',')
		}
		if simple {
			return string(b), nil
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("source partition %v is not JSON-friendly: %w", p, err)
	}
	return "json:" + string(b), nil
}
