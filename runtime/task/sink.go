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
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// errStopped ends a retry loop when the runner is stopped.
var errStopped = errors.New("task stopping")

// SinkConfig configures a SinkRunner.
type SinkConfig struct {
	Common
	// Task is a fresh, unstarted plugin sink task; required.
	Task plugin.SinkTask
	// Topics are the topics to consume; TopicsRegex instead selects every
	// topic matching the expression (anchored). Exactly one is required.
	// When both are empty they are read from Config ("topics",
	// "topics.regex").
	Topics      []string
	TopicsRegex string
	// MaxPollRecords bounds the records of one Put (Kafka's
	// max.poll.records). Default 500.
	MaxPollRecords int
	// MaxBatchBytes bounds the key+value bytes of one Put; a larger poll is
	// split. Default 8 MiB.
	MaxBatchBytes int
	// PollTimeout is how long one poll waits for records before the runner
	// looks at commits and target state again. Default 500ms.
	PollTimeout time.Duration
	// FetchMaxBytes bounds one fetch response (and so what the client
	// buffers per broker), as stored: compressed batches count at their
	// compressed size. Default 1 MiB, Kafka's max.partition.fetch.bytes:
	// the client fetches the next response while the task puts the last
	// one, so smaller fetches overlap fetching and putting better (and
	// the first records arrive sooner); larger ones save round trips only.
	FetchMaxBytes int32
	// FetchMaxPartitionBytes bounds what one fetch returns of one
	// partition (Kafka's max.partition.fetch.bytes). Default FetchMaxBytes.
	FetchMaxPartitionBytes int32
	// SessionTimeout and RebalanceTimeout of the consumer group; zero keeps
	// franz-go's defaults (45s, 60s).
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// InstanceID, when set, makes the consumer a static member of the
	// group (KIP-345): a worker restarted after a crash runs the task again
	// under the same id and takes back its partitions at once, instead of
	// joining as a new member while the crashed process's member holds
	// them until its session expires. A planned stop still leaves the group
	// at once (LeaveGroup naming the instance id).
	InstanceID string
	// ReadCommitted makes the consumer read_committed: records of aborted
	// transactions (an exactly-once source's) are never delivered.
	ReadCommitted bool
	// Share makes the task consume through the share group
	// connect-share-<connector> (consumer.group.type=share, KIP-932)
	// instead of the consumer group: see sink_share.go. InstanceID and
	// the group timeouts do not apply to it.
	Share bool
}

// SinkRunner runs one sink task: a consumer in group connect-<connector>
// (cooperative-sticky, rebalances blocked while a polled batch is being
// put, auto-commit off) that converts records, hands them to Put in batches
// bounded by count and bytes, and commits offsets only after Flush
// succeeded: every OffsetFlushInterval, on RequestCommit, before partitions
// are revoked, and on stop. A failed Flush rewinds the consumer to the last
// committed offsets, so the records are delivered again.
type SinkRunner struct {
	lifecycle
	cfg    SinkConfig
	client *kgo.Client
	tc     *sinkTaskContext
	errs   *errorHandler // errors.* handling of failed records (handler.go)

	// mu serialises every call into the plugin task and guards the
	// partition state below; the rebalance callbacks take it too.
	mu        sync.Mutex
	assigned  map[data.TopicPartition]bool
	current   map[data.TopicPartition]kgo.EpochOffset // next offset after the last record put
	committed map[data.TopicPartition]int64           // last committed (or start) offset
	given     map[data.TopicPartition]int64           // next offset after the last record handed to the task
	hwm       map[data.TopicPartition]int64
	noCommit  bool // set on failure: rebalance callbacks close partitions without flushing
	// idlePoll: the last poll returned no records. The lag then counts
	// nothing the task could be given (what it has put waits for the next
	// commit), so the stall detector sees no work.
	idlePoll bool

	// snapshots for calls from the task's own goroutines, lock-free
	assignSnap atomic.Pointer[[]data.TopicPartition]
	clientSnap atomic.Pointer[kgo.Client]
	lag        atomic.Int64

	lastCommit time.Time
	runCtx     context.Context // cancelled when the task is abandoned

	// text is the value converter as a converter.JSONTexter when the task
	// takes values as JSON text (plugin.SinkJSONValues) and no transform
	// runs; textEnc is the task's encoder, textArena the buffer the texts
	// of the records given to the task are cut from (never reused: the
	// task may hold records after Put).
	text      converter.JSONTexter
	textEnc   data.JSONEncoder
	textArena []byte

	// rebalanceWaiting is set when a group rebalance waits for the records
	// polled last to be put (BlockRebalanceOnPoll): delivery stops at the
	// next Put boundary, so the task rejoins the group within one Put.
	rebalanceWaiting atomic.Bool

	// cancelClient cancels the Kafka client's context: it aborts a
	// JoinGroup or SyncGroup that Close would otherwise wait for.
	cancelClient context.CancelFunc
	// inCallback counts rebalance callbacks running: a slow revoke
	// (flush, commit, Close of the partitions) is not a stuck leave.
	inCallback atomic.Int32
	// round is whether the consumer is inside a group round (keepAlive).
	round groupRound
	// shareLimit is the share group's delivery limit (share mode).
	shareLimit int32
}

