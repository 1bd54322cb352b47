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
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// generateTaskConfigs asks the running connector for min(tasks.max,
// natural limit) task configs, refuses more than tasks.max (KIP-1004),
// records the limits and puts placeholders back where the connector copied
// resolved values.
func (w *connWorker) generateTaskConfigs(ctx context.Context, cfg map[string]string) ([]map[string]string, error) {
	cfgs, pl, err := plugin.PlanTasks(ctx, w.name, w.conn, tasksMax(cfg))
	if err != nil {
		return nil, err
	}
	w.lastNatural = pl.NaturalLimit
	lim := store.Limits{TasksMax: pl.TasksMax, EffectiveTasks: pl.EffectiveTasks, Reason: string(pl.Reason)}
	if pl.NaturalLimit >= 0 {
		n := pl.NaturalLimit
		lim.NaturalLimit = &n
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.h.opts.Statuses.PutLimits(lctx, w.name, lim); err != nil {
		w.h.log.Warn("writing task limits", "connector", w.name, "err", err)
	}
	out := make([]map[string]string, len(cfgs))
	for i, c := range cfgs {
		out[i] = w.h.scrubConfigFor(w.name, reverseResolve(c, cfg, w.resolved))
	}
	return out, nil
}

// reverseResolve puts placeholders back into a task config wherever the
// connector copied a resolved value of a key that holds a placeholder in the
// raw connector config, so no resolved secret reaches the config topic.
func reverseResolve(task, raw, resolved map[string]string) map[string]string {
	out := maps.Clone(task)
	for k, v := range out {
		rv, ok := raw[k]
		if !ok || !strings.Contains(rv, "${") {
			continue
		}
		if res, ok := resolved[k]; ok && res == v {
			out[k] = rv
		}
	}
	return out
}

func equalConfigs(a, b []map[string]string) bool {
	return slices.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// taskConfigRetry is the pause before task configs whose write failed are
// generated and written again.
const taskConfigRetry = time.Second

// writeTaskConfigs writes new task configs (on the leader, or through the
// forwarder on a follower) and drops statuses of tasks that no longer exist.
func (w *connWorker) writeTaskConfigs(ctx context.Context, cfgs, old []map[string]string) bool {
	h := w.h
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	switch {
	case h.isLeader():
		err = h.putTaskConfigs(wctx, w.name, cfgs)
	case h.opts.ForwardTaskConfigs != nil:
		err = h.opts.ForwardTaskConfigs(wctx, w.name, cfgs)
	default:
		return false
	}
	if err != nil {
		h.log.Error("writing task configs; retrying", "connector", w.name, "tasks", len(cfgs), "err", err, "retry", taskConfigRetry)
		// A follower's write fails while the leader rebalances or moves:
		// generate and write again later.
		time.AfterFunc(taskConfigRetry, func() { w.kick(kickReconfigure) })
		return false
	}
	h.log.Info("task configs written", "connector", w.name, "tasks", len(cfgs))
	for i := len(cfgs); i < len(old); i++ {
		if err := h.opts.Statuses.DeleteTask(wctx, store.TaskID{Connector: w.name, Task: i}); err != nil {
			h.log.Warn("deleting status of a removed task", "connector", w.name, "task", i, "err", err)
		}
	}
	return true
}

func (w *connWorker) startTask(ctx context.Context, i int, connCfg, taskCfg map[string]string, generation int) {
	h := w.h
	tr := &taskRun{cfgHash: hashConfig(taskCfg)}
	w.tasks[i] = tr
	id := store.TaskID{Connector: w.name, Task: i}
	fail := func(err error) {
		tr.failed = true
		w.setTaskState(i, connectapi.StateFailed, err.Error())
	}
	p, ok := h.opts.Plugins.Lookup(connCfg[plugin.KeyConnectorClass])
	if !ok {
		fail(fmt.Errorf("failed to find any plugin named %q", connCfg[plugin.KeyConnectorClass]))
		return
	}
	rc, err := w.resolve(ctx, connCfg)
	if err != nil {
		fail(fmt.Errorf("resolving config placeholders of connector %q: %w", w.name, err))
		return
	}
	rt, err := w.resolve(ctx, taskCfg)
	if err != nil {
		fail(fmt.Errorf("resolving config placeholders of task %d: %w", i, err))
		return
	}
	run, err := h.opts.Tasks.StartTask(h.ctx, TaskSpec{ID: id, Plugin: p, ConnectorConfig: rc, TaskConfig: rt, Generation: generation})
	if err != nil {
		fail(fmt.Errorf("starting task %s-%d: %w", w.name, i, err))
		return
	}
	tr.run = run
	w.setTaskState(i, connectapi.StateRunning, "")
	if p.Kind == plugin.KindSink {
		topics, err := plugin.SinkTopics(ctx, &connContext{w: w, config: rc}, rc)
		if err == nil {
			for _, t := range topics {
				tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_ = h.opts.Statuses.PutTopic(tctx, w.name, h.scrubFor(w.name, t), i)
				cancel()
			}
		}
	}
	go func() {
		<-run.Done()
		err := run.Err()
		if err != nil {
			h.log.Error("task failed", "connector", w.name, "task", i, "err", err)
			w.mu.Lock()
			w.ended[run] = err
			w.mu.Unlock()
			// Written here, not in the loop, so the status is not lost
			// when the loop is busy.
			w.runMu.Lock()
			if w.tasks[i] == tr {
				w.setTaskState(i, connectapi.StateFailed, err.Error())
			}
			w.runMu.Unlock()
			w.kick(kickTaskEnded)
		}
	}()
}

func (w *connWorker) stopTask(i int, tr *taskRun) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.h.ctx), w.h.opts.TaskStopTimeout)
	defer cancel()
	if err := tr.run.Stop(ctx); err != nil {
		w.h.log.Warn("stopping task", "connector", w.name, "task", i, "err", err)
	}
	tr.run = nil
}

func (w *connWorker) requestTaskRestart(task int) {
	w.mu.Lock()
	w.restartTasks[task] = true
	w.mu.Unlock()
	w.kick(kickConfig)
}
