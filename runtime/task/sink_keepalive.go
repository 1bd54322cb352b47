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
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
)

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
