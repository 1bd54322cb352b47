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

// Package herder owns the connectors and tasks of one worker: it starts,
// reconfigures, pauses, stops and restarts them as the config store and the
// worker's assignment say, keeps their status in the status store, enforces
// task limits, and answers the REST API (it implements connectapi.Herder).
//
// What runs here is an input: a single worker runs everything (AssignAll),
// while group membership ("The worker, part 2") calls SetAssignment and
// SetLeader with what the group leader decided.
package herder

import (
	"context"
	"errors"
	"fmt"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// Assignment is what this worker runs: the connectors (connector instances)
// and tasks given to it by the group leader, at a group generation.
type Assignment struct {
	Generation int
	Connectors []string
	Tasks      []store.TaskID
}

// TaskSpec is everything a task runner needs to start one task.
type TaskSpec struct {
	ID     store.TaskID
	Plugin plugin.Plugin
	// ConnectorConfig and TaskConfig have their placeholders resolved; they
	// must never be logged or stored.
	ConnectorConfig map[string]string
	TaskConfig      map[string]string
	Generation      int
}

// RunningTask is a started task.
type RunningTask interface {
	// Stop stops the task gracefully (stop polling, flush, commit) and
	// returns when it has stopped or ctx ended.
	Stop(ctx context.Context) error
	// Done is closed when the task ended on its own or was stopped.
	Done() <-chan struct{}
	// Err is the reason a task ended on its own; nil after Stop.
	Err() error
}

// Pauser is implemented by running tasks that can pause in place (keeping
// their partitions and offsets); tasks without it are stopped on pause.
type Pauser interface {
	Pause()
	Resume()
}

// TaskRuntime starts tasks (an adapter over runtime/task).
type TaskRuntime interface {
	StartTask(ctx context.Context, spec TaskSpec) (RunningTask, error)
}

// Resolver resolves ${provider:path:key} placeholders in a config. It is
// used only when a connector or task starts; resolved values are never stored.
type Resolver interface {
	Resolve(ctx context.Context, config map[string]string) (map[string]string, error)
}

// Options configure a Herder.
type Options struct {
	// WorkerID is this worker's id in statuses (its advertised host:port).
	WorkerID string
	// URL is this worker's advertised REST URL.
	URL            string
	Version        string
	Commit         string
	KafkaClusterID string

	Plugins  *plugin.Registry
	Configs  *store.ConfigStore
	Offsets  *store.OffsetStore
	Statuses *store.StatusStore
	// Admin reads topic metadata for connectors and sink offsets.
	Admin *kadm.Client
	// ConnectorAdmin, when set, gives a connector (its resolved config)
	// the admin client its own login calls for: its topic lookups and its
	// sink group's offsets go through it, as its tasks' admin clients do.
	// close releases the client. Nil: Admin for every connector.
	ConnectorAdmin func(config map[string]string) (adm *kadm.Client, close func(), err error)
	Tasks          TaskRuntime
	// Resolver resolves placeholders; nil leaves configs as they are.
	Resolver Resolver

	// Grants are what the cluster's owner lends connectors (the files
	// they may open, ambient cloud credentials); nil restricts nothing
	// (standalone). They reach Validate and connector Start through their
	// contexts; the task runtime applies them to tasks.
	Grants *plugin.Grants
	// Reserved are the topics no connector may name, read or write (the
	// cluster's storage topics and "__" topics); validation refuses keys
	// naming them, the task runtime enforces them on records.
	Reserved *plugin.ReservedTopics
	// ClientOverrides is the worker's connector.client.config.override.policy:
	// the client overrides connectors may set (zero: Kafka's default, All).
	ClientOverrides clientconfig.Policy
	// ClientSecurity is the worker's Kafka security without its password,
	// against which connectors' own logins are validated; nil: unknown.
	ClientSecurity *clientconfig.Security

	// AssignAll makes this worker run every connector and task (one worker,
	// or standalone). Otherwise the assignment comes from SetAssignment.
	AssignAll bool

	// LimitCheckInterval is how often natural task limits are re-checked
	// (sink topics' partition counts); default 30s. LimitCheckTicks, when
	// set, replaces the ticker (tests drive it).
	LimitCheckInterval time.Duration
	LimitCheckTicks    <-chan time.Time

	// ForwardTaskConfigs sends task configs generated on a follower to the
	// leader (group membership wires it); nil on a single worker.
	ForwardTaskConfigs func(ctx context.Context, connector string, cfgs []map[string]string) error

	// TaskStopTimeout bounds a graceful task stop; default 30s.
	TaskStopTimeout time.Duration

	// ExactlyOnce is the worker's exactly.once.source.support (disabled,
	// preparing or enabled; "" = disabled): validation checks source
	// connectors' exactly.once.support against it, and when enabled the
	// leader fences a source connector's earlier tasks with FenceTasks
	// before it writes new task configs (herder/exactlyonce.go).
	ExactlyOnce string
	// FenceTasks fences the transactional producers of tasks 0..tasks-1
	// of a connector; required when ExactlyOnce is enabled.
	FenceTasks func(ctx context.Context, connector string, tasks int) error

	// RebalanceWait is how long a write that arrives during a group
	// rebalance waits for it to end before it is refused with 409;
	// default 3s. Kafka Connect refuses at once; a short wait spares
	// clients the retry after their own change started a rebalance.
	RebalanceWait time.Duration

	Logger *slog.Logger
}

// Herder runs this worker's share of connectors and tasks.
type Herder struct {
	opts Options
	log  *slog.Logger

	mu         sync.Mutex
	assignment Assignment
	// assigned indexes assignment by connector: each connector loop looks
	// up its own share at once instead of scanning the whole assignment
	// (every loop runs after each rebalance: a scan made a rebalance cost
	// grow with the square of the connectors here).
	assigned map[string]assignedShare
	// members are the worker ids of the group's last rebalance (nil: all
	// count as present); see liveness.go.
	members map[string]bool
	// assignSeq counts SetAssignment calls; a connector's loop records
	// the one it applied, so ApplyAssignment knows when it is in force.
	assignSeq   uint64
	distributed uint64 // the last assignSeq every connector loop was kicked for
	leader      bool
	leaderURL   string
	rebalancing bool
	// rebalanceEnd is closed when the rebalance in progress ends.
	rebalanceEnd chan struct{}
	workers      map[string]*connWorker
	ready        bool
	closed       bool
	// joinStatus, when set, says what a worker without an assignment
	// waits for (readiness).
	joinStatus func() string

	wakeCh chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	// connCtx is the connectors' context; cancelled first at Close so a
	// connector stuck in Start lets go.
	connCtx    context.Context
	connCancel context.CancelFunc
	wg         sync.WaitGroup
}

// New creates a herder; call Run to start it.
func New(opts Options) (*Herder, error) {
	if opts.Plugins == nil || opts.Configs == nil || opts.Offsets == nil || opts.Statuses == nil || opts.Tasks == nil {
		return nil, errors.New("herder: Plugins, Configs, Offsets, Statuses and Tasks are required")
	}
	if opts.LimitCheckInterval <= 0 {
		opts.LimitCheckInterval = 30 * time.Second
	}
	if opts.TaskStopTimeout <= 0 {
		opts.TaskStopTimeout = 30 * time.Second
	}
	if opts.RebalanceWait <= 0 {
		opts.RebalanceWait = 3 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Herder{
		opts:    opts,
		log:     opts.Logger,
		workers: map[string]*connWorker{},
		leader:  opts.AssignAll,
		wakeCh:  make(chan struct{}, 1),
		ctx:     ctx,
		cancel:  cancel,
	}
	h.connCtx, h.connCancel = context.WithCancel(ctx)
	// A crash record written or removed by any worker changes whether the
	// connector is held (crash.go). Kicked from a goroutine: the store
	// calls this with its lock held.
	opts.Statuses.OnCrashChange(func(name string) { go h.kick(name, kickConfig) })
	if opts.AssignAll {
		h.leaderURL = opts.URL
	}
	return h, nil
}

// OnConfigEvent is the config store's listener; wire it when opening the store.
func (h *Herder) OnConfigEvent(ev store.ConfigEvent) {
	switch ev.Kind {
	case store.RestartRequested:
		h.mu.Lock()
		w := h.workers[ev.Connector]
		h.mu.Unlock()
		if w != nil {
			var tasks []int
			if ev.IncludeTasks {
				for _, t := range h.currentAssignment().Tasks {
					if t.Connector == ev.Connector {
						tasks = append(tasks, t.Task)
					}
				}
			}
			w.requestRestart(ev.IncludeTasks, ev.OnlyFailed, tasks)
		}
		return
	case store.TaskRestartRequested:
		h.mu.Lock()
		w := h.workers[ev.Connector]
		h.mu.Unlock()
		if w != nil {
			w.requestTaskRestart(ev.Task)
		}
		return
	}
	if ev.Connector != "" {
		h.kick(ev.Connector, kickConfig)
	}
	h.wake()
}

// SetAssignment replaces what this worker runs (group membership calls it
// after every rebalance). Ignored with AssignAll.
func (h *Herder) SetAssignment(a Assignment) { h.setAssignment(a) }

func (h *Herder) setAssignment(a Assignment) uint64 {
	h.mu.Lock()
	h.assignment = Assignment{Generation: a.Generation, Connectors: slices.Clone(a.Connectors), Tasks: slices.Clone(a.Tasks)}
	h.assigned = indexAssignment(a)
	h.assignSeq++
	seq := h.assignSeq
	h.mu.Unlock()
	h.wake()
	return seq
}

// ApplyAssignment replaces what this worker runs and returns once every
// connector and task outside a is stopped (tasks flushed and committed),
// so that a revoked task never runs on two workers at once; tasks new in a
// may still be starting. It returns early when ctx ends.
func (h *Herder) ApplyAssignment(ctx context.Context, a Assignment) error {
	seq := h.setAssignment(a)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if h.appliedEverywhere(seq) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("herder: waiting for revoked connectors and tasks to stop: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// appliedEverywhere reports whether every connector loop reconciled with
// assignment seq or later (or nothing runs any more).
func (h *Herder) appliedEverywhere(seq uint64) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return true
	}
	if h.distributed < seq {
		h.mu.Unlock()
		return false
	}
	ws := slices.Collect(maps.Values(h.workers))
	h.mu.Unlock()
	for _, w := range ws {
		if !w.appliedAtLeast(seq) {
			return false
		}
	}
	return true
}

// SetRebalancing marks a group rebalance in progress: writes answer 409
// (Kafka's "Cannot complete request momentarily...") until it is over.
func (h *Herder) SetRebalancing(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on == h.rebalancing {
		return
	}
	h.rebalancing = on
	if on {
		h.rebalanceEnd = make(chan struct{})
	} else {
		close(h.rebalanceEnd)
	}
}

// SetJoinStatus sets what Ready reports while this worker has no
// assignment: the group membership's own account of what it waits for.
func (h *Herder) SetJoinStatus(f func() string) {
	h.mu.Lock()
	h.joinStatus = f
	h.mu.Unlock()
}

// Rebalancing reports whether a group rebalance is in progress.
func (h *Herder) Rebalancing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rebalancing
}

// SetLeader tells the herder whether it is the group leader and the
// leader's URL. Only the leader writes task configs.
func (h *Herder) SetLeader(leader bool, leaderURL string) {
	h.mu.Lock()
	h.leader, h.leaderURL = leader, leaderURL
	h.mu.Unlock()
	h.wake()
}

// Assignment returns what this worker runs (with AssignAll: everything).
func (h *Herder) Assignment() Assignment {
	a := h.currentAssignment()
	return Assignment{Generation: a.Generation, Connectors: slices.Clone(a.Connectors), Tasks: slices.Clone(a.Tasks)}
}

// currentAssignment returns the assignment in force.
func (h *Herder) currentAssignment() Assignment {
	a, _ := h.assignmentAndSeq()
	return a
}

// assignedShare is one connector's part of an assignment: its connector
// instance, and the numbers of its tasks.
type assignedShare struct {
	connector bool
	tasks     map[int]bool
}

func indexAssignment(a Assignment) map[string]assignedShare {
	idx := make(map[string]assignedShare, len(a.Connectors))
	for _, c := range a.Connectors {
		s := idx[c]
		s.connector = true
		idx[c] = s
	}
	for _, t := range a.Tasks {
		s := idx[t.Connector]
		if s.tasks == nil {
			s.tasks = map[int]bool{}
		}
		s.tasks[t.Task] = true
		idx[t.Connector] = s
	}
	return idx
}

// shareOf returns what the assignment in force gives this worker of
// connector name (of a connector that exists), the assignment's
// generation and its sequence number. With AssignAll a connector is
// wholly here: its instance and tasks 0..committed-1 (the task configs
// committed for it).
func (h *Herder) shareOf(name string, committed int) (conn bool, tasks map[int]bool, generation int, seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opts.AssignAll {
		tasks = make(map[int]bool, committed)
		for i := range committed {
			tasks[i] = true
		}
		return true, tasks, 1, h.assignSeq
	}
	s := h.assigned[name]
	tasks = maps.Clone(s.tasks)
	if tasks == nil {
		tasks = map[int]bool{}
	}
	return s.connector, tasks, h.assignment.Generation, h.assignSeq
}

// assignmentAndSeq returns the assignment in force and its sequence number.
func (h *Herder) assignmentAndSeq() (Assignment, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.opts.AssignAll {
		return h.assignment, h.assignSeq
	}
	a := Assignment{Generation: 1}
	counts := h.opts.Configs.TaskCounts()
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		a.Connectors = append(a.Connectors, name)
		for i := range counts[name] {
			a.Tasks = append(a.Tasks, store.TaskID{Connector: name, Task: i})
		}
	}
	return a, h.assignSeq
}

