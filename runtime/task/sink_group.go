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
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/group"
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

// leaveStatic sends a LeaveGroup naming this static member's instance id.
func (r *SinkRunner) leaveStatic(cl *kgo.Client) {
	memberID, _ := cl.GroupMetadata()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = connectnames.SinkGroup(r.cfg.ID.Connector)
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = memberID
	m.InstanceID = kmsg.StringPtr(r.cfg.InstanceID)
	m.Reason = kmsg.StringPtr("task stopped")
	req.Members = append(req.Members, m)
	lctx, cancel := context.WithTimeout(r.runCtx, leaveWait)
	defer cancel()
	if _, err := req.RequestWith(lctx, cl); err != nil {
		r.cfg.Logger.Warn("leaving the consumer group failed; the group drops this member after its session timeout", "error", err)
	}
}

// takeOverStatic prepares a static sink consumer's first JoinGroup. The
// worker group has just given this task to this worker, so a static member
// of the same task under another worker's name (the task ran there before
// that worker was killed, and moved here) will never join again: it is
// removed by instance id (KIP-345's removal, as kadm sends it). Left in
// place it holds every rebalance of the sink group open until its session
// expires; on kfake, where a member killed while the coordinator held its
// JoinGroup gets no session at all, until the rebalance deadline, and in a
// stable group it keeps its partitions, which nobody then reads. A live
// previous owner (its task stopping) leaves by itself anyway. Failures are
// logged; the consumer joins anyway.
//
// It does not wait, as a restarted worker does, while the group completes
// a rebalance with this task's previous incarnation in it: when that
// incarnation was the group's leader and died before its SyncGroup, only
// replacing it ends the round early, and waiting held the other members in
// SyncGroup for a rebalance timeout.
func (r *SinkRunner) takeOverStatic(ctx context.Context) {
	cl, err := kgo.NewClient(r.cfg.clientOpts(clientconfig.Consumer, nil)...)
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, takeOverWait)
	defer cancel()
	conn := r.cfg.ID.Connector
	sinkGroup := connectnames.SinkGroup(conn)
	sameTaskElsewhere := func(id string) string {
		w := connectnames.SinkInstanceWorker(conn, id)
		if w == "" || id == r.cfg.InstanceID || id != connectnames.SinkInstanceID(w, conn, r.cfg.ID.Task) {
			return ""
		}
		return w
	}
	noWorkerElse := func(context.Context) (map[string]bool, error) { return nil, nil }
	removed, err := group.RemoveDeparted(ctx, kadm.NewClient(cl), map[string]group.Owner{sinkGroup: sameTaskElsewhere}, noWorkerElse, "task moved to another worker")
	if err != nil {
		r.cfg.Logger.Warn("removing this task's static members on other workers failed", "error", err)
	} else if len(removed[sinkGroup]) > 0 {
		r.cfg.Logger.Info("removed this task's static members on other workers", "members", removed[sinkGroup])
	}
}

// takeOverWait bounds takeOverStatic's calls.
const takeOverWait = 5 * time.Second

// groupRound tells whether the sink consumer is inside a group round: from
// the write of a JoinGroup until the answer to its SyncGroup. franz-go
// sends no heartbeat in that time (its heartbeat loop runs between rounds).
//
// Kafka needs none: its coordinator keeps a member alive while its
// JoinGroup or SyncGroup is held. kfake does not (groups.go: the session
// timer of a member keeps running from its last heartbeat while the
// coordinator holds its JoinGroup or SyncGroup), so a round held longer
// than the consumer's session (a member that never rejoins holds it up to
// the rebalance deadline; a dead leader holds the SyncGroups up to the
// rebalance timeout) drops the members waiting in it. Their JoinGroups are
// then never answered: each waits out franz-go's request timeout
// (rebalance timeout plus 10s), joins again as a new member and restarts
// the rebalance deadline, and a member dropped while it waited in
// SyncGroup is counted by kfake as one that joined, so the next round
// completes only at its deadline. That is how a sink group stalled for
// minutes with JoinGroups and commits timing out. keepAlive sends the
// heartbeats franz-go does not, while a round is held: under Kafka they
// change nothing.
type groupRound struct {
	open atomic.Bool
}

// OnBrokerWrite opens the round when a JoinGroup or SyncGroup is written.
func (g *groupRound) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && (key == kmsg.JoinGroup.Int16() || key == kmsg.SyncGroup.Int16()) {
		g.open.Store(true)
	}
}

// OnBrokerRead closes it when a SyncGroup answer arrives (the round's end,
// whatever the answer: a failed round starts again with a JoinGroup).
func (g *groupRound) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == kmsg.SyncGroup.Int16() {
		g.open.Store(false)
	}
}

// keepAliveInterval is how often keepAlive heartbeats: a third of the
// consumer's session timeout, at most franz-go's default 3s.
func (r *SinkRunner) keepAliveInterval() time.Duration {
	const def = 3 * time.Second
	if s := r.cfg.SessionTimeout / 3; s > 0 && s < def {
		return s
	}
	return def
}

// keepAlive heartbeats for the consumer while its group round is held,
// until ctx ends (see groupRound). The answers are not needed: franz-go's
// own round learns everything it must.
func (r *SinkRunner) keepAlive(ctx context.Context, cl *kgo.Client) {
	t := time.NewTicker(r.keepAliveInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !r.round.open.Load() {
			continue
		}
		memberID, gen := cl.GroupMetadata()
		if memberID == "" || gen <= 0 {
			continue // a new member: the coordinator starts its session when it answers
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group = connectnames.SinkGroup(r.cfg.ID.Connector)
		req.MemberID = memberID
		req.Generation = gen
		if r.cfg.InstanceID != "" {
			req.InstanceID = kmsg.StringPtr(r.cfg.InstanceID)
		}
		hctx, cancel := context.WithTimeout(ctx, r.keepAliveInterval())
		_, _ = req.RequestWith(hctx, cl)
		cancel()
	}
}
