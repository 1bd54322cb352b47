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
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Share mode (consumer.group.type=share, KIP-932): the sink task consumes
// through the share group connect-share-<connector>. Every task may get
// records of every partition; the broker hands each record to one member
// at a time (acquired, under a lock) and forgets it only when the member
// acknowledges it. The runner keeps the rule of the classic mode, that
// nothing is acknowledged before the sink made it durable, one poll at a
// time:
//
//	poll (at most one Put's worth of records) → convert, transform → Put
//	→ Flush → acknowledge: accept what Flush made durable, reject what
//	failed for good (after its dead letter was acknowledged), release the
//	rest → FlushAcks → poll again.
//
// kgo auto-accepts, at the next poll, every record of a poll left
// unmarked: the runner marks every record before it polls again, and a
// client that closes releases what is unmarked (a task that stops or fails
// releases what it holds at once).
//
// A Put that fails releases its records (redelivered, possibly to another
// task). Records delivered again (delivery count above 1) are put one per
// Put, so a record the sink always refuses fails alone; at the share
// group's delivery limit the runner gives up on it: it is counted
// (share_records_past_delivery_limit_total), handled by errors.* as a
// TASK_PUT failure (the dead letter queue under errors.tolerance=all, the
// task fails under none) and rejected, so the broker does not archive it
// silently.

// defaultShareDeliveryLimit is Kafka's group.share.delivery.count.limit
// default, used when the broker's value cannot be read.
const defaultShareDeliveryLimit = 5

// Group configs (KIP-932) the runner reads or sets on its share group.
const (
	shareAutoOffsetReset   = "share.auto.offset.reset"
	shareIsolationLevel    = "share.isolation.level"
	shareDeliveryLimitKey  = "share.delivery.count.limit"
	brokerDeliveryLimitKey = "group.share.delivery.count.limit"
)

// shareConsumerOpts are the consumer options of a share-mode runner.
func (r *SinkRunner) shareConsumerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ShareGroup(connectnames.ShareGroup(r.cfg.ID.Connector)),
		// One poll is one Put's worth of records: what a task holds
		// (acquired, locked against the other members) is what it is
		// putting, never a prefetched buffer other tasks could have taken.
		kgo.ShareMaxRecords(int32(r.putLimit())),
		kgo.ShareMaxRecordsStrict(),
		// Kafka's fetch.max.wait.ms (kgo's default is 5 s): a released
		// record, which wakes no waiting fetch, comes back within it.
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.FetchMaxBytes(r.cfg.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(r.cfg.FetchMaxPartitionBytes),
	}
	if r.cfg.TopicsRegex != "" {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(plugin.TopicsRegex(r.cfg.TopicsRegex)), kgo.ConsumeExcludeTopics(r.cfg.Reserved.ExcludePatterns()...))
	} else {
		opts = append(opts, kgo.ConsumeTopics(r.cfg.Topics...))
	}
	return opts
}

// putLimit is the most records of one Put: max.poll.records, or less when
// the task says so (plugin.SinkPutLimiter).
func (r *SinkRunner) putLimit() int {
	limit := r.cfg.MaxPollRecords
	if pl, ok := r.cfg.Task.(plugin.SinkPutLimiter); ok {
		if n := pl.MaxPutRecords(); n > 0 {
			limit = min(limit, n)
		}
	}
	return limit
}