func (h *Herder) isLeader() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leader
}

func (h *Herder) wake() {
	select {
	case h.wakeCh <- struct{}{}:
	default:
	}
}

// Run starts the herder's loop; it returns at once. Close stops it.
func (h *Herder) Run() {
	h.mu.Lock()
	h.ready = true
	h.mu.Unlock()
	ticks := h.opts.LimitCheckTicks
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(h.opts.LimitCheckInterval)
		ticks = ticker.C
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if ticker != nil {
			defer ticker.Stop()
		}
		h.wake()
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-h.wakeCh:
				h.distribute()
			case <-ticks:
				h.mu.Lock()
				ws := slices.Collect(maps.Values(h.workers))
				h.mu.Unlock()
				for _, w := range ws {
					w.kick(kickLimits)
				}
			}
		}
	}()
}

// distribute makes sure every connector with something assigned here, or
// something still running here, has a worker, and kicks them all.
func (h *Herder) distribute() {
	a, seq := h.assignmentAndSeq()
	names := map[string]bool{}
	for _, c := range a.Connectors {
		names[c] = true
	}
	for _, t := range a.Tasks {
		names[t.Connector] = true
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	for n := range h.workers {
		names[n] = true
	}
	var ws []*connWorker
	for n := range names {
		w := h.workers[n]
		if w == nil {
			w = newConnWorker(h, n)
			h.workers[n] = w
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				w.loop(h.ctx)
			}()
		}
		ws = append(ws, w)
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.kick(kickConfig)
	}
	h.mu.Lock()
	h.distributed = max(h.distributed, seq)
	h.mu.Unlock()
}

