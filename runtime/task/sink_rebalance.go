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
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

func toTPs(m map[string][]int32) []data.TopicPartition {
	var out []data.TopicPartition
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, data.TopicPartition{Topic: t, Partition: p})
		}
	}
	sortTPs(out)
	return out
}

func sortedTPs(m map[data.TopicPartition]bool) []data.TopicPartition {
	out := make([]data.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

func sortTPs(s []data.TopicPartition) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Topic != s[j].Topic {
			return s[i].Topic < s[j].Topic
		}
		return s[i].Partition < s[j].Partition
	})
}

// onAssigned runs in the group goroutine, never concurrently with a polled
// batch (BlockRebalanceOnPoll): it opens the new partitions in the task.
func (r *SinkRunner) onAssigned(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	tps := toTPs(m)
	if len(tps) == 0 {
		return
	}
	r.inCallback.Add(1)
	defer r.inCallback.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	known := cl.CommittedOffsets()
	for _, tp := range tps {
		r.assigned[tp] = true
		if eo, ok := known[tp.Topic][tp.Partition]; ok && eo.Offset >= 0 {
			r.committed[tp] = eo.Offset
		}
	}
	r.publishAssignmentLocked()
	r.cfg.Logger.Info("partitions assigned", "partitions", tpsString(tps))
	if r.noCommit {
		return
	}
	if err := safe("opening partitions in the sink task", func() error { return r.cfg.Task.Open(ctx, tps) }); err != nil {
		r.noCommit = true
		r.lifecycle.fail(err)
		r.signal()
	}
}

// onRevoked flushes and commits the revoked partitions before the
// rebalance goes on, then closes them in the task.
func (r *SinkRunner) onRevoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	r.closePartitions(ctx, toTPs(m), false)
}

// onLost closes lost partitions without committing: another member may own
// them already.
func (r *SinkRunner) onLost(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	r.closePartitions(ctx, toTPs(m), true)
}

func (r *SinkRunner) closePartitions(ctx context.Context, tps []data.TopicPartition, lost bool) {
	if len(tps) == 0 {
		return
	}
	r.inCallback.Add(1)
	defer r.inCallback.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !lost && !r.noCommit && r.runCtx.Err() == nil {
		if err := r.flushAndCommitLocked(ctx, tps, false); err != nil {
			r.cfg.Logger.Warn("flush and commit before revoking partitions failed; their records since the last commit will be delivered again", "error", err)
		}
	}
	if err := safe("closing partitions in the sink task", func() error { return r.cfg.Task.Close(ctx, tps) }); err != nil {
		r.cfg.Logger.Warn("sink task close failed", "error", err)
	}
	for _, tp := range tps {
		delete(r.assigned, tp)
		delete(r.current, tp)
		delete(r.committed, tp)
		delete(r.given, tp)
		delete(r.hwm, tp)
	}
	r.publishAssignmentLocked()
	r.updateLagLocked()
	r.cfg.Logger.Info("partitions revoked", "partitions", tpsString(tps), "lost", lost)
}

func (r *SinkRunner) publishAssignmentLocked() {
	tps := sortedTPs(r.assigned)
	r.assignSnap.Store(&tps)
	r.cfg.Metrics.SetPartitionCount(len(tps))
}

func tpsString(tps []data.TopicPartition) string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	return strings.Join(s, ",")
}
