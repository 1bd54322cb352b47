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

// Package group is membership in a Kafka group with protocol type
// "connect", spoken with raw franz-go requests (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup; kgo finds the coordinator and follows it when it
// moves). kgo's consumer-group balancer cannot carry a connector/task
// assignment, so the classic group protocol is driven here and the payloads
// (member metadata, assignments) are opaque bytes that a Handler produces
// and consumes.
//
// One Member runs one loop: join (retrying MEMBER_ID_REQUIRED), the leader
// assigns, sync, hand the assignment to the Handler, then stay until a
// heartbeat reports a rebalance, the Handler asks for a rejoin (now or after
// a delay) or RequestRejoin is called. Heartbeats run on their own
// goroutine, also while a join waits, so a slow rebalance never expires the
// session. A member that lost its membership (UNKNOWN_MEMBER_ID, fenced,
// or no heartbeat answered for a session timeout) tells the Handler to stop
// everything before it joins again as a new member.
package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProtocolType is the group protocol type of Kafka Connect workers.
const ProtocolType = "connect"

// Generation is one completed join of this member.
type Generation struct {
	// ID is the group generation.
	ID       int32
	MemberID string
	LeaderID string
}

// Leader reports whether this member leads the generation.
func (g Generation) Leader() bool { return g.MemberID != "" && g.MemberID == g.LeaderID }

// JoinedMember is a member as the leader sees it after a join.
type JoinedMember struct {
	ID       string
	Metadata []byte
}

// Next is what a member does after it applied an assignment.
type Next struct {
	// Rejoin asks for a rejoin After the given delay (at once when 0).
	Rejoin bool
	After  time.Duration
}

// Handler produces and consumes the payloads of the protocol. Its methods
// are called from the member's loop, one at a time.
type Handler interface {
	// Metadata is this member's metadata for the next join.
	Metadata() ([]byte, error)
	// Assign runs on the leader only: every member's assignment, keyed by
	// member id. An error makes the leader rejoin after a backoff instead
	// of syncing.
	Assign(ctx context.Context, gen Generation, members []JoinedMember) (map[string][]byte, error)
	// Assigned hands this member its assignment and returns once the
	// member applied it (revoked work stopped); an error makes the member
	// rejoin after a backoff.
	Assigned(ctx context.Context, gen Generation, assignment []byte) (Next, error)
	// RebalanceStarted is called when this member starts to (re)join.
	RebalanceStarted()
	// Lost says this member is no longer in the group: everything it runs
	// may run elsewhere now, so it must stop all of it before it returns.
	Lost(ctx context.Context)
}

// Config configures a Member.
type Config struct {
	// Client reaches the Kafka cluster; the member owns none of its
	// lifecycle. A client of its own keeps group requests off busy
	// connections.
	Client *kgo.Client
	Group  string
	// Protocol is the name of the one protocol members speak; members
	// with another name cannot join (INCONSISTENT_GROUP_PROTOCOL).
	Protocol          string
	SessionTimeout    time.Duration
	RebalanceTimeout  time.Duration
	HeartbeatInterval time.Duration
	// RetryBackoff is the pause before a join is retried after an error;
	// default 250ms.
	RetryBackoff time.Duration
	Handler      Handler
	Logger       *slog.Logger
}

// FatalError is a group error that retrying cannot fix (a wrong protocol,
// a refused session timeout, no authorization); Run returns it.
type FatalError struct {
	Group string
	Op    string
	Err   error
	Fix   string
}

func (e *FatalError) Error() string {
	return fmt.Sprintf("group %q: %s: %v: %s", e.Group, e.Op, e.Err, e.Fix)
}

func (e *FatalError) Unwrap() error { return e.Err }

