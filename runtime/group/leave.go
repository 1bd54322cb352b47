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

package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Leave stops the loop and leaves the group, so the coordinator rebalances
// at once instead of waiting for the session to expire. Call it after the
// work this member ran was stopped (flushed and committed).
func (m *Member) Leave(ctx context.Context) error {
	if err := m.stopLoop(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	id := m.memberID
	m.memberID, m.gen = "", Generation{}
	m.mu.Unlock()
	if id == "" && m.cfg.InstanceID == "" {
		return nil
	}
	// A static member leaves at once too (Kafka's consumers leave it to
	// the session timeout): LeaveGroup v3+ names it by its instance id in
	// the members array, so the coordinator rebalances now.
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.cfg.Group
	req.MemberID = id
	reason := "worker shutting down"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id, InstanceID: m.instanceID(), Reason: &reason}}
	resp, err := req.RequestWith(ctx, m.cfg.Client)
	if err != nil {
		return fmt.Errorf("group %q: LeaveGroup: %w", m.cfg.Group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("group %q: LeaveGroup: %w", m.cfg.Group, err)
	}
	for _, mr := range resp.Members {
		if err := kerr.ErrorForCode(mr.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			return fmt.Errorf("group %q: LeaveGroup: %w", m.cfg.Group, err)
		}
	}
	m.log.Info("left the group", "member", id)
	return nil
}

// Abandon stops the loop without leaving: the coordinator notices only when
// the session expires (tests use it to act out a crash).
func (m *Member) Abandon() { _ = m.stopLoop(context.Background()) }

// stopLoop stops Run and waits for it.
func (m *Member) stopLoop(ctx context.Context) error {
	m.stopOnce.Do(func() { close(m.stop) })
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("group %q: waiting for the member loop to stop: %w", m.cfg.Group, ctx.Err())
	}
}