// prepareShareGroup sets the group configs a sink needs before the first
// member fetches, and reads the delivery limit:
//   - share.auto.offset.reset=earliest unless someone set it: a new share
//     group starts at the log end in Kafka, a sink (as Connect's
//     auto.offset.reset=earliest) at the log start;
//   - share.isolation.level=read_committed when the worker reads committed
//     (an exactly-once source's topic), unless set;
//   - the delivery limit: the group's share.delivery.count.limit when set,
//     else the broker's group.share.delivery.count.limit, else Kafka's 5.
//
// Failing to set a config is an error (the connector's principal needs
// ALTER_CONFIGS on the group); failing to read the broker's limit only
// logs and keeps 5.
func (r *SinkRunner) prepareShareGroup(ctx context.Context) (int32, error) {
	group := connectnames.ShareGroup(r.cfg.ID.Connector)
	cl, err := kgo.NewClient(r.cfg.clientOpts(clientconfig.Admin, nil)...)
	if err != nil {
		return 0, fmt.Errorf("creating the admin client for share group %s: %w", group, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	set, err := describeConfigs(ctx, cl, kmsg.ConfigResourceTypeGroupConfig, group)
	if err != nil {
		return 0, fmt.Errorf("reading the configs of share group %s: %w", group, err)
	}
	want := map[string]string{}
	if _, ok := set[shareAutoOffsetReset]; !ok {
		want[shareAutoOffsetReset] = "earliest"
	}
	if _, ok := set[shareIsolationLevel]; !ok && r.cfg.ReadCommitted {
		want[shareIsolationLevel] = "read_committed"
	}
	if len(want) > 0 {
		if err := alterGroupConfigs(ctx, cl, group, want); err != nil {
			return 0, fmt.Errorf("setting %v on share group %s (the connector's principal needs ALTER_CONFIGS on the group): %w", want, group, err)
		}
		r.cfg.Logger.Info("set share group configs", "group", group, "configs", want)
	}
	r.seedShareGroup(ctx, kadm.NewClient(cl), group)
	if v, ok := set[shareDeliveryLimitKey]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return int32(n), nil
		}
	}
	broker, err := describeConfigs(ctx, cl, kmsg.ConfigResourceTypeBroker, "")
	if v, ok := broker[brokerDeliveryLimitKey]; err == nil && ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return int32(n), nil
		}
	}
	r.cfg.Logger.Warn("could not read the broker's share delivery limit; assuming Kafka's default", "key", brokerDeliveryLimitKey, "default", defaultShareDeliveryLimit, "error", err)
	return defaultShareDeliveryLimit, nil
}

// seedShareGroup starts a share group that has no start offsets yet where
// the connector's consumer group connect-<name> committed (a connector
// switched from consumer.group.type=consumer), so the switch neither skips
// nor repeats the topics: AlterShareGroupOffsets, which Kafka allows only
// while the share group has no member. A task that comes second (the
// group has offsets, or members) or lacks an ACL leaves it as it is: the
// share group then starts where share.auto.offset.reset says. Nothing here
// fails the task.
func (r *SinkRunner) seedShareGroup(ctx context.Context, adm *kadm.Client, group string) {
	described, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		r.cfg.Logger.Info("not seeding the share group: describing its offsets failed", "group", group, "error", err)
		return
	}
	for _, ps := range described[group].Offsets {
		for _, o := range ps {
			if o.Err == nil && o.StartOffset >= 0 {
				return // it has its own positions
			}
		}
	}
	classic := connectnames.SinkGroup(r.cfg.ID.Connector)
	fetched, err := adm.FetchOffsets(ctx, classic)
	if err != nil {
		r.cfg.Logger.Info("not seeding the share group from the consumer group: fetching its offsets failed", "group", group, "from", classic, "error", err)
		return
	}
	seed := kadm.Offsets{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 && r.consumes(o.Topic) {
			seed.AddOffset(o.Topic, o.Partition, o.At, -1)
		}
	})
	if len(seed) == 0 {
		return
	}
	resp, err := adm.AlterShareGroupOffsets(ctx, group, seed)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		r.cfg.Logger.Info("not seeding the share group from the consumer group", "group", group, "from", classic, "error", err)
		return
	}
	r.cfg.Logger.Info("seeded the share group from the consumer group's committed offsets", "group", group, "from", classic, "partitions", len(seed))
}

