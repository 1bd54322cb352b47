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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinAndSync runs one rebalance from this member's side.
func (m *Member) joinAndSync(ctx context.Context) (Next, error) {
	m.mu.Lock()
	lost := m.lost
	m.lost, m.wantRejoin, m.rebalancing = false, false, true
	m.joins++
	join := m.joins
	if lost {
		m.memberID = ""
		m.gen = Generation{}
	}
	m.mu.Unlock()
	if lost {
		m.log.Warn("this worker lost its group membership; stopping its work before joining again")
		m.cfg.Handler.Lost(ctx)
	}
	m.cfg.Handler.RebalanceStarted()

	gen, members, skip, err := m.join(ctx)
	if err != nil {
		return Next{}, err
	}
	var assignments []kmsg.SyncGroupRequestGroupAssignment
	// SkipAssignment (KIP-814): a static leader that took back its place
	// in a stable group syncs without assigning; the group keeps its
	// assignments.
	if gen.Leader() && !skip {
		m.setPhase(fmt.Sprintf("assigning generation %d as the leader", gen.ID))
		byMember, err := m.cfg.Handler.Assign(ctx, gen, members)
		if err != nil {
			return Next{}, fmt.Errorf("assigning generation %d as the leader: %w", gen.ID, err)
		}
		for id, a := range byMember {
			assignments = append(assignments, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
		}
	}
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = m.cfg.Group
	req.Generation = gen.ID
	req.MemberID = gen.MemberID
	req.InstanceID = m.instanceID()
	req.ProtocolType = kmsg.StringPtr(ProtocolType)
	req.Protocol = kmsg.StringPtr(m.cfg.Protocol)
	req.GroupAssignment = assignments
	m.setPhase(fmt.Sprintf("waiting for the SyncGroup answer of generation %d", gen.ID))
	sctx, cancel := context.WithTimeout(ctx, m.requestTimeout())
	resp, err := req.RequestWith(sctx, m.cfg.Client)
	cancel()
	if err != nil {
		return Next{}, fmt.Errorf("SyncGroup (waited up to %s): %w", m.requestTimeout(), err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if m.memberGone(err) {
			return Next{}, fmt.Errorf("SyncGroup: %w (joining again as a new member)", err)
		}
		return Next{}, fmt.Errorf("SyncGroup: %w", err)
	}
	m.setPhase(fmt.Sprintf("applying the assignment of generation %d", gen.ID))
	next, err := m.cfg.Handler.Assigned(ctx, gen, resp.MemberAssignment)
	if err != nil {
		return Next{}, fmt.Errorf("applying the assignment of generation %d: %w", gen.ID, err)
	}
	m.succeeded()
	m.mu.Lock()
	m.applied = join
	close(m.appliedCh)
	m.appliedCh = make(chan struct{})
	m.rebalancing = next.Rejoin && next.After <= 0
	m.mu.Unlock()
	return next, nil
}

// memberGone handles errors that end this membership: the member joins
// again without its id (and the Handler hears Lost first).
func (m *Member) memberGone(err error) bool {
	if errors.Is(err, kerr.FencedInstanceID) {
		m.log.Error("another process joined the group with this worker's group.instance.id; stopping this worker's work",
			"hint", "every worker of a cluster needs its own group.instance.id (the operator uses the pod name)")
	}
	if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.FencedInstanceID) {
		m.mu.Lock()
		m.lost = m.gen.ID > 0
		m.memberID = ""
		m.gen = Generation{}
		m.mu.Unlock()
		return true
	}
	return false
}

// requestTimeout bounds a SyncGroup: the coordinator may hold it for up
// to the rebalance timeout.
func (m *Member) requestTimeout() time.Duration { return m.cfg.RebalanceTimeout + requestMargin }

// join sends JoinGroup until the coordinator answers with a generation; skip
// reports SkipAssignment (the leader must not assign).
func (m *Member) join(ctx context.Context) (gen Generation, members []JoinedMember, skip bool, err error) {
	for {
		md, err := m.cfg.Handler.Metadata()
		if err != nil {
			return Generation{}, nil, false, fmt.Errorf("building member metadata: %w", err)
		}
		m.mu.Lock()
		memberID := m.memberID
		m.mu.Unlock()
		if memberID == "" {
			if prev := m.resumeMetadata(ctx); prev != nil {
				md = prev
			}
		}
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = m.cfg.Group
		req.SessionTimeoutMillis = int32(m.cfg.SessionTimeout / time.Millisecond)
		req.RebalanceTimeoutMillis = int32(m.cfg.RebalanceTimeout / time.Millisecond)
		req.MemberID = memberID
		req.InstanceID = m.instanceID()
		req.ProtocolType = ProtocolType
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: m.cfg.Protocol, Metadata: md}}
		m.setPhase("waiting for the coordinator to complete the rebalance (JoinGroup sent)")
		jctx, held, cancel := m.joinContext(ctx, memberID)
		resp, err := req.RequestWith(jctx, m.cfg.Client)
		cause := context.Cause(jctx)
		cancel()
		m.mu.Lock()
		m.abortJoin = nil
		m.mu.Unlock()
		switch {
		case err == nil:
		case errors.Is(cause, errJoinAbandoned):
			return Generation{}, nil, false, fmt.Errorf("JoinGroup: %w", cause)
		case held:
			return Generation{}, nil, false, fmt.Errorf("JoinGroup (held as long as the coordinator kept this member's session): %w", err)
		default:
			return Generation{}, nil, false, fmt.Errorf("JoinGroup (held up to %s, %d rebalance timeouts, as a member that cannot heartbeat yet): %w", m.firstJoinHold(), firstJoinHoldTimeouts, err)
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		switch {
		case err == nil:
		case errors.Is(err, kerr.MemberIDRequired):
			m.mu.Lock()
			m.memberID = resp.MemberID
			m.mu.Unlock()
			continue
		case m.memberGone(err):
			return Generation{}, nil, false, fmt.Errorf("JoinGroup: %w (joining again as a new member)", err)
		case errors.Is(err, kerr.InconsistentGroupProtocol):
			return Generation{}, nil, false, &FatalError{Group: m.cfg.Group, Op: "JoinGroup", Err: err,
				Fix: fmt.Sprintf("the group is used by members of another kind (a consumer group, or Kafka Connect workers with another protocol than %q): give this cluster its own group.id", m.cfg.Protocol)}
		case errors.Is(err, kerr.InvalidSessionTimeout):
			return Generation{}, nil, false, &FatalError{Group: m.cfg.Group, Op: "JoinGroup", Err: err,
				Fix: fmt.Sprintf("session.timeout.ms=%d is outside the broker's group.min.session.timeout.ms..group.max.session.timeout.ms: change session.timeout.ms", req.SessionTimeoutMillis)}
		case errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.InvalidGroupID):
			return Generation{}, nil, false, &FatalError{Group: m.cfg.Group, Op: "JoinGroup", Err: err,
				Fix: "grant this worker's principal READ on the group, or set group.id to a group it may use"}
		default:
			return Generation{}, nil, false, fmt.Errorf("JoinGroup: %w", err)
		}
		gen = Generation{ID: resp.Generation, MemberID: resp.MemberID, LeaderID: resp.LeaderID}
		m.mu.Lock()
		m.memberID, m.gen = resp.MemberID, gen
		m.lastHB = time.Now()
		m.mu.Unlock()
		if gen.Leader() {
			for _, jm := range resp.Members {
				members = append(members, JoinedMember{ID: jm.MemberID, Metadata: jm.ProtocolMetadata})
			}
		}
		return gen, members, resp.SkipAssignment, nil
	}
}