// Member is this worker's membership in the group.
type Member struct {
	cfg Config
	log *slog.Logger

	mu          sync.Mutex
	gen         Generation // the last join; ID 0 before the first
	memberID    string     // "" before the coordinator gave one
	wantRejoin  bool
	lost        bool
	rebalancing bool
	joins       int           // joins started so far
	applied     int           // the join whose assignment was applied last
	appliedCh   chan struct{} // closed and replaced whenever applied changes
	lastHB      time.Time     // last heartbeat answered by the coordinator

	started  bool
	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// New checks cfg and returns a member; call Run to join.
func New(cfg Config) (*Member, error) {
	switch {
	case cfg.Client == nil || cfg.Handler == nil:
		return nil, errors.New("group: Client and Handler are required")
	case cfg.Group == "":
		return nil, errors.New("group: the group id is empty (set group.id)")
	case cfg.Protocol == "":
		return nil, errors.New("group: the protocol name is empty")
	case cfg.SessionTimeout <= 0 || cfg.HeartbeatInterval <= 0 || cfg.RebalanceTimeout <= 0:
		return nil, errors.New("group: session timeout, heartbeat interval and rebalance timeout must be positive")
	case cfg.HeartbeatInterval >= cfg.SessionTimeout:
		return nil, fmt.Errorf("group: heartbeat interval %v must be below the session timeout %v (heartbeat.interval.ms < session.timeout.ms; a third of it is usual)",
			cfg.HeartbeatInterval, cfg.SessionTimeout)
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 250 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Member{
		cfg: cfg, log: cfg.Logger.With("group", cfg.Group),
		appliedCh: make(chan struct{}),
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}, nil
}

// Generation returns the last generation this member joined.
func (m *Member) Generation() Generation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// Rebalancing reports whether this member is between the start of a
// rebalance and the application of its assignment.
func (m *Member) Rebalancing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rebalancing
}

// RequestRejoin makes the member rejoin soon (e.g. the set of connectors
// or tasks changed and the leader must assign again).
func (m *Member) RequestRejoin() {
	m.mu.Lock()
	m.wantRejoin = true
	m.mu.Unlock()
	m.poke()
}

func (m *Member) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Rebalance asks for a rejoin and waits until this member applied the
// assignment of a join that started after the call (so with the metadata
// the Handler gives from now on), or ctx ends. The coordinator starts a new
// generation only when the leader rejoins or a member's metadata changed;
// otherwise the member gets the current assignment again.
func (m *Member) Rebalance(ctx context.Context) error {
	m.mu.Lock()
	from, ch := m.joins, m.appliedCh
	m.wantRejoin = true
	m.mu.Unlock()
	m.poke()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %q: waiting for a rebalance: %w", m.cfg.Group, ctx.Err())
		case <-m.done:
			return fmt.Errorf("group %q: the member stopped before the rebalance completed", m.cfg.Group)
		case <-ch:
		}
		m.mu.Lock()
		cur := m.applied
		ch = m.appliedCh
		m.mu.Unlock()
		if cur > from {
			return nil
		}
	}
}

