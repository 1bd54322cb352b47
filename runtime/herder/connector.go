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

package herder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

type kickKind int

const (
	kickConfig kickKind = 1 << iota
	kickLimits
	kickReconfigure
	kickTaskEnded
	kickConnectorError
)

// connWorker runs one connector's instance and its tasks on this worker.
// Its loop is the only goroutine that starts or stops them, so a connector
// that blocks in Start or Stop blocks only itself.
type connWorker struct {
	h    *Herder
	name string

	kicks chan struct{}

	mu            sync.Mutex // guards the fields below, set from other goroutines
	pending       kickKind
	restartConn   bool
	restartTasks  map[int]bool
	onlyFailed    bool
	ended         map[RunningTask]error
	raised        error
	shuttingDown  bool
	lastConnState string
	appliedSeq    uint64 // the assignment the last reconcile applied

	runMu sync.Mutex // held while the loop changes what runs
	// owned by the loop (under runMu):
	conn        plugin.Connector
	connCancel  context.CancelFunc
	connHash    string
	connFailed  string // config hash the connector failed with
	lastNatural int
	resolved    map[string]string
	tasks       map[int]*taskRun
	taskStates  map[int]string
}

type taskRun struct {
	run     RunningTask
	cfgHash string
	failed  bool
	paused  bool
}

func newConnWorker(h *Herder, name string) *connWorker {
	return &connWorker{
		h:            h,
		name:         name,
		kicks:        make(chan struct{}, 1),
		restartTasks: map[int]bool{},
		ended:        map[RunningTask]error{},
		tasks:        map[int]*taskRun{},
		taskStates:   map[int]string{},
		lastNatural:  -2,
	}
}

// appliedAtLeast reports whether the loop reconciled with assignment seq
// or a later one, or has ended.
func (w *connWorker) appliedAtLeast(seq uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appliedSeq >= seq || w.shuttingDown
}

func (w *connWorker) kick(k kickKind) {
	w.mu.Lock()
	w.pending |= k
	w.mu.Unlock()
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

func (w *connWorker) loop(ctx context.Context) {
	// Goroutines started from here on (the connector's, its tasks') carry
	// its name, which a crash report then shows (guard/crash.go).
	guard.Label(ctx, w.name, -1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kicks:
		}
		w.mu.Lock()
		k := w.pending
		w.pending = 0
		stopping := w.shuttingDown
		w.mu.Unlock()
		if stopping {
			return
		}
		if idle := w.reconcile(ctx, k); idle {
			w.h.removeWorker(w)
			return
		}
	}
}

