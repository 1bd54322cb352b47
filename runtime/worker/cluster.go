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

package worker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/assignor"
	"github.com/conveyor-dev/conveyor/runtime/group"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// clusterMember is the worker's side of the group protocol (a
// group.Handler): it reports what this worker runs, assigns as the leader
// with the incremental cooperative assignor, and applies its assignment to
// the herder, stopping revoked work before it rejoins.
//
// Leaving on purpose: before a graceful shutdown the herder stops every
// task (flush, commit), then the worker rejoins once with Leaving set and
// nothing owned, so the leader moves its work in that very round; only then
// does it send LeaveGroup. The announcement travels in the member metadata,
// so it needs no extra record and works when the leaving worker is the
// leader itself. A worker that vanishes without it is lost: its work waits
// scheduled.rebalance.max.delay.ms for it to return.
type clusterMember struct {
	herder    *herder.Herder
	configs   *store.ConfigStore
	metrics   *metrics.Metrics
	log       *slog.Logger
	workerID  string
	url       string
	lostDelay time.Duration
	// maxTasks is max.tasks.per.worker (0: no cap), enforced when leading.
	maxTasks int
	// revision (worker.revision) and started (this process's start) tell
	// the leader which workers a rolling update is about to replace.
	revision string
	started  time.Time
	// readTimeout bounds a read of the config topic during a rebalance.
	readTimeout time.Duration

	member *group.Member
	// assignedHook, when set, runs after each applied assignment.
	assignedHook func()

	mu      sync.Mutex
	owned   assignor.Assignment
	leaving bool
	// state is the assignor's memory: the last LeaderState this worker
	// received (its own when it led). A worker that becomes leader starts
	// from it, so lost workers' work (the old leader's included) stays held
	// across a leader change.
	state  assignor.State
	counts map[string]int // connectors and task counts at the last assignment
	// rejoinPending: a rebalance for config changes is about to be asked.
	rejoinPending bool
	rebalDone     func()
	assigned      chan struct{} // closed at the first applied assignment
	firstApply    sync.Once
}

func newClusterMember(h *herder.Herder, configs *store.ConfigStore, m *metrics.Metrics, log *slog.Logger, workerID, url string, lostDelay, readTimeout time.Duration) *clusterMember {
	return &clusterMember{herder: h, configs: configs, metrics: m, log: log, workerID: workerID, url: url,
		lostDelay: lostDelay, readTimeout: readTimeout, assigned: make(chan struct{}), started: time.Now()}
}

// Metadata implements group.Handler.
func (c *clusterMember) Metadata() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	md := assignor.Metadata{Version: assignor.Version, WorkerID: c.workerID, URL: c.url,
		ConfigOffset: c.configs.Offset(), Owned: c.owned, Leaving: c.leaving, Departed: c.state.Left,
		Revision: c.revision, Started: c.started}
	if c.leaving {
		md.Owned = assignor.Assignment{}
	}
	return assignor.EncodeMetadata(md), nil
}

// Resume implements group.Resumer: a restarted worker that takes back its
// static membership joins with the metadata its previous process joined
// with, when that was this worker (same id and URL) and this process has
// read the config topic at least as far. The claim is safe: this process
// runs nothing yet, and what it is handed in return is what its previous
// process was assigned.
func (c *clusterMember) Resume(previous []byte) ([]byte, bool) {
	md, err := assignor.DecodeMetadata(previous)
	if err != nil || md.WorkerID != c.workerID || md.URL != c.url || md.Leaving || md.ConfigOffset > c.configs.Offset() {
		return nil, false
	}
	return previous, true
}

