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
	"slices"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// Status liveness: the status topic keeps the last record each worker wrote,
// so a worker that was SIGKILLed, or is restarting, or waits to join the
// group, leaves its tasks reading RUNNING until another worker takes them.
// Kafka Connect reports UNASSIGNED once the worker is gone, and so does
// every answer built here: a status whose worker is not in the group, or
// is this worker but names work it does not run now, reads UNASSIGNED
// (with the worker id it last ran on). FAILED stays FAILED: its trace is
// what the user needs.
//
// "In the group" is the set of workers of the last completed rebalance,
// which the leader sends to every member with the assignments (the
// assignor's state), so every worker answers the same within a rebalance
// of a worker's departure: the session timeout plus the rebalance.

// SetMembers records the worker ids of the group's last completed
// rebalance; nil (the default, and a standalone worker) means every worker
// counts as present.
func (h *Herder) SetMembers(workerIDs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if workerIDs == nil {
		h.members = nil
		return
	}
	h.members = make(map[string]bool, len(workerIDs))
	for _, id := range workerIDs {
		h.members[id] = true
	}
}

// present reports whether the worker that wrote st runs the connector (task
// < 0) or task now, as far as this worker knows.
func (h *Herder) present(st store.Status, connector string, task int) bool {
	if st.WorkerID == h.opts.WorkerID {
		if h.opts.AssignAll {
			return true // a standalone worker runs everything
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if task < 0 {
			return h.assigned[connector].connector
		}
		return h.assigned[connector].tasks[task]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.members == nil || h.members[st.WorkerID]
}

// liveState is the state to report for st.
func (h *Herder) liveState(st store.Status, connector string, task int) string {
	switch st.State {
	case connectapi.StateRunning, connectapi.StatePaused, connectapi.StateRestarting:
		if !h.present(st, connector, task) {
			return connectapi.StateUnassigned
		}
	}
	return st.State
}

// taskStateOf is the REST view of a task's status record.
func (h *Herder) taskStateOf(id store.TaskID, st store.Status) connectapi.TaskState {
	ts := connectapi.TaskState{ID: id.Task, State: h.liveState(st, id.Connector, id.Task), WorkerID: st.WorkerID, Trace: st.Trace}
	if ts.State == connectapi.StateRunning {
		ts.Stalled = st.Stalled
	}
	return ts
}

// SetTaskStalled records in the status of a task this worker runs that it
// is stalled (why, in a few words) or no longer is (""). Only a RUNNING
// status of this worker changes; any other state written later clears it.
func (h *Herder) SetTaskStalled(id store.TaskID, why string) {
	st, ok := h.opts.Statuses.Task(id)
	if !ok || st.WorkerID != h.opts.WorkerID || st.State != connectapi.StateRunning || st.Stalled == why {
		return
	}
	if !slices.Contains(h.currentAssignment().Tasks, id) {
		return
	}
	if why != "" {
		h.log.Warn("task stalled: it has work and makes no progress", "connector", id.Connector, "task", id.Task, "why", why)
	} else {
		h.log.Info("stalled task makes progress again", "connector", id.Connector, "task", id.Task)
	}
	st.Stalled, st.Generation = why, h.generation()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), 10*time.Second)
	defer cancel()
	if err := h.opts.Statuses.PutTask(ctx, id, st); err != nil {
		h.log.Warn("writing task status", "connector", id.Connector, "task", id.Task, "stalled", why, "err", err)
	}
}
