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
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// RecordCrash writes the crash record of the connector whose code ended
// this worker's previous process (c, from the runtime's crash report),
// so that every worker holds it FAILED instead of running it into the
// next crash. A crash in no connector's code is only logged.
func (h *Herder) RecordCrash(ctx context.Context, c guard.Crash) error {
	if c.Connector == "" {
		h.log.Error("the previous process of this worker crashed outside any connector's code", "crash", c.Head)
		return nil
	}
	cfg, ok := h.opts.Configs.Connector(c.Connector)
	if !ok {
		h.log.Warn("the previous process of this worker crashed running a connector that no longer exists", "connector", c.Connector, "crash", c.Head)
		return nil
	}
	what := "the connector"
	if c.Task >= 0 {
		what = fmt.Sprintf("task %d", c.Task)
	}
	trace := fmt.Sprintf(connectapi.HeldTracePrefix+"%s ended the process of worker %s with a crash the runtime could not recover: %s. "+
		"It is not started again, on any worker, until its configuration changes or it is restarted "+
		"(POST /connectors/%s/restart?includeTasks=true).\n\n%s", what, h.opts.WorkerID, c.Head, c.Connector, c.Stack)
	h.log.Error("the previous process of this worker crashed running a connector; holding it FAILED", "connector", c.Connector, "task", c.Task, "crash", c.Head)
	return h.opts.Statuses.PutCrash(ctx, c.Connector, store.Crash{
		WorkerID: h.opts.WorkerID, Task: c.Task, Time: time.Now().UnixMilli(),
		Trace: h.scrubFor(c.Connector, trace), ConfigHash: hashConfig(cfg),
	})
}

// heldByCrash returns the trace of the crash the connector is held FAILED
// for: one recorded with its current configuration (hash).
func (w *connWorker) heldByCrash(hash string) (string, bool) {
	c, ok := w.h.opts.Statuses.Crash(w.name)
	if !ok || c.ConfigHash != hash {
		return "", false
	}
	return c.Trace, true
}

// hold stops whatever of the connector runs here and reports the
// connector and its tasks assigned here FAILED with trace.
func (w *connWorker) hold(connAssigned bool, tasks map[int]bool, trace string) {
	w.stopConnector()
	for i, tr := range w.tasks {
		if tr.run != nil {
			w.stopTask(i, tr)
		}
		delete(w.tasks, i)
	}
	if connAssigned {
		w.setConnState(connectapi.StateFailed, trace)
	}
	for i := range tasks {
		w.setTaskState(i, connectapi.StateFailed, trace)
	}
}

// forgetCrash removes a connector's crash record before a restart.
func (h *Herder) forgetCrash(ctx context.Context, name string) error {
	if _, ok := h.opts.Statuses.Crash(name); !ok {
		return nil
	}
	if err := h.opts.Statuses.DeleteCrash(ctx, name); err != nil {
		return fmt.Errorf("removing the crash record of connector %s: %w", name, err)
	}
	return nil
}