// consumes reports whether the task reads topic.
func (r *SinkRunner) consumes(topic string) bool {
	if r.cfg.TopicsRegex != "" {
		ok, _ := regexp.MatchString(plugin.TopicsRegex(r.cfg.TopicsRegex), topic)
		return ok
	}
	return slices.Contains(r.cfg.Topics, topic)
}

// describeConfigs returns the configs of one resource that are set (not
// the default), or for a broker every config with a value.
func describeConfigs(ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, name string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return nil, err
		}
		for _, c := range res.Configs {
			if c.Value == nil {
				continue
			}
			if typ == kmsg.ConfigResourceTypeGroupConfig && c.Source == kmsg.ConfigSourceDefaultConfig {
				continue
			}
			out[c.Name] = *c.Value
		}
	}
	return out, nil
}

// alterGroupConfigs sets configs of a group (IncrementalAlterConfigs SET).
func alterGroupConfigs(ctx context.Context, cl *kgo.Client, group string, configs map[string]string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = k, kmsg.StringPtr(v), kmsg.IncrementalAlterConfigOpSet
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			if res.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *res.ErrorMessage)
			}
			return err
		}
	}
	return nil
}

// shareLoop is the poll loop of share mode.
func (r *SinkRunner) shareLoop(ctx context.Context) error {
	cl := r.client
	limit := r.putLimit()
	for {
		// Nothing is held between polls: paused, the task holds no record
		// the other tasks could take.
		if done, paused := r.waitTurn(); done {
			return nil
		} else if paused {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, r.cfg.PollTimeout)
		fetches := cl.PollRecords(pctx, limit)
		cancel()
		if fetches.IsClientClosed() {
			return nil
		}
		fatal := r.fetchFatal(fetches, "consuming through share group "+connectnames.ShareGroup(r.cfg.ID.Connector))
		var records []*kgo.Record
		fetches.EachRecord(func(kr *kgo.Record) { records = append(records, kr) })
		if fatal != nil {
			markAcks(cl, kgo.AckRelease, records)
			return fatal
		}
		r.mu.Lock()
		r.idlePoll = len(records) == 0
		var err error
		if len(records) > 0 {
			err = r.deliverShareLocked(ctx, records, limit)
		}
		r.cfg.Metrics.SetSinkLag(0, int64(len(records)))
		r.mu.Unlock()
		if errors.Is(err, errStopped) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// shareAcks sorts the records of one poll by what becomes of them.
type shareAcks struct {
	put      []*kgo.Record // put; accepted once Flush succeeded
	consumed []*kgo.Record // dropped by a transform or skipped by errors.*: accepted after the dead letters
	rejected []*kgo.Record // failed for good: rejected after the dead letters
	released []*kgo.Record // to be delivered again
}

// deliverShareLocked puts one poll's records, flushes and acknowledges
// them. Records delivered for the first time go in Puts of up to limit
// records; records delivered again go one per Put.
func (r *SinkRunner) deliverShareLocked(ctx context.Context, records []*kgo.Record, limit int) error {
	if err := r.openShareLocked(ctx, records); err != nil {
		markAcks(r.client, kgo.AckRelease, records)
		return err
	}
	var acks shareAcks
	var fresh, again []*kgo.Record
	for _, kr := range records {
		if kr.DeliveryCount() > 1 {
			again = append(again, kr)
		} else {
			fresh = append(fresh, kr)
		}
	}
	r.cfg.Metrics.ShareRedelivered(len(again))
	r.cfg.Metrics.SinkRead(len(records))
	var fatal error
	batches := chunk(fresh, limit, r.cfg.MaxBatchBytes)
	for _, kr := range again {
		batches = append(batches, []*kgo.Record{kr})
	}
	for i, b := range batches {
		if r.isStopping() || fatal != nil {
			for _, rest := range batches[i:] {
				acks.released = append(acks.released, rest...)
			}
			break
		}
		fatal = r.putShareLocked(ctx, b, &acks)
	}
	// Flush what was put; accept it only when the sink made it durable.
	if len(acks.put) > 0 {
		offsets := map[data.TopicPartition]int64{}
		for _, kr := range acks.put {
			tp := data.TopicPartition{Topic: kr.Topic, Partition: kr.Partition}
			offsets[tp] = max(offsets[tp], kr.Offset+1)
		}
		start := time.Now()
		fctx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
		err := safe("flushing the sink task", func() error { return r.cfg.Task.Flush(fctx, offsets) })
		cancel()
		r.cfg.Metrics.OffsetCommit(time.Since(start), err)
		if err != nil {
			r.cfg.Logger.Warn("flush failed; releasing the records for redelivery", "records", len(acks.put), "error", err)
			acks.released = append(acks.released, acks.put...)
			acks.put = nil
		}
	}
	if len(acks.consumed) > 0 || len(acks.rejected) > 0 {
		dctx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
		if err := r.flushDeadLetters(dctx); err != nil {
			// Not acknowledged by the dead letter queue: delivered again.
			acks.released = append(acks.released, acks.consumed...)
			acks.released = append(acks.released, acks.rejected...)
			acks.consumed, acks.rejected = nil, nil
			fatal = cmpErr(fatal, err)
		}
		cancel()
	}
	cl := r.client
	markAcks(cl, kgo.AckAccept, acks.put)
	markAcks(cl, kgo.AckAccept, acks.consumed)
	markAcks(cl, kgo.AckReject, acks.rejected)
	markAcks(cl, kgo.AckRelease, acks.released)
	// Whatever is still unmarked (none, by construction) is released, never
	// auto-accepted by the next poll.
	cl.MarkAcks(kgo.AckRelease)
	actx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
	if err := cl.FlushAcks(actx); err != nil {
		r.cfg.Logger.Warn("acknowledging share records did not finish; unacknowledged records are delivered again", "error", err)
	}
	cancel()
	return fatal
}

// markAcks marks records; none marks none. (kgo's MarkAcks with no
// records marks every unmarked record of the last poll: an empty list
// must never reach it, or an empty "accepted" list would accept what
// failed.)
func markAcks(cl *kgo.Client, status kgo.AckStatus, rs []*kgo.Record) {
	if len(rs) > 0 {
		cl.MarkAcks(status, rs...)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// putShareLocked converts, transforms and puts one batch, and files each
// record under what becomes of it. It returns an error only for what
// fails the task.
func (r *SinkRunner) putShareLocked(ctx context.Context, b []*kgo.Record, acks *shareAcks) error {
	recs := make([]*plugin.SinkRecord, 0, len(b))
	krs := make([]*kgo.Record, 0, len(b))
	for i, kr := range b {
		rec := &plugin.SinkRecord{}
		if err := r.convert(kr, rec); err != nil {
			if err = r.recordFailed(ctx, kr, rec, err); err == errSkipped {
				acks.consumed = append(acks.consumed, kr)
				continue
			} else if err != nil {
				acks.released = append(acks.released, b[i:]...)
				acks.released = append(acks.released, krs...)
				return err
			}
		}
		if r.cfg.chain != nil {
			keep, err := r.transform(ctx, kr, rec)
			if err != nil {
				acks.released = append(acks.released, b[i:]...)
				acks.released = append(acks.released, krs...)
				return err
			}
			if !keep {
				acks.consumed = append(acks.consumed, kr)
				continue
			}
		}
		recs = append(recs, rec)
		krs = append(krs, kr)
	}
	if len(recs) == 0 {
		return nil
	}
	start := time.Now()
	err := safe("putting records into the sink task", func() error { return r.cfg.Task.Put(ctx, recs) })
	if err == nil {
		r.cfg.Metrics.SinkPut(len(recs), time.Since(start))
		acks.put = append(acks.put, krs...)
		return nil
	}
	if len(krs) > 1 {
		// Which record failed is unknown: release them all; delivered
		// again, each goes in a Put of its own.
		r.cfg.Logger.Info("put failed; releasing the batch, its records come back one per put", "records", len(krs), "error", err)
		acks.released = append(acks.released, krs...)
		return nil
	}
	kr := krs[0]
	if plugin.IsRetriable(err) && kr.DeliveryCount() < r.shareLimit {
		acks.released = append(acks.released, kr)
		return nil
	}
	// Failed for good: a lasting error, or a retriable one at the last
	// delivery the share group allows.
	why := "a non-retriable error"
	if plugin.IsRetriable(err) {
		why = fmt.Sprintf("delivered %d times, the share group's delivery limit", kr.DeliveryCount())
		r.cfg.Metrics.SharePastDeliveryLimit()
	}
	se := &StageError{Stage: StageTaskPut, Class: fmt.Sprintf("%T", r.cfg.Task),
		Err: fmt.Errorf("sink task refused %s-%d@%d (%s): %s", kr.Topic, kr.Partition, kr.Offset, why, err.Error())}
	herr := r.errs.handle(ctx, se, func() error { return se }, failedRecord{kafka: kr})
	if herr == errSkipped {
		acks.rejected = append(acks.rejected, kr)
		return nil
	}
	acks.released = append(acks.released, kr)
	return herr
}

// chunk splits records into Puts of at most limit records and about
// maxBytes of keys and values.
func chunk(records []*kgo.Record, limit, maxBytes int) [][]*kgo.Record {
	var out [][]*kgo.Record
	var cur []*kgo.Record
	size := 0
	for _, kr := range records {
		if len(cur) > 0 && (len(cur) >= limit || size+len(kr.Key)+len(kr.Value) > maxBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, kr)
		size += len(kr.Key) + len(kr.Value)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// openShareLocked opens the partitions of records the task has not seen
// yet: in share mode the task holds no assignment of its own, so a
// partition is opened before its first record is put and stays open until
// the task stops.
func (r *SinkRunner) openShareLocked(ctx context.Context, records []*kgo.Record) error {
	var opened []data.TopicPartition
	for _, kr := range records {
		tp := data.TopicPartition{Topic: kr.Topic, Partition: kr.Partition}
		if !r.assigned[tp] && !slices.Contains(opened, tp) {
			opened = append(opened, tp)
		}
	}
	if len(opened) == 0 {
		return nil
	}
	if err := safe("opening partitions in the sink task", func() error { return r.cfg.Task.Open(ctx, opened) }); err != nil {
		return fmt.Errorf("opening partitions %v: %w", opened, err)
	}
	for _, tp := range opened {
		r.assigned[tp] = true
	}
	snap := sortedTPs(r.assigned)
	r.assignSnap.Store(&snap)
	r.cfg.Metrics.SetPartitionCount(len(snap))
	return nil
}

// runShare runs the task in share mode until it stops or fails. Every
// poll was flushed and acknowledged before the next, so stopping has
// nothing to flush: the task's partitions are closed, and the client,
// closing, leaves the share group and releases what it still holds, so
// another task gets it at once (a planned scale-down loses no time).
func (r *SinkRunner) runShare(ctx context.Context) {
	cl := r.client
	r.setState(StateRunning, "")
	if err := r.shareLoop(ctx); err != nil {
		r.fail(err)
	}
	r.mu.Lock()
	if tps := sortedTPs(r.assigned); len(tps) > 0 && r.failed() == nil {
		if err := safe("closing partitions in the sink task", func() error { return r.cfg.Task.Close(ctx, tps) }); err != nil {
			r.cfg.Logger.Warn("closing partitions failed", "error", err)
		}
	}
	clear(r.assigned)
	r.mu.Unlock()
	cl.Close()
	r.stopTask()
	if r.failed() == nil {
		r.setState(StateUnassigned, "")
	}
}