// leaveWait bounds how long closing the consumer may wait for a group
// round (JoinGroup or SyncGroup) still in flight before the runner leaves
// the group by itself and aborts the round.
var leaveWait = time.Second

// NewSinkRunner checks cfg and creates the runner; Start runs it.
func NewSinkRunner(cfg SinkConfig) (*SinkRunner, error) {
	if err := cfg.Common.check(); err != nil {
		return nil, err
	}
	if cfg.Task == nil {
		return nil, fmt.Errorf("task %s: SinkConfig.Task is nil", cfg.ID)
	}
	if len(cfg.Topics) == 0 && cfg.TopicsRegex == "" {
		cfg.Topics = plugin.SplitList(cfg.Config[plugin.KeyTopics])
		cfg.TopicsRegex = strings.TrimSpace(cfg.Config[plugin.KeyTopicsRegex])
	}
	switch {
	case len(cfg.Topics) > 0 && cfg.TopicsRegex != "":
		return nil, fmt.Errorf("task %s: set either %s or %s, not both", cfg.ID, plugin.KeyTopics, plugin.KeyTopicsRegex)
	case len(cfg.Topics) == 0 && cfg.TopicsRegex == "":
		return nil, fmt.Errorf("task %s: set %s or %s", cfg.ID, plugin.KeyTopics, plugin.KeyTopicsRegex)
	case cfg.TopicsRegex != "":
		if _, err := regexp.Compile(cfg.TopicsRegex); err != nil {
			return nil, fmt.Errorf("task %s: %s %q: %w", cfg.ID, plugin.KeyTopicsRegex, cfg.TopicsRegex, err)
		}
	}
	for _, t := range cfg.Topics {
		if cfg.Reserved.Reserved(t) {
			return nil, fmt.Errorf("task %s: %w", cfg.ID, cfg.Reserved.KeyError(plugin.KeyTopics, t))
		}
	}
	if err := cfg.Errors.checkDLQTopic(cfg.Topics, cfg.TopicsRegex); err != nil {
		return nil, fmt.Errorf("task %s: %w", cfg.ID, err)
	}
	if cfg.MaxPollRecords <= 0 {
		cfg.MaxPollRecords = 500
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 8 << 20
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 500 * time.Millisecond
	}
	if cfg.FetchMaxBytes <= 0 {
		cfg.FetchMaxBytes = 1 << 20
	}
	if cfg.FetchMaxPartitionBytes <= 0 {
		cfg.FetchMaxPartitionBytes = cfg.FetchMaxBytes
	}
	r := &SinkRunner{
		cfg:       cfg,
		assigned:  map[data.TopicPartition]bool{},
		current:   map[data.TopicPartition]kgo.EpochOffset{},
		committed: map[data.TopicPartition]int64{},
		given:     map[data.TopicPartition]int64{},
		hwm:       map[data.TopicPartition]int64{},
	}
	r.lifecycle = newLifecycle(&r.cfg.Common)
	r.tc = &sinkTaskContext{r: r, log: r.cfg.Logger}
	r.errs = newErrorHandler(&r.cfg.Common, r.sleep)
	return r, nil
}