// Assign implements group.Handler: the leader reads the config topic to
// its end, then runs the assignor.
func (c *clusterMember) Assign(ctx context.Context, gen group.Generation, joined []group.JoinedMember) (map[string][]byte, error) {
	start := time.Now()
	members := make([]assignor.Member, 0, len(joined))
	var departed []string // workers that left on purpose in a round some member saw
	for _, j := range joined {
		md, err := assignor.DecodeMetadata(j.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata of member %s: %w", j.ID, err)
		}
		members = append(members, md.Member(j.ID))
		departed = append(departed, md.Departed...)
	}
	rctx, cancel := context.WithTimeout(ctx, c.readTimeout)
	err := c.configs.ReadToEnd(rctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("reading the config topic to its end before assigning: %w", err)
	}
	offset := c.configs.Offset()
	out := make(map[string][]byte, len(members))
	if maxOff := assignor.MaxConfigOffset(members); maxOff > offset {
		// A member read further than the leader could: everyone reads
		// to the end and joins again.
		c.log.Warn("a member is ahead of the leader in the config topic; asking all to catch up", "leader_offset", offset, "member_offset", maxOff)
		for _, m := range members {
			out[m.MemberID] = assignor.EncodeAssignment(assignor.SyncAssignment{Version: assignor.Version, Error: assignor.ErrorConfigMismatch,
				LeaderID: gen.MemberID, LeaderURL: c.url, ConfigOffset: maxOff})
		}
		return out, nil
	}
	c.mu.Lock()
	prev := c.state
	c.mu.Unlock()
	res := assignor.Assign(assignor.Input{Members: members, Connectors: c.configs.TaskCounts(), Previous: prev, Departed: departed,
		Now: time.Now(), LostWorkerDelay: c.lostDelay, MaxTasksPerMember: c.maxTasks, CrashLoop: crashLoopGuard(c.lostDelay)})
	for _, m := range members {
		ma := res.Members[m.MemberID]
		out[m.MemberID] = assignor.EncodeAssignment(assignor.SyncAssignment{Version: assignor.Version,
			LeaderID: gen.MemberID, LeaderURL: c.url, ConfigOffset: offset,
			Assigned: ma.Assigned, Revoked: ma.Revoked, Delay: ma.Delay, LeaderState: &res.State, HeldOffUntil: ma.HeldOffUntil})
	}
	c.metrics.SetHeldOffWorkers(len(res.HeldOff))
	for _, h := range res.HeldOff {
		c.log.Warn("crash-loop guard: a worker whose work was released to others again and again gets no work for now",
			"worker", h.WorkerID, "releases", h.Releases, "until", h.Until.Format(time.RFC3339))
	}
	c.log.Info("assigned connectors and tasks", "generation", gen.ID, "members", len(members), "delay", res.Delay, "took", time.Since(start))
	return out, nil
}

// Assigned implements group.Handler.
func (c *clusterMember) Assigned(ctx context.Context, gen group.Generation, b []byte) (group.Next, error) {
	sa, err := assignor.DecodeAssignment(b)
	if err != nil {
		return group.Next{}, err
	}
	// The assignment names the leader that computed it: trust that over
	// the JoinGroup answer (kfake can name several members leader of one
	// generation when the old leader left; only one leader's sync counts).
	// A static leader that took back its place (SkipAssignment) gets the
	// assignment its previous process computed, naming that process's
	// member id: its own URL says it is the same worker.
	leader := sa.LeaderID != "" && (sa.LeaderID == gen.MemberID || gen.Leader() && sa.LeaderURL == c.url)
	c.mu.Lock()
	if sa.LeaderState != nil {
		c.state = *sa.LeaderState
		// The workers of this round, for status answers (a task on a
		// worker outside the group reads UNASSIGNED).
		c.herder.SetMembers(slices.Collect(maps.Keys(sa.LeaderState.Workers)))
	}
	leaving := c.leaving
	c.mu.Unlock()
	if leaving {
		return group.Next{}, nil
	}
	if sa.Error == assignor.ErrorConfigMismatch || c.configs.Offset() < sa.ConfigOffset {
		rctx, cancel := context.WithTimeout(ctx, c.readTimeout)
		err := c.configs.ReadToEnd(rctx)
		cancel()
		if err != nil {
			return group.Next{}, fmt.Errorf("reading the config topic up to the leader's offset %d: %w", sa.ConfigOffset, err)
		}
		if sa.Error == assignor.ErrorConfigMismatch {
			// Rejoin after a pause: if this keeps happening, members of
			// one group.id read different config topics.
			c.log.Warn("the leader could not read the config topic as far as a member; rejoining", "leader_offset", sa.ConfigOffset,
				"own_offset", c.configs.Offset(), "hint", "every worker of a cluster needs the same config.storage.topic")
			return group.Next{Rejoin: true, After: configMismatchPause}, nil
		}
	}
	a := herder.Assignment{Generation: int(gen.ID), Connectors: sa.Assigned.Connectors, Tasks: sa.Assigned.Tasks}
	c.herder.SetLeader(leader, sa.LeaderURL)
	revoking := !sa.Revoked.IsEmpty()
	if revoking {
		// Round one of a move: stop what goes elsewhere (flush, commit)
		// before the rejoin lets the leader hand it out.
		if err := c.herder.ApplyAssignment(ctx, a); err != nil {
			return group.Next{}, err
		}
	} else {
		c.herder.SetAssignment(a)
	}
	counts := c.configs.TaskCounts()
	c.mu.Lock()
	c.owned = sa.Assigned
	c.counts = counts
	done := c.rebalDone
	if !revoking {
		c.rebalDone = nil
	}
	c.mu.Unlock()
	c.metrics.SetLeader(sa.LeaderURL, int(gen.ID))
	c.metrics.SetHeldOff(!sa.HeldOffUntil.IsZero())
	if !sa.HeldOffUntil.IsZero() {
		c.log.Warn("this worker is held off by the crash-loop guard: it kept crashing, so its work stays on the other workers for now",
			"until", sa.HeldOffUntil.Format(time.RFC3339))
	}
	c.log.Info("assignment applied", "generation", gen.ID, "leader", leader, "connectors", len(sa.Assigned.Connectors),
		"tasks", len(sa.Assigned.Tasks), "revoked_connectors", len(sa.Revoked.Connectors), "revoked_tasks", len(sa.Revoked.Tasks), "delay", sa.Delay)
	if revoking {
		return group.Next{Rejoin: true}, nil
	}
	c.herder.SetRebalancing(false)
	if done != nil {
		done()
	}
	if c.assignedHook != nil {
		c.assignedHook()
	}
	c.firstApply.Do(func() { close(c.assigned) })
	if sa.Delay > 0 {
		return group.Next{Rejoin: true, After: sa.Delay}, nil
	}
	return group.Next{}, nil
}

