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

package kafkaconnector

import (
	"slices"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

func TestLookAgainWithin(t *testing.T) {
	const a, b = "10.0.0.1:8083", "10.0.0.2:8083"
	status := func(connector string, tasks ...connectapi.TaskState) connectapi.ConnectorStateInfo {
		return connectapi.ConnectorStateInfo{Name: "c", Connector: connectapi.ConnectorState{State: connectapi.StateRunning, WorkerID: connector}, Tasks: tasks}
	}
	task := func(id int, state, worker string) connectapi.TaskState {
		return connectapi.TaskState{ID: id, State: state, WorkerID: worker}
	}
	for _, tc := range []struct {
		name  string
		st    connectapi.ConnectorStateInfo
		ready []string
		delay time.Duration
		want  time.Duration
	}{
		{"every worker Ready", status(a, task(0, connectapi.StateRunning, a), task(1, connectapi.StateRunning, b)), []string{a, b}, time.Minute, 0},
		{"a task RUNNING on a worker not Ready", status(a, task(0, connectapi.StateRunning, a), task(1, connectapi.StateRunning, b)), []string{a}, time.Minute, absentWorkerRetry},
		{"the connector RUNNING on a worker not Ready", status(b, task(0, connectapi.StateRunning, a)), []string{a}, time.Minute, absentWorkerRetry},
		{"PAUSED and RESTARTING are live too", status(a, task(0, connectapi.StatePaused, b), task(1, connectapi.StateRestarting, b)), []string{a}, time.Minute, absentWorkerRetry},
		{"UNASSIGNED on a worker gone: a quarter of lostWorkerDelay", status(a, task(0, connectapi.StateUnassigned, b)), []string{a}, time.Minute, 15 * time.Second},
		{"UNASSIGNED, short lostWorkerDelay: the floor", status(a, task(0, connectapi.StateUnassigned, b)), []string{a}, time.Second, absentWorkerRetry},
		{"UNASSIGNED and RUNNING on workers gone: the sooner", status(a, task(0, connectapi.StateUnassigned, b), task(1, connectapi.StateRunning, b)), []string{a}, time.Minute, absentWorkerRetry},
		{"UNASSIGNED on a Ready worker: a rebalance, its own writes follow", status(a, task(0, connectapi.StateUnassigned, a)), []string{a}, time.Minute, 0},
		{"FAILED on a worker gone stays as it is", status(a, task(0, connectapi.StateFailed, b)), []string{a}, time.Minute, 0},
		{"not placed yet", status("", task(0, connectapi.StateUnassigned, "")), []string{a}, time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LookAgainWithin(tc.st, tc.ready, tc.delay); got != tc.want {
				t.Errorf("LookAgainWithin = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestWorkerIDs(t *testing.T) {
	got := WorkerIDs([]string{"http://10.0.0.7:8083", "http://[fd00::7]:8083", "::bad"})
	if want := []string{"10.0.0.7:8083", "[fd00::7]:8083"}; !slices.Equal(got, want) {
		t.Errorf("WorkerIDs = %q, want %q", got, want)
	}
}
