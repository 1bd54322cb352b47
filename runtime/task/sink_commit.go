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
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// flushAndCommitLocked flushes the task for the given partitions (nil: all
// assigned) and commits their offsets once Flush succeeded. When Flush
// fails and rewind is set, the consumer goes back to the last committed
// offsets so the unflushed records are delivered again.
func (r *SinkRunner) flushAndCommitLocked(ctx context.Context, tps []data.TopicPartition, rewind bool) error {
	if tps == nil {
		tps = sortedTPs(r.assigned)
	}
	offsets := map[data.TopicPartition]int64{}
	commit := map[string]map[int32]kgo.EpochOffset{}
	for _, tp := range tps {
		eo, ok := r.current[tp]
		if !ok {
			continue
		}
		if c, ok := r.committed[tp]; ok && c == eo.Offset {
			continue
		}
		offsets[tp] = eo.Offset
		if commit[tp.Topic] == nil {
			commit[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		commit[tp.Topic][tp.Partition] = eo
	}
	if len(offsets) == 0 {
		return nil
	}
	start := time.Now()
	// Bounded by offset.flush.timeout.ms, and cut short when the task is
	// abandoned (callbacks pass the client's context, not the task's).
	cctx, cancel := context.WithTimeout(ctx, r.cfg.OffsetFlushTimeout)
	defer cancel()
	defer context.AfterFunc(r.runCtx, cancel)()
	if err := safe("flushing the sink task", func() error { return r.flushTask(cctx, offsets, commit) }); err != nil {
		r.cfg.Metrics.OffsetCommit(time.Since(start), err)
		if rewind {
			r.rewindLocked(offsets)
		}
		return err
	}
	if len(commit) == 0 {
		return nil
	}
	// Skipped records' offsets are among these, and those of records the
	// task reported as errant up to its Flush: commit them only once their
	// dead letters were acknowledged.
	if err := r.flushDeadLetters(cctx); err != nil {
		r.cfg.Metrics.OffsetCommit(time.Since(start), err)
		return err
	}
	var cerr error
	r.client.CommitOffsetsSync(cctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
					cerr = fmt.Errorf("committing %s-%d: %w", t.Topic, p.Partition, err)
				}
			}
		}
	})
	r.cfg.Metrics.OffsetCommit(time.Since(start), cerr)
	if cerr != nil {
		return fmt.Errorf("committing offsets of connector %s: %w", r.cfg.ID.Connector, cerr)
	}
	for t, ps := range commit {
		for p, eo := range ps {
			r.committed[data.TopicPartition{Topic: t, Partition: p}] = eo.Offset
		}
	}
	r.updateLagLocked()
	return nil
}

// flushTask makes the records put durable: Flush, or for a task that
// implements plugin.SinkPreCommitter its PreCommit, whose answer narrows
// commit to the offsets it declares durable.
func (r *SinkRunner) flushTask(ctx context.Context, offsets map[data.TopicPartition]int64, commit map[string]map[int32]kgo.EpochOffset) error {
	pc, ok := r.cfg.Task.(plugin.SinkPreCommitter)
	if !ok {
		return r.cfg.Task.Flush(ctx, offsets)
	}
	durable, err := pc.PreCommit(ctx, offsets)
	if err != nil {
		return err
	}
	for t, ps := range commit {
		for p, eo := range ps {
			tp := data.TopicPartition{Topic: t, Partition: p}
			o, ok := durable[tp]
			if ok && o >= r.given[tp] {
				// Everything the task got is durable: what followed it
				// and never reached the task (transaction markers,
				// records skipped or dropped) is consumed all the same.
				o = max(o, eo.Offset)
			}
			c, done := r.committed[tp]
			switch {
			case !ok || (done && o <= c):
				delete(ps, p)
			case o < eo.Offset:
				ps[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
			}
		}
		if len(ps) == 0 {
			delete(commit, t)
		}
	}
	return nil
}

// rewindLocked seeks the given partitions back to their last committed
// offsets after a failed flush.
func (r *SinkRunner) rewindLocked(offsets map[data.TopicPartition]int64) {
	seek := map[string]map[int32]kgo.EpochOffset{}
	for tp := range offsets {
		c, ok := r.committed[tp]
		if !ok {
			continue
		}
		if seek[tp.Topic] == nil {
			seek[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		seek[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: c}
		r.current[tp] = kgo.EpochOffset{Epoch: -1, Offset: c}
	}
	if len(seek) > 0 {
		r.cfg.Logger.Info("flush failed; rewinding to the last committed offsets", "partitions", len(offsets))
		r.client.SetOffsets(seek)
	}
}

// applyResetsLocked applies offsets the task asked for with ResetOffsets
// and adds the partitions it moved to reset (when not nil): records of
// theirs already fetched were read from the old position, and must not be
// delivered (see deliverLocked).
func (r *SinkRunner) applyResetsLocked(reset map[data.TopicPartition]bool) {
	resets := r.tc.takeResets()
	if len(resets) == 0 {
		return
	}
	seek := map[string]map[int32]kgo.EpochOffset{}
	for tp, o := range resets {
		if !r.assigned[tp] {
			continue
		}
		if seek[tp.Topic] == nil {
			seek[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		seek[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o}
		r.current[tp] = kgo.EpochOffset{Epoch: -1, Offset: o}
		if reset != nil {
			reset[tp] = true
		}
	}
	r.client.SetOffsets(seek)
}