// ConsumerOpts returns the consumer options a sink runner adds to the
// worker's Kafka options; the consumer's settings (Common.Clients) go
// after them.
func (r *SinkRunner) ConsumerOpts() []kgo.Opt {
	if r.cfg.Share {
		return r.shareConsumerOpts()
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(connectnames.SinkGroup(r.cfg.ID.Connector)),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.BlockRebalanceOnPoll(),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), // auto.offset.reset=earliest, as Kafka Connect
		// Transaction markers reach the runner, which never puts them but
		// counts them as consumed: the commit then moves past a
		// partition's last marker and past an aborted transaction at its
		// end (read_committed never returns its records, but returns its
		// marker), so a caught-up sink on an exactly-once source's topic
		// commits the log's end and its lag reads 0. Committing only
		// after the last record put, as Kafka Connect's sink task does,
		// leaves the lag above 0 there for good.
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(r.cfg.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(r.cfg.FetchMaxPartitionBytes),
		kgo.OnPartitionsAssigned(r.onAssigned),
		kgo.OnPartitionsRevoked(r.onRevoked),
		kgo.OnPartitionsLost(r.onLost),
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { r.rebalanceWaiting.Store(true) }),
		kgo.WithHooks(&r.round),
	}
	if r.cfg.TopicsRegex != "" {
		// A regex subscription never reaches the cluster's internal topics.
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(plugin.TopicsRegex(r.cfg.TopicsRegex)), kgo.ConsumeExcludeTopics(r.cfg.Reserved.ExcludePatterns()...))
	} else {
		opts = append(opts, kgo.ConsumeTopics(r.cfg.Topics...))
	}
	if r.cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(r.cfg.SessionTimeout))
	}
	if r.cfg.RebalanceTimeout > 0 {
		opts = append(opts, kgo.RebalanceTimeout(r.cfg.RebalanceTimeout))
	}
	if r.cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(r.cfg.InstanceID))
	}
	if r.cfg.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	return opts
}

// Start starts the plugin task, creates the consumer (which joins the
// group) and runs the task in its own goroutine. It returns an error only
// for a runner that cannot start at all (bad Kafka options).
func (r *SinkRunner) Start(ctx context.Context) error {
	return r.start(ctx, func(ctx context.Context) {
		r.runCtx = ctx
		if r.cfg.Errors.DLQTopic != "" {
			dlq, err := openDeadLetterQueue(ctx, &r.cfg.Common, func(err error) { r.fail(err); r.signal() })
			if err != nil {
				r.fail(err)
				return
			}
			r.errs.dlq = dlq
			defer dlq.close()
		}
		if err := safe("starting sink task", func() error { return r.cfg.Task.Start(r.cfg.Grants.Context(ctx), r.tc, r.cfg.Config) }); err != nil {
			r.fail(err)
			r.stopTask()
			return
		}
		r.takeJSONText()
		// The client's context ends with the task's (abandoned), or when
		// closing it has to abort a pending group round (closeClient).
		cctx, ccancel := context.WithCancel(ctx)
		r.cancelClient = ccancel
		defer ccancel()
		if r.cfg.Share {
			limit, err := r.prepareShareGroup(ctx)
			if err != nil {
				r.fail(err)
				r.stopTask()
				return
			}
			r.shareLimit = limit
		} else if r.cfg.InstanceID != "" {
			r.takeOverStatic(ctx)
		}
		opts := r.cfg.clientOpts(clientconfig.Consumer, append(r.ConsumerOpts(), kgo.WithContext(cctx)))
		// Holding mu while creating the client keeps the rebalance
		// callbacks (which take mu) from seeing a nil client.
		r.mu.Lock()
		cl, err := kgo.NewClient(opts...)
		r.client = cl
		r.clientSnap.Store(cl)
		r.mu.Unlock()
		if err != nil {
			r.fail(fmt.Errorf("creating consumer: %w", err))
			r.stopTask()
			return
		}
		if r.cfg.Share {
			r.runShare(ctx)
			return
		}
		go r.keepAlive(cctx, cl)
		r.run(ctx)
	})
}

