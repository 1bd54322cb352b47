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
//
// A member never gives up because the group is slow to form: a failed or
// timed-out join is retried with a growing backoff (RetryBackoff doubling up
// to MaxRetryBackoff), and Waiting says what it waits for. SyncGroup waits
// rebalance.timeout.ms plus a margin before it counts as timed out, as Kafka's
// clients do; a JoinGroup is held longer, so that re-sent JoinGroups cannot
// keep a rebalance open (see joinContext).
//
// Static membership (KIP-345): with InstanceID set, every request carries it,
// so a restarted process with the same instance id takes back the place (and,
// in a stable group, the assignment) of its previous incarnation instead of
// adding a member; Leave still leaves at once, naming the instance id.
package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
	// InstanceID, when set, makes this a static member (group.instance.id,
	// KIP-345): unique per worker of the group and stable across restarts
	// of the same worker (the pod name).
	InstanceID string
	// RetryBackoff is the first pause before a join is retried after an
	// error; default 250ms. It doubles with each failure in a row, up to
	// MaxRetryBackoff (default 5s), with some jitter.
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	Handler         Handler
	Logger          *slog.Logger
}

// requestMargin is what a SyncGroup may take beyond the
// rebalance timeout before it counts as timed out (Kafka's consumer allows
// rebalance.timeout.ms + 5s).
const requestMargin = 5 * time.Second

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
	phase       string        // what the member waits for now (see Waiting)
	phaseSince  time.Time
	failures    int   // failed rebalances in a row
	lastErr     error // the last failure, until a rebalance succeeds
	// abortJoin gives up the JoinGroup held open (see joinContext); nil
	// when none is.
	abortJoin context.CancelCauseFunc

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
	if cfg.MaxRetryBackoff < cfg.RetryBackoff {
		cfg.MaxRetryBackoff = max(cfg.RetryBackoff, 5*time.Second)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("group", cfg.Group)
	if cfg.InstanceID != "" {
		log = log.With("instance", cfg.InstanceID)
	}
	return &Member{
		cfg: cfg, log: log, phase: "starting", phaseSince: time.Now(),
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
				m.setPhase("stopped: " + err.Error())
				return err
			}
			backoff := m.failed(err)
			if !sleep(ctx, backoff) {
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
