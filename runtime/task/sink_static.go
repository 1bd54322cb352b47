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
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
// removed by instance id, or it would hold every rebalance of the sink
// group open until its session expires (on kfake, where a member killed
// while its JoinGroup was held has no session, until the rebalance
// deadline, which the consumers' re-sent JoinGroups keep pushing out).
// Failures are logged; the consumer joins anyway. (It does not wait, as a
// restarted worker does, while the group completes a rebalance with its
// previous incarnation in it: in the cluster tier that wait, up to a
// rebalance timeout before the first JoinGroup, held other tasks'
// JoinGroups until they timed out.)
func (r *SinkRunner) takeOverStatic(ctx context.Context) {
	cl, err := kgo.NewClient(r.cfg.clientOpts(nil)...)
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	conn, task := r.cfg.ID.Connector, strconv.Itoa(r.cfg.ID.Task)
	sinkGroup := connectnames.SinkGroup(conn)
	sameTaskElsewhere := func(id string) string {
		w := connectnames.SinkInstanceWorker(conn, id)
		if w == "" || id == r.cfg.InstanceID || !strings.HasSuffix(id, "-"+task) {
			return ""
		}
		return w
	}
	noWorkerElse := func(context.Context) (map[string]bool, error) { return nil, nil }
	removed, err := group.RemoveDeparted(ctx, adm, map[string]group.Owner{sinkGroup: sameTaskElsewhere}, noWorkerElse, "task moved to another worker")
	if err != nil {
		r.cfg.Logger.Warn("removing this task's static members on other workers failed", "error", err)
	} else if len(removed[sinkGroup]) > 0 {
		r.cfg.Logger.Info("removed this task's static members on other workers", "members", removed[sinkGroup])
	}
}