// Client returns the runner's Kafka client once it exists (for tests).
func (r *SinkRunner) Client() *kgo.Client { return r.clientSnap.Load() }

// Assignment returns the partitions currently assigned to the task.
func (r *SinkRunner) Assignment() []data.TopicPartition { return r.tc.Assignment() }

// Lag returns the task's lag in records: per assigned partition the last
// seen high watermark minus the committed offset, summed.
func (r *SinkRunner) Lag() int64 { return r.lag.Load() }

func (r *SinkRunner) updateLagLocked() {
	n := r.lagLocked()
	r.lag.Store(n)
	// The stall detector's work: the lag while polls return records, none
	// once they return nothing (a task stuck in Put polls no more, so its
	// work stays what the last poll left).
	work := n
	if r.idlePoll {
		work = 0
	}
	r.cfg.Metrics.SetSinkLag(n, work)
}

func (r *SinkRunner) lagLocked() int64 {
	var lag int64
	for tp := range r.assigned {
		hw, ok := r.hwm[tp]
		if !ok {
			continue
		}
		if c, ok := r.committed[tp]; ok && hw > c {
			lag += hw - c
		}
	}
	return lag
}

func (r *SinkRunner) stopTask() {
	if err := safe("stopping sink task", r.cfg.Task.Stop); err != nil {
		r.cfg.Logger.Warn("sink task stop failed", "error", err)
	}
}

func (r *SinkRunner) run(ctx context.Context) {
	cl := r.client
	r.setState(StateRunning, "")
	r.lastCommit = time.Now()
	err := r.loop(ctx)
	cl.AllowRebalance()
	if err != nil {
		r.fail(err)
	}
	if r.failed() != nil {
		r.mu.Lock()
		r.noCommit = true
		r.mu.Unlock()
	} else {
		// Final flush and commit of everything put, then leave the group:
		// the last revoke callback closes the partitions.
		r.mu.Lock()
		if ferr := r.flushAndCommitLocked(ctx, nil, false); ferr != nil {
			r.cfg.Logger.Warn("final flush and commit failed", "error", ferr)
		}
		r.mu.Unlock()
	}
	r.closeClient(cl) // leaves the group; onRevoked closes the partitions
	r.stopTask()
	if r.failed() == nil {
		r.setState(StateUnassigned, "")
	}
}

