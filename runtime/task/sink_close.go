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

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