// RebalanceStarted implements group.Handler.
func (c *clusterMember) RebalanceStarted() {
	c.herder.SetRebalancing(true)
	c.mu.Lock()
	if c.rebalDone == nil {
		c.rebalDone = c.metrics.RebalanceStarted()
	}
	c.mu.Unlock()
}

// Lost implements group.Handler: this worker's work may run elsewhere now.
func (c *clusterMember) Lost(ctx context.Context) {
	c.herder.SetLeader(false, "")
	if err := c.herder.ApplyAssignment(ctx, herder.Assignment{}); err != nil {
		c.log.Error("stopping work after losing the group membership", "err", err)
	}
	c.mu.Lock()
	c.owned = assignor.Assignment{}
	c.mu.Unlock()
}

// configChanged asks for a rebalance when the set of connectors or their
// task counts changed since the last assignment (the config store's
// listener calls it).
func (c *clusterMember) configChanged(ev store.ConfigEvent) {
	switch ev.Kind {
	case store.ConnectorConfigChanged, store.ConnectorRemoved, store.TaskConfigsCommitted:
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rejoinPending || c.member == nil {
		return
	}
	if counts := c.configs.TaskCounts(); c.counts != nil && maps.Equal(counts, c.counts) {
		return
	}
	// A burst of config records (many connectors created or their task
	// configs committed together) makes one rebalance, not one each.
	c.rejoinPending = true
	m := c.member
	time.AfterFunc(rejoinCoalesce, func() {
		c.mu.Lock()
		c.rejoinPending = false
		c.mu.Unlock()
		m.RequestRejoin()
	})
}

// crashLoopGuard is the assignor's slow crash-loop guard for a cluster
// whose lost workers wait lostDelay: a worker whose work was released 3
// times within 10 minutes (or 20 delays) gets none for 5 minutes (or 10
// delays) after the last release, Kubernetes' longest CrashLoopBackOff.
func crashLoopGuard(lostDelay time.Duration) assignor.CrashLoopGuard {
	return assignor.CrashLoopGuard{Releases: 3, Window: max(10*time.Minute, 20*lostDelay), HoldOff: max(5*time.Minute, 10*lostDelay)}
}

// configMismatchPause is the pause before a rejoin after the leader found a
// member ahead of it in the config topic.
const configMismatchPause = 500 * time.Millisecond

// rejoinCoalesce is how long config changes gather before they ask for a
// rebalance.
const rejoinCoalesce = 20 * time.Millisecond

// leave announces the departure (one more round with Leaving set) and
// leaves the group. Call it after the herder stopped every task.
func (c *clusterMember) leave(ctx context.Context, announce time.Duration) error {
	c.mu.Lock()
	c.leaving = true
	c.mu.Unlock()
	actx, cancel := context.WithTimeout(ctx, announce)
	err := c.member.Rebalance(actx)
	cancel()
	if err != nil {
		c.log.Warn("announcing the departure to the group failed; leaving anyway (this worker's work waits for the lost-worker delay)", "err", err)
	}
	return c.member.Leave(ctx)
}