func (r *SinkRunner) loop(ctx context.Context) error {
	cl := r.client
	var batch []*plugin.SinkRecord
	for {
		// Paused, not polling keeps the client from fetching beyond what
		// it already buffered; heartbeats and rebalances go on.
		if done, paused := r.waitTurn(); done {
			return nil
		} else if paused {
			continue
		}

		// Like Kafka's WorkerSinkTask, wait no longer than until the next
		// offset commit is due, so commits keep their cadence while the
		// topics are quiet.
		wait := min(r.cfg.PollTimeout, max(time.Until(r.lastCommit.Add(r.cfg.OffsetFlushInterval)), time.Millisecond))
		// A rebalance that signalled before this poll runs before the poll
		// returns (the client gives rebalances priority).
		r.rebalanceWaiting.Store(false)
		pctx, cancel := context.WithTimeout(ctx, wait)
		// Take everything the client buffered (at most one fetch per
		// broker, bounded by FetchMaxBytes) and split it into Puts of
		// MaxPollRecords below. Taking only MaxPollRecords per poll kept
		// the buffered fetch undrained, and franz-go sends the next fetch
		// only once the previous one was fully taken: fetching and
		// putting never overlapped.
		fetches := cl.PollFetches(pctx)
		cancel()
		if fetches.IsClientClosed() {
			return nil
		}
		if fatal := r.fetchFatal(fetches, "consuming"); fatal != nil {
			cl.AllowRebalance()
			return fatal
		}

		r.mu.Lock()
		r.idlePoll = fetches.NumRecords() == 0
		err := r.deliverLocked(ctx, fetches, &batch)
		if err == nil {
			r.applyResetsLocked(nil) // asked for in the last Put
		}
		if err == nil && (time.Since(r.lastCommit) >= r.cfg.OffsetFlushInterval || r.tc.takeCommitRequest()) {
			r.lastCommit = time.Now()
			if cerr := r.flushAndCommitLocked(ctx, nil, true); cerr != nil {
				r.cfg.Logger.Warn("offset commit failed; records since the last commit will be delivered again", "error", cerr)
			}
		}
		r.updateLagLocked()
		r.mu.Unlock()
		cl.AllowRebalance()
		if errors.Is(err, errStopped) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// waitTurn is the top of a poll loop: done when the task stops or a
// rebalance callback failed it; paused when the target state is PAUSED
// (after waiting for a change or the offset flush interval), so the loop
// polls later.
func (r *SinkRunner) waitTurn() (done, paused bool) {
	if r.isStopping() || r.failed() != nil {
		return true, false
	}
	if r.targetPaused() {
		r.setState(StatePaused, "")
		select {
		case <-r.wake:
		case <-time.After(r.cfg.OffsetFlushInterval):
		}
		return false, true
	}
	r.setState(StateRunning, "")
	return false, false
}

// fetchFatal logs the errors of a poll and returns the first that ends the
// task: a client-level error that retrying does not mend, or the broker
// refusing the connector's principal, wherever franz-go reports it: on the
// group ("", 0: JoinGroup, OffsetFetch, commits, share heartbeats), on a
// topic's metadata (topic, -1) or on a partition's fetch.
func (r *SinkRunner) fetchFatal(fetches kgo.Fetches, what string) error {
	var fatal error
	fetches.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		r.cfg.Logger.Warn("fetch error", "topic", t, "partition", p, "error", err)
		if ((t == "" && p < 0 && !kerr.IsRetriable(err)) || clientconfig.IsRefused(err)) && fatal == nil {
			fatal = fmt.Errorf("%s: %w", what, err)
		}
	})
	return fatal
}