// errJoinAbandoned is the cause of a held JoinGroup given up because the
// coordinator no longer knows the member (see joinContext).
var errJoinAbandoned = errors.New("abandoned: the coordinator no longer knows this member or stopped answering its heartbeats")

// joinContext bounds one JoinGroup. How a pending JoinGroup is retried
// decides whether the retries themselves can keep a rebalance open:
//
//   - Kafka fixes a rebalance's deadline when the rebalance begins and
//     answers every held JoinGroup by rebalance.timeout.ms, so its clients
//     give up on a JoinGroup after rebalance.timeout.ms plus 5s and send it
//     again.
//   - kfake restarts the deadline on every JoinGroup (groups.go: "Always
//     reset the timer with the current max rebalance timeout"). A member
//     that abandons its held JoinGroup and sends it again after 65s
//     against a 60s deadline restarts the deadline each time; two such
//     members kept a group in PreparingRebalance for minutes. And kfake
//     can miscount who is joining (a static member replaced while the
//     old process waited in SyncGroup counts as not joining), so that
//     deadline may be the only way the rebalance completes: three
//     restarted workers re-sending their first JoinGroup every 25s
//     against a 20s deadline kept it from firing for as long as anyone
//     watched.
//
// So a member the coordinator already knows (it has a member id and a
// generation, and heartbeats while it joins) keeps its one JoinGroup
// outstanding for as long as it takes: no client-side deadline, and no
// second JoinGroup. It gives up only when the heartbeats running beside
// the join say the coordinator dropped the member (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID) or stopped answering for a session timeout, or when
// the connection fails (kgo reports it); then it joins again as a new
// member. A member that cannot heartbeat yet (a first join: a restarted
// static worker, or a new one) holds its JoinGroup for
// firstJoinHoldTimeouts rebalance timeouts. Kafka answers it within one,
// so the bound only guards against a coordinator that never answers; and
// with each member re-sending at most once per that bound, up to that many
// members leave the deadline a gap of a whole rebalance timeout to fire
// in. Whatever the retries do, what must not stay in the group is a member
// that never rejoins: the static identities of workers gone for good are
// removed by name (depart.go).
func (m *Member) joinContext(ctx context.Context, memberID string) (context.Context, bool, context.CancelFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if memberID == "" || m.gen.ID <= 0 || m.gen.MemberID != memberID {
		c, cancel := context.WithTimeout(ctx, m.firstJoinHold())
		return c, false, cancel
	}
	c, cancel := context.WithCancelCause(ctx)
	m.abortJoin = cancel
	return c, true, func() { cancel(nil) }
}

// firstJoinHoldTimeouts is how many rebalance timeouts a member that
// cannot heartbeat yet holds its JoinGroup (see joinContext).
const firstJoinHoldTimeouts = 10

// firstJoinHold bounds the JoinGroup of a member that cannot heartbeat yet.
func (m *Member) firstJoinHold() time.Duration {
	return firstJoinHoldTimeouts * m.cfg.RebalanceTimeout
}
