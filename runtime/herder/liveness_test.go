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
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestStatusOfWorkersOutsideTheGroup: a RUNNING record written by a worker
// that is not in the group's last rebalance reads UNASSIGNED (keeping the
// worker id); so does one of this worker for a task it does not run now;
// FAILED stays FAILED; a stall note shows only on a RUNNING task.
func TestStatusOfWorkersOutsideTheGroup(t *testing.T) {
	e := newEnvWith(t, false)
	ctx := context.Background()
	e.h.SetLeader(true, "http://w1:8083")
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "s", Config: sinkConfig("s", "TestSink", 4)}); err != nil {
		t.Fatal(err)
	}
	id := func(i int) store.TaskID { return store.TaskID{Connector: "s", Task: i} }
	e.h.SetAssignment(Assignment{Generation: 1, Connectors: []string{"s"}, Tasks: []store.TaskID{id(0), id(1)}})
	testkit.EventuallyTrue(t, wait, "tasks 0 and 1 RUNNING here", func() bool {
		st, err := e.h.ConnectorStatus(ctx, "s")
		return err == nil && len(st.Tasks) == 4 && st.Tasks[0].State == connectapi.StateRunning && st.Tasks[1].State == connectapi.StateRunning
	})
	put := func(i int, st store.Status) {
		t.Helper()
		if err := e.h.opts.Statuses.PutTask(ctx, id(i), st); err != nil {
			t.Fatal(err)
		}
	}
	put(2, store.Status{State: connectapi.StateRunning, WorkerID: "w2:8083", Stalled: "no progress for 1m"})
	put(3, store.Status{State: connectapi.StateFailed, WorkerID: "w3:8083", Trace: "boom"})
	state := func(i int) connectapi.TaskState {
		t.Helper()
		st, err := e.h.TaskStatus(ctx, connectapi.ConnectorTaskID{Connector: "s", Task: i})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// No member list yet (a standalone worker, or before the first
	// rebalance): every worker counts as present.
	testkit.EventuallyTrue(t, wait, "task 2 RUNNING on w2", func() bool { return state(2).State == connectapi.StateRunning })
	if s := state(2); s.Stalled != "no progress for 1m" {
		t.Errorf("task 2's stall note %q", s.Stalled)
	}
	e.h.SetMembers([]string{"w1:8083", "w2:8083"})
	if s := state(2); s.State != connectapi.StateRunning || s.WorkerID != "w2:8083" {
		t.Errorf("w2 in the group: task 2 reads %s@%s", s.State, s.WorkerID)
	}
	e.h.SetMembers([]string{"w1:8083"}) // w2 is gone
	if s := state(2); s.State != connectapi.StateUnassigned || s.WorkerID != "w2:8083" || s.Stalled != "" {
		t.Errorf("w2 gone: task 2 reads %s@%s (stalled %q), want UNASSIGNED@w2:8083 without a note", s.State, s.WorkerID, s.Stalled)
	}
	if s := state(3); s.State != connectapi.StateFailed || s.Trace != "boom" {
		t.Errorf("task 3 reads %s (%q), want FAILED with its trace", s.State, s.Trace)
	}
	st, err := e.h.ConnectorStatus(ctx, "s")
	if err != nil || st.Tasks[2].State != connectapi.StateUnassigned || st.Tasks[0].State != connectapi.StateRunning {
		t.Errorf("connector status %+v, %v", st, err)
	}
	// This worker's own record of a task it no longer runs.
	put(1, store.Status{State: connectapi.StateRunning, WorkerID: "w1:8083"})
	e.h.SetAssignment(Assignment{Generation: 2, Connectors: []string{"s"}, Tasks: []store.TaskID{id(0)}})
	testkit.EventuallyTrue(t, wait, "task 1, no longer run here, UNASSIGNED", func() bool { return state(1).State == connectapi.StateUnassigned })
	if s := state(0); s.State != connectapi.StateRunning {
		t.Errorf("task 0, still run here, reads %s", s.State)
	}
}