// Run joins the group and stays in it until ctx ends or Leave is called
// (then it returns nil), or a FatalError.
func (m *Member) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("group: Run called twice")
	}
	m.started = true
	m.mu.Unlock()
	defer close(m.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		m.heartbeats(ctx)
	}()
	defer func() {
		cancel()
		hb.Wait()
	}()

	var rejoinAt <-chan time.Time
	for {
		next, err := m.joinAndSync(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			var fe *FatalError
			if errors.As(err, &fe) {
				return err
			}
			m.log.Warn("group rebalance failed; retrying", "err", err, "backoff", m.cfg.RetryBackoff)
			if !sleep(ctx, m.cfg.RetryBackoff) {
				return nil
			}
			continue
		}
		rejoinAt = nil
		if next.Rejoin {
			if next.After <= 0 {
				continue
			}
			rejoinAt = time.After(next.After)
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-rejoinAt:
				break wait
			case <-m.wake:
				m.mu.Lock()
				lost, rejoin := m.lost, m.wantRejoin
				m.mu.Unlock()
				if lost || rejoin {
					break wait
				}
			}
		}
	}
}

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

	gen, members, err := m.join(ctx)
	if err != nil {
		return Next{}, err
	}
	var assignments []kmsg.SyncGroupRequestGroupAssignment
	if gen.Leader() {
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
	req.ProtocolType = kmsg.StringPtr(ProtocolType)
	req.Protocol = kmsg.StringPtr(m.cfg.Protocol)
	req.GroupAssignment = assignments
	resp, err := req.RequestWith(ctx, m.cfg.Client)
	if err != nil {
		return Next{}, fmt.Errorf("SyncGroup: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if m.memberGone(err) {
			return Next{}, fmt.Errorf("SyncGroup: %w (joining again as a new member)", err)
		}
		return Next{}, fmt.Errorf("SyncGroup: %w", err)
	}
	next, err := m.cfg.Handler.Assigned(ctx, gen, resp.MemberAssignment)
	if err != nil {
		return Next{}, fmt.Errorf("applying the assignment of generation %d: %w", gen.ID, err)
	}
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

// join sends JoinGroup until the coordinator answers with a generation.
func (m *Member) join(ctx context.Context) (Generation, []JoinedMember, error) {
	for {
		md, err := m.cfg.Handler.Metadata()
		if err != nil {
			return Generation{}, nil, fmt.Errorf("building member metadata: %w", err)
		}
		m.mu.Lock()
		memberID := m.memberID
		m.mu.Unlock()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = m.cfg.Group
		req.SessionTimeoutMillis = int32(m.cfg.SessionTimeout / time.Millisecond)
		req.RebalanceTimeoutMillis = int32(m.cfg.RebalanceTimeout / time.Millisecond)
		req.MemberID = memberID
		req.ProtocolType = ProtocolType
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: m.cfg.Protocol, Metadata: md}}
		resp, err := req.RequestWith(ctx, m.cfg.Client)
		if err != nil {
			return Generation{}, nil, fmt.Errorf("JoinGroup: %w", err)
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
			return Generation{}, nil, fmt.Errorf("JoinGroup: %w (joining again as a new member)", err)
		case errors.Is(err, kerr.InconsistentGroupProtocol):
			return Generation{}, nil, &FatalError{Group: m.cfg.Group, Op: "JoinGroup", Err: err,
				Fix: fmt.Sprintf("the group is used by members of another kind (a consumer group, or Kafka Connect workers with another protocol than %q): give this cluster its own group.id", m.cfg.Protocol)}
		case errors.Is(err, kerr.InvalidSessionTimeout):
			return Generation{}, nil, &FatalError{Group: m.cfg.Group, Op: "JoinGroup", Err: err,
				Fix: fmt.Sprintf("session.timeout.ms=%d is outside the broker's group.min.session.timeout.ms..group.max.session.timeout.ms: change session.timeout.ms", req.SessionTimeoutMillis)}
		case errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.InvalidGroupID):
			return Generation{}, nil, &FatalError{Group: m.cfg.Group, Op: "JoinGroup", Err: err,
				Fix: "grant this worker's principal READ on the group, or set group.id to a group it may use"}
		default:
			return Generation{}, nil, fmt.Errorf("JoinGroup: %w", err)
		}
		gen := Generation{ID: resp.Generation, MemberID: resp.MemberID, LeaderID: resp.LeaderID}
		m.mu.Lock()
		m.memberID, m.gen = resp.MemberID, gen
		m.lastHB = time.Now()
		m.mu.Unlock()
		var members []JoinedMember
		if gen.Leader() {
			for _, jm := range resp.Members {
				members = append(members, JoinedMember{ID: jm.MemberID, Metadata: jm.ProtocolMetadata})
			}
		}
		return gen, members, nil
	}
}

// heartbeats keeps the session alive and notices rebalances and a lost
// membership. It heartbeats during joins too: the coordinator then answers
// REBALANCE_IN_PROGRESS but keeps the session.
func (m *Member) heartbeats(ctx context.Context) {
	t := time.NewTicker(m.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		gen := m.gen
		joining := m.rebalancing
		m.mu.Unlock()
		if gen.ID <= 0 {
			continue
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group = m.cfg.Group
		req.Generation = gen.ID
		req.MemberID = gen.MemberID
		rctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout)
		resp, err := req.RequestWith(rctx, m.cfg.Client)
		cancel()
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		if m.gen != gen { // a newer join answered meanwhile
			m.mu.Unlock()
			continue
		}
		if err != nil {
			silent := time.Since(m.lastHB)
			if silent >= m.cfg.SessionTimeout && !joining && !m.lost {
				m.lost = true
				m.mu.Unlock()
				m.log.Warn("no heartbeat answered for a session timeout", "err", err, "silent", silent)
				m.poke()
				continue
			}
			m.mu.Unlock()
			m.log.Debug("heartbeat failed", "err", err)
			continue
		}
		m.lastHB = time.Now()
		herr := kerr.ErrorForCode(resp.ErrorCode)
		poke := false
		switch {
		case herr == nil:
		case joining:
			// While joining, REBALANCE_IN_PROGRESS and ILLEGAL_GENERATION
			// are expected; the join itself reports a lost membership.
		case errors.Is(herr, kerr.RebalanceInProgress), errors.Is(herr, kerr.IllegalGeneration):
			m.wantRejoin, m.rebalancing, poke = true, true, true
		case errors.Is(herr, kerr.UnknownMemberID), errors.Is(herr, kerr.FencedInstanceID):
			m.lost, m.rebalancing, poke = true, true, true
		default:
			m.log.Warn("heartbeat refused", "err", herr)
		}
		m.mu.Unlock()
		if poke {
			m.poke()
		}
	}
}

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
	if id == "" {
		return nil
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.cfg.Group
	req.MemberID = id
	reason := "worker shutting down"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id, Reason: &reason}}
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

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
