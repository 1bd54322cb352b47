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
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/group"
)

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
