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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Resumer is an optional Handler method for static members. A restarted
// static member (same InstanceID, no member id yet) that finds its previous
// incarnation in a stable group is shown the metadata that incarnation
// joined with; Resume returns the metadata to join with instead of
// Metadata's, or ok=false to join with its own.
//
// Why: in a stable group Kafka hands a returning static member its previous
// assignment without a rebalance whatever metadata it sends, but kfake
// (groups.go replaceStaticMember) does so only when the metadata is byte for
// byte the previous one, and rebalances otherwise. Joining with the previous
// metadata gives the same outcome on both: the coordinator's view of the
// member is the one it had before the restart.
type Resumer interface {
	Resume(previous []byte) (metadata []byte, ok bool)
}

// resumeMetadata returns the metadata a restarting static member joins
// with: its previous incarnation's when the Handler accepts it, else nil.
//
// Before that, while the group is CompletingRebalance with the previous
// incarnation in it, it waits (up to a session timeout and a heartbeat
// interval) for the group to leave that state. kfake (groups.go
// replaceStaticMember) miscounts the members that are joining when a
// static member replaces an incarnation that was waiting in SyncGroup: the
// rebalance that follows counts one joined member too few, so it completes
// only at its deadline, however soon every member has joined. Replaced
// after the group left CompletingRebalance, the incarnation waits in
// nothing and is counted right. The state lasts until the leader's
// SyncGroup (milliseconds) or, when the leader died, until the leader's
// session ends; a leader that died before its JoinGroup answer reached it
// has no session on kfake, and the state lasts to the coordinator's sync
// deadline, a whole rebalance timeout, unless that leader is this
// member's previous incarnation: then only this member's join ends it, so
// the wait stops after a session timeout (a wait of a rebalance timeout
// here was one way a storm converged only a minute after its last fault).
// Kafka behaves the same with or without the wait.
func (m *Member) resumeMetadata(ctx context.Context) []byte {
	if m.cfg.InstanceID == "" {
		return nil
	}
	g, ok := m.describe(ctx)
	for deadline := time.Now().Add(m.cfg.SessionTimeout + m.cfg.HeartbeatInterval); ok && g.State == "CompletingRebalance" && m.inGroup(g) && time.Now().Before(deadline); {
		m.setPhase("waiting for the group to finish assigning its generation before taking back this worker's static membership")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(m.cfg.HeartbeatInterval):
		}
		g, ok = m.describe(ctx)
	}
	r, resumer := m.cfg.Handler.(Resumer)
	if !ok || !resumer || g.State != "Stable" {
		return nil
	}
	for _, gm := range g.Members {
		if gm.InstanceID == nil || *gm.InstanceID != m.cfg.InstanceID || len(gm.ProtocolMetadata) == 0 {
			continue
		}
		if md, ok := r.Resume(gm.ProtocolMetadata); ok {
			m.log.Info("taking back this worker's static membership", "previous_member", gm.MemberID)
			return md
		}
	}
	return nil
}

// describe returns the group as DescribeGroups shows it; ok=false if it
// cannot be read.
func (m *Member) describe(ctx context.Context) (kmsg.DescribeGroupsResponseGroup, bool) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{m.cfg.Group}
	dctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout)
	resp, err := req.RequestWith(dctx, m.cfg.Client)
	cancel()
	if err != nil || len(resp.Groups) != 1 {
		m.log.Debug("describing the group before a static rejoin", "err", err)
		return kmsg.DescribeGroupsResponseGroup{}, false
	}
	g := resp.Groups[0]
	if kerr.ErrorForCode(g.ErrorCode) != nil {
		return kmsg.DescribeGroupsResponseGroup{}, false
	}
	return g, true
}

// inGroup reports whether g lists this member's instance id.
func (m *Member) inGroup(g kmsg.DescribeGroupsResponseGroup) bool {
	for _, gm := range g.Members {
		if gm.InstanceID != nil && *gm.InstanceID == m.cfg.InstanceID {
			return true
		}
	}
	return false
}