// deliverLocked converts and transforms the polled records and puts them
// in batches bounded by MaxPollRecords, MaxBatchBytes and the task's own
// limit (plugin.SinkPutLimiter).
//
// A poll holds up to a whole fetch, which a slow task may take minutes to
// put; the group's rebalances wait for it (BlockRebalanceOnPoll), and
// nothing would be committed meanwhile. So between two Puts the runner
// commits when the offset flush interval is due, and stops delivering when
// a rebalance waits (or the task is paused): the consumer is moved back to
// the first record not put of each partition (yieldLocked), the poll loop
// allows the rebalance, and the rest is fetched again. A slow task thus
// holds a rebalance up for one Put, as Kafka Connect's sink task does for
// one poll's put, instead of until the whole fetch is put.
func (r *SinkRunner) deliverLocked(ctx context.Context, fetches kgo.Fetches, batch *[]*plugin.SinkRecord) error {
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		tp := data.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		if r.assigned[tp] {
			r.hwm[tp] = p.HighWatermark
		}
	})
	limit := r.cfg.MaxPollRecords
	if pl, ok := r.cfg.Task.(plugin.SinkPutLimiter); ok {
		if n := pl.MaxPutRecords(); n > 0 {
			limit = min(limit, n)
		}
	}
	var (
		size  int
		first error
		last  = map[data.TopicPartition]kgo.EpochOffset{}
		read  int  // records taken from the fetch since the last Put
		cut   bool // delivery stopped early; the rest is fetched again
	)
	// Offsets the task asked for (ResetOffsets: Open seeking to offsets
	// the task keeps itself, as exactly-once sinks do) take effect before
	// any more records of their partitions are delivered, as Kafka
	// Connect's rewind before each poll: the fetched records of a reset
	// partition were read from the old position, and delivering them as
	// well as those fetched again from the new one would hand the task
	// records it skipped, or the same record twice (two rows for one
	// record in the batch of an exactly-once sink). They are dropped; the
	// consumer reads on from the reset offset.
	reset := map[data.TopicPartition]bool{}
	r.applyResetsLocked(reset)
	b := (*batch)[:0]
	put := func() error {
		if len(b) == 0 {
			// Only records skipped (errors.tolerance=all) or dropped by a
			// transform: they count as consumed.
			for tp, eo := range last {
				r.current[tp] = eo
			}
			clear(last)
			return nil
		}
		if r.isStopping() {
			// A poll holds up to a whole fetch: stop between Puts. What
			// was not put is not committed; the next owner reads it.
			return errStopped
		}
		if err := r.putLocked(ctx, b); err != nil {
			return err
		}
		for tp, eo := range last {
			r.current[tp] = eo
		}
		r.cfg.Metrics.SinkRead(read)
		read = 0
		clear(last)
		clear(b)
		b = b[:0]
		size = 0
		return nil
	}
	// The SinkRecords of a Put share one backing array (one allocation
	// per batch instead of one per record). The per-partition maps are
	// read and written once per partition of the fetch, not per record.
	left := fetches.NumRecords()
	var slab []plugin.SinkRecord
	n := 0
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if first != nil || cut || len(p.Records) == 0 {
			return
		}
		tp := data.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		if !r.assigned[tp] {
			return // revoked meanwhile; the new owner reads it
		}
		if reset[tp] {
			return // read from before the task's reset
		}
		if _, ok := r.committed[tp]; !ok {
			// No committed offset in the group yet: the first record read
			// marks where consumption started, the point to rewind to
			// and to count lag from.
			r.committed[tp] = p.Records[0].Offset
		}
		// consumed is the partition's next offset once its records so far
		// are put, skipped or dropped; it goes into last before a Put
		// and at the partition's end.
		var consumed kgo.EpochOffset
		pending := false
		for _, kr := range p.Records {
			n++
			if kr.Attrs.IsControl() {
				// A transaction marker: consumed, never put.
				consumed, pending = kgo.EpochOffset{Epoch: kr.LeaderEpoch, Offset: kr.Offset + 1}, true
				continue
			}
			read++
			if len(slab) == 0 {
				slab = make([]plugin.SinkRecord, max(min(left-n+1, limit-len(b)), 1))
			}
			rec := &slab[0]
			slab = slab[1:]
			next := kgo.EpochOffset{Epoch: kr.LeaderEpoch, Offset: kr.Offset + 1}
			if err := r.convert(kr, rec); err != nil {
				// Retried, skipped or fatal, by the errors.* settings.
				if err = r.recordFailed(ctx, kr, rec, err); err == errSkipped {
					// Consumed: its offset is committed with the next ones,
					// after the dead letter queue acknowledged it.
					consumed, pending = next, true
					continue
				} else if err != nil {
					first = err
					break
				}
			}
			if r.cfg.chain != nil {
				keep, err := r.transform(ctx, kr, rec)
				if err != nil {
					first = err
					break
				}
				if !keep { // dropped or skipped: its offset counts as consumed all the same
					consumed, pending = next, true
					continue
				}
			}
			b = append(b, rec)
			r.given[tp] = next.Offset
			consumed, pending = next, true
			size += len(kr.Key) + len(kr.Value)
			if len(b) >= limit || size >= r.cfg.MaxBatchBytes {
				last[tp], pending = consumed, false
				if first = put(); first != nil {
					break
				}
				if r.applyResetsLocked(reset); reset[tp] {
					break // the rest of this partition's records too
				}
				if n < left {
					if cut = r.betweenPutsLocked(ctx); cut {
						break
					}
				}
			}
		}
		if pending && first == nil {
			last[tp] = consumed
		}
	})
	if first == nil {
		first = put()
	}
	if cut {
		r.yieldLocked(fetches)
	}
	r.cfg.Metrics.SinkRead(read) // read but not put: a failed conversion or Put
	*batch = b
	return first
}