func hashConfig(cfg map[string]string) string {
	b, _ := json.Marshal(cfg) // map keys are sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func tasksMax(cfg map[string]string) int {
	n, err := strconv.Atoi(strings.TrimSpace(cfg[plugin.KeyTasksMax]))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// reconcile brings what runs here in line with the stores and the
// assignment; it reports true when nothing is assigned or running.
func (w *connWorker) reconcile(ctx context.Context, k kickKind) (idle bool) {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	h := w.h
	cfg, exists := h.opts.Configs.Connector(w.name)
	target := h.opts.Configs.TargetState(w.name)
	committed := h.opts.Configs.TaskConfigs(w.name)
	connAssigned, assignedTasks, generation, seq := h.shareOf(w.name, len(committed))
	defer func() {
		w.mu.Lock()
		w.appliedSeq = max(w.appliedSeq, seq)
		w.mu.Unlock()
	}()
	connAssigned = connAssigned && exists
	hash := hashConfig(cfg)

	w.mu.Lock()
	restartConn, restartTasks, onlyFailed := w.restartConn, w.restartTasks, w.onlyFailed
	w.restartConn, w.restartTasks, w.onlyFailed = false, map[int]bool{}, false
	ended := w.ended
	w.ended = map[RunningTask]error{}
	raised := w.raised
	w.raised = nil
	w.mu.Unlock()

	// Tasks that ended on their own are FAILED until a restart or a new config.
	for _, tr := range w.tasks {
		if tr.run != nil {
			if err, ok := ended[tr.run]; ok && err != nil {
				tr.run, tr.failed = nil, true
			}
		}
	}

	// A connector whose code crashed a worker is held FAILED (crash.go).
	if trace, held := w.heldByCrash(hash); held && exists {
		w.hold(connAssigned, assignedTasks, trace)
		return false
	}

	// The connector instance.
	if raised != nil && w.conn != nil {
		w.stopConnector()
		w.connFailed = hash
		w.setConnState(connectapi.StateFailed, guard.Trace(raised))
	}
	if restartConn && onlyFailed && w.connFailed == "" && w.conn != nil {
		restartConn = false
	}
	wantConn := connAssigned && target != store.TargetStopped
	if w.conn != nil && (!wantConn || w.connHash != hash || restartConn) {
		w.stopConnector()
	}
	if restartConn || w.connFailed != hash {
		w.connFailed = ""
	}
	started := false
	if connAssigned {
		switch {
		case target == store.TargetStopped:
			w.setConnState(connectapi.StateStopped, "")
			if h.isLeader() && len(committed) > 0 {
				// A stopped connector has no tasks (as in Kafka Connect).
				w.writeTaskConfigs(ctx, nil, committed)
				committed = nil
			}
		case w.conn == nil && w.connFailed == "":
			if err := w.startConnector(ctx, cfg, hash); err != nil {
				w.connFailed = hash
				w.setConnState(connectapi.StateFailed, guard.Trace(err))
			} else {
				started = true
			}
		}
		if w.conn != nil {
			if target == store.TargetPaused {
				w.setConnState(connectapi.StatePaused, "")
			} else {
				w.setConnState(connectapi.StateRunning, "")
			}
			regenerate := started || k&kickReconfigure != 0
			if !regenerate && k&kickLimits != 0 {
				var natural int
				err := guard.Call("natural limit", func() (err error) { natural, _, err = w.conn.NaturalLimit(ctx); return err })
				regenerate = err == nil && natural != w.lastNatural
			}
			if regenerate {
				if cfgs, err := w.generateTaskConfigs(ctx, cfg); err != nil {
					w.stopConnector()
					w.connFailed = hash
					w.setConnState(connectapi.StateFailed, guard.Trace(err))
				} else if !equalConfigs(cfgs, committed) {
					if w.writeTaskConfigs(ctx, cfgs, committed) {
						committed = cfgs
					}
				}
			}
		}
	}

	// The tasks. A paused connector keeps tasks that can pause in place.
	desired := map[int]map[string]string{}
	paused := exists && target == store.TargetPaused
	if exists && target != store.TargetStopped {
		for i := range assignedTasks {
			if i < len(committed) {
				desired[i] = committed[i]
			}
		}
	}
	for i, tr := range w.tasks {
		want, ok := desired[i]
		restart := restartTasks[i] && (!onlyFailed || tr.failed)
		_, canPause := tr.run.(Pauser)
		if ok && hashConfig(want) == tr.cfgHash && !restart && (!paused || canPause || tr.run == nil) {
			continue
		}
		if tr.run != nil {
			w.stopTask(i, tr)
		}
		delete(w.tasks, i)
		switch {
		case ok && !paused:
			// restarted below
		case ok && paused:
			w.setTaskState(i, connectapi.StatePaused, "")
		case exists && i < len(committed) && !assignedTasks[i]:
			w.setTaskState(i, connectapi.StateUnassigned, "")
		default:
			delete(w.taskStates, i)
		}
	}
	for _, i := range slices.Sorted(maps.Keys(desired)) {
		tr, running := w.tasks[i]
		if !running {
			if paused {
				w.setTaskState(i, connectapi.StatePaused, "")
				continue
			}
			w.startTask(ctx, i, cfg, desired[i], generation)
			continue
		}
		if p, ok := tr.run.(Pauser); ok && !tr.failed {
			if paused && !tr.paused {
				p.Pause()
				tr.paused = true
				w.setTaskState(i, connectapi.StatePaused, "")
			} else if !paused && tr.paused {
				p.Resume()
				tr.paused = false
				w.setTaskState(i, connectapi.StateRunning, "")
			}
		}
	}
	return !exists && len(w.tasks) == 0 && w.conn == nil
}

// setConnState writes the connector's status when it changes.
func (w *connWorker) setConnState(state, trace string) {
	w.mu.Lock()
	same := w.lastConnState == state+"\x00"+trace
	w.lastConnState = state + "\x00" + trace
	w.mu.Unlock()
	if !same {
		w.h.putConnectorStatus(w.name, state, trace)
	}
}

func (w *connWorker) setTaskState(i int, state, trace string) {
	if w.taskStates[i] == state+"\x00"+trace {
		return
	}
	w.taskStates[i] = state + "\x00" + trace
	w.h.putTaskStatus(store.TaskID{Connector: w.name, Task: i}, state, trace)
}

func (w *connWorker) resolve(ctx context.Context, cfg map[string]string) (map[string]string, error) {
	if w.h.opts.Resolver == nil {
		return maps.Clone(cfg), nil
	}
	return w.h.resolveFor(ctx, w.name, cfg)
}

func (w *connWorker) startConnector(ctx context.Context, cfg map[string]string, hash string) error {
	h := w.h
	class := cfg[plugin.KeyConnectorClass]
	p, ok := h.opts.Plugins.Lookup(class)
	if !ok {
		return fmt.Errorf("failed to find any plugin named %q (set %s to a class or alias listed by GET /connector-plugins)", class, plugin.KeyConnectorClass)
	}
	resolved, err := w.resolve(ctx, cfg)
	if err != nil {
		return fmt.Errorf("resolving config placeholders of connector %q: %w", w.name, err)
	}
	if res := plugin.ValidateConfig(ctx, p, resolved, w.h.validateOpts()...); res.ErrorCount > 0 {
		return fmt.Errorf("%s", invalidConfigMessage(res))
	}
	cctx, cancel := context.WithCancel(h.connCtx)
	conn := p.NewConnector()
	cc := &connContext{w: w, ctx: cctx, config: resolved}
	if err := guard.Call("starting connector", func() error { return conn.Start(w.h.opts.Grants.Context(cctx), cc, resolved) }); err != nil {
		cancel()
		return fmt.Errorf("starting connector %q: %w", w.name, err)
	}
	w.conn, w.connCancel, w.connHash, w.resolved = conn, cancel, hash, resolved
	w.lastNatural = -2
	return nil
}

func (w *connWorker) stopConnector() {
	if w.conn == nil {
		return
	}
	if err := guard.Call("stopping connector", w.conn.Stop); err != nil {
		w.h.log.Warn("stopping connector", "connector", w.name, "err", err)
	}
	w.connCancel()
	w.conn, w.connCancel, w.connHash, w.resolved = nil, nil, "", nil
}

// shutdown stops every task gracefully, then the connector.
func (w *connWorker) shutdown(ctx context.Context) {
	w.mu.Lock()
	w.shuttingDown = true
	w.mu.Unlock()
	w.kick(0)
	locked := make(chan struct{})
	go func() { w.runMu.Lock(); close(locked) }()
	select {
	case <-locked:
	case <-ctx.Done():
		return // stuck in a connector call; Close reports it
	}
	defer w.runMu.Unlock()
	var wg sync.WaitGroup
	for i, tr := range w.tasks {
		if tr.run == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, w.h.opts.TaskStopTimeout)
			defer cancel()
			if err := tr.run.Stop(sctx); err != nil {
				w.h.log.Warn("stopping task at shutdown", "connector", w.name, "task", i, "err", err)
			}
			// As Kafka Connect does: a task stopped by its worker's
			// shutdown is UNASSIGNED until a worker takes it.
			if !tr.failed {
				w.h.putTaskStatus(store.TaskID{Connector: w.name, Task: i}, connectapi.StateUnassigned, "")
			}
		}()
	}
	wg.Wait()
	if w.conn != nil {
		w.stopConnector()
		w.h.putConnectorStatus(w.name, connectapi.StateUnassigned, "")
	}
}

func (w *connWorker) requestRestart(includeTasks, onlyFailed bool, tasks []int) {
	w.mu.Lock()
	w.restartConn = true
	w.onlyFailed = onlyFailed
	for _, t := range tasks {
		w.restartTasks[t] = true
	}
	_ = includeTasks
	w.mu.Unlock()
	w.kick(kickConfig)
}
