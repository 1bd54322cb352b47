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

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
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