// betweenPutsLocked runs between two Puts of one poll: it commits when the
// offset flush interval is due, and reports whether delivery should stop
// here, because a rebalance waits, the task was paused, or the commit's
// Flush failed (which moved the consumer back to the committed offsets).
func (r *SinkRunner) betweenPutsLocked(ctx context.Context) bool {
	if r.rebalanceWaiting.Load() || r.targetPaused() {
		return true
	}
	if time.Since(r.lastCommit) >= r.cfg.OffsetFlushInterval || r.tc.takeCommitRequest() {
		r.lastCommit = time.Now()
		if err := r.flushAndCommitLocked(ctx, nil, true); err != nil {
			r.cfg.Logger.Warn("offset commit failed; records since the last commit will be delivered again", "error", err)
			return true
		}
		r.updateLagLocked()
	}
	return false
}

// yieldLocked moves the consumer back to the first record not put of each
// assigned partition of fetches, so that the records left undelivered are
// fetched again (by this task, or after a rebalance by the partition's new
// owner, from the offsets the revoke commits). It runs before the poll
// loop allows the rebalance, as SetOffsets requires.
func (r *SinkRunner) yieldLocked(fetches kgo.Fetches) {
	seek := map[string]map[int32]kgo.EpochOffset{}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		tp := data.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		if len(p.Records) == 0 || !r.assigned[tp] {
			return
		}
		from := p.Records[0].Offset
		if eo, ok := r.current[tp]; ok {
			from = eo.Offset
		}
		if from > p.Records[len(p.Records)-1].Offset {
			return // all put
		}
		if seek[tp.Topic] == nil {
			seek[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		seek[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: from}
	})
	if len(seek) > 0 {
		r.client.SetOffsets(seek)
	}
}

// putLocked hands one batch to Put, retrying the same batch after a
// retriable error until it succeeds or the runner stops.
func (r *SinkRunner) putLocked(ctx context.Context, b []*plugin.SinkRecord) error {
	for {
		start := time.Now()
		err := safe("putting records into the sink task", func() error { return r.cfg.Task.Put(ctx, b) })
		if err == nil {
			r.cfg.Metrics.SinkPut(len(b), time.Since(start))
			return nil
		}
		if !plugin.IsRetriable(err) {
			return err
		}
		r.cfg.Logger.Info("retriable put error; retrying the same batch", "records", len(b), "error", err)
		if !r.sleep(r.cfg.RetryBackoff) {
			return errStopped
		}
	}
}

// takeJSONText sets r.text when the task takes values as JSON text, no
// transform runs and the value converter can write it.
func (r *SinkRunner) takeJSONText() {
	jv, ok := r.cfg.Task.(plugin.SinkJSONValues)
	if !ok || r.cfg.chain != nil {
		return
	}
	if enc, ok := jv.JSONValues(); ok {
		r.text, _ = r.cfg.ValueConverter.(converter.JSONTexter)
		r.textEnc = enc
	}
}

// textArenaSize is the size of the buffers the JSON texts of values are
// cut from.
const textArenaSize = 64 << 10