func (h *Herder) kick(name string, k kickKind) {
	h.mu.Lock()
	w := h.workers[name]
	h.mu.Unlock()
	if w != nil {
		w.kick(k)
	}
}

// removeWorker drops an idle worker (nothing assigned, nothing running).
func (h *Herder) removeWorker(w *connWorker) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.workers[w.name] == w {
		delete(h.workers, w.name)
	}
	return true
}

// Close stops every task gracefully (flush and commit), then every
// connector, within ctx; the herder cannot be used afterwards.
func (h *Herder) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	ws := slices.Collect(maps.Values(h.workers))
	h.mu.Unlock()
	h.connCancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.shutdown(ctx)
		}()
	}
	done, loopsDone := make(chan struct{}), make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("herder: stopping tasks: %w", ctx.Err())
	}
	h.cancel()
	go func() { h.wg.Wait(); close(loopsDone) }()
	select {
	case <-loopsDone:
	case <-ctx.Done():
		err = fmt.Errorf("herder: a connector did not stop: %w", ctx.Err())
	}
	return err
}

func (h *Herder) generation() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opts.AssignAll {
		return 1
	}
	return h.assignment.Generation
}

// putStatus writes a connector status; failures are logged (the status
// topic being unreachable must not stop the connector).
func (h *Herder) putConnectorStatus(name, state, trace string) {
	st := store.Status{State: state, Trace: h.scrubFor(name, trace), WorkerID: h.opts.WorkerID, Generation: h.generation()}
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	if err := h.opts.Statuses.PutConnector(ctx, name, st); err != nil && h.ctx.Err() == nil {
		h.log.Warn("writing connector status", "connector", name, "state", state, "err", err)
	}
}

func (h *Herder) putTaskStatus(id store.TaskID, state, trace string) {
	st := store.Status{State: state, Trace: h.scrubFor(id.Connector, trace), WorkerID: h.opts.WorkerID, Generation: h.generation()}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), 10*time.Second)
	defer cancel()
	if err := h.opts.Statuses.PutTask(ctx, id, st); err != nil {
		h.log.Warn("writing task status", "connector", id.Connector, "task", id.Task, "state", state, "err", err)
	}
}

var _ connectapi.Herder = (*Herder)(nil)