// convert fills rec from kr.
func (r *SinkRunner) convert(kr *kgo.Record, rec *plugin.SinkRecord) error {
	ks, k, err := r.cfg.KeyConverter.ToConnectData(kr.Topic, kr.Key)
	if err != nil {
		return stageErr(StageKeyConverter, r.cfg.KeyConverter, fmt.Errorf("converting key of %s-%d@%d: %w", kr.Topic, kr.Partition, kr.Offset, err))
	}
	var vs *data.Schema
	var v any
	if r.text != nil && len(kr.Value) > 0 {
		// The text is about as long as the bytes (compact JSON; numbers
		// written again may grow a little).
		if need := 2*len(kr.Value) + 64; cap(r.textArena)-len(r.textArena) < need {
			r.textArena = make([]byte, 0, max(textArenaSize, need))
		}
		start := len(r.textArena)
		if out, s, ok := r.text.AppendJSONText(r.textArena, r.textEnc, kr.Topic, kr.Value); ok {
			r.textArena = out
			vs, v = s, data.JSONText{Text: out[start:len(out):len(out)], Raw: kr.Value}
		}
	}
	if v == nil {
		if vs, v, err = r.cfg.ValueConverter.ToConnectData(kr.Topic, kr.Value); err != nil {
			return stageErr(StageValueConverter, r.cfg.ValueConverter, fmt.Errorf("converting value of %s-%d@%d: %w", kr.Topic, kr.Partition, kr.Offset, err))
		}
	}
	*rec = plugin.SinkRecord{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset,
		KeySchema: ks, Key: k, ValueSchema: vs, Value: v, Timestamp: kr.Timestamp}
	if len(kr.Headers) > 0 {
		rec.Headers = make(data.Headers, 0, len(kr.Headers))
		for _, h := range kr.Headers {
			rec.Headers.AddBytes(h.Key, h.Value)
		}
	}
	return nil
}

// closeClient closes the consumer, which leaves the group. kgo's Close
// waits for the group goroutine, and when that goroutine is inside a
// JoinGroup or SyncGroup the broker holds the round until the group's
// rebalance completes: while another member is dead that takes its session
// or rebalance timeout, longer than a graceful stop. After leaveWait (and
// no rebalance callback running) the runner sends the LeaveGroup itself, so
// the group rebalances without this member at once, and cancels the
// client's context, which aborts the round; Close then returns. The final
// commit happened before: nothing is lost, the revoke callback only closes
// the partitions.
func (r *SinkRunner) closeClient(cl *kgo.Client) {
	if r.cfg.InstanceID != "" {
		// A static member does not leave when its client closes; a
		// planned stop must, so its partitions move at once.
		r.leaveStatic(cl)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl.Close()
	}()
	deadline := time.NewTimer(leaveWait)
	defer deadline.Stop()
	tick := time.NewTicker(leaveWait / 10)
	defer tick.Stop()
	expired := false
	for {
		select {
		case <-done:
			return
		case <-deadline.C:
			expired = true
		case <-tick.C:
		}
		if expired && r.inCallback.Load() == 0 {
			break
		}
	}
	memberID, _ := cl.GroupMetadata()
	r.cfg.Logger.Info("leaving the consumer group without waiting for its pending rebalance",
		"group", connectnames.SinkGroup(r.cfg.ID.Connector), "member", memberID, "waited", leaveWait)
	if memberID != "" {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = connectnames.SinkGroup(r.cfg.ID.Connector)
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = memberID
		m.Reason = kmsg.StringPtr("task stopped while its group round was pending")
		req.Members = append(req.Members, m)
		lctx, cancel := context.WithTimeout(r.runCtx, leaveWait)
		if _, err := req.RequestWith(lctx, cl); err != nil {
			r.cfg.Logger.Warn("leaving the consumer group failed; the group drops this member after its session timeout", "error", err)
		}
		cancel()
	}
	r.cancelClient()
	<-done
}
