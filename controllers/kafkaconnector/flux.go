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
	"net/url"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// absentWorkerRetry is how soon a pass looks again while the status names a
// worker that is not Ready as running work: the workers' group marks that
// work UNASSIGNED once it notices (the session timeout and a rebalance).
const absentWorkerRetry = 2 * time.Second

// LookAgainWithin is how soon the runtime's status of a connector changes
// without the API server seeing anything, so the next pass should not wait
// for the resync; 0 when nothing is on its way. The workers do not tell the
// operator, and a worker that died leaves its last status records behind:
//   - the connector or a task live (RUNNING, PAUSED, RESTARTING) on a worker
//     that is not one of the Ready worker pods (ready, their worker ids:
//     POD_IP:8083): dead or restarting, its work reads UNASSIGNED within the
//     group's session timeout, or it is back: absentWorkerRetry;
//   - UNASSIGNED work on such a worker moves when lostWorkerDelay ends (or
//     the worker comes back): a quarter of lostWorkerDelay, at least
//     absentWorkerRetry, so the status lags the move by that at most.
//
// Work UNASSIGNED on a Ready worker (a rebalance in progress) settles with
// the status writes that follow it.
func LookAgainWithin(st connectapi.ConnectorStateInfo, ready []string, lostWorkerDelay time.Duration) time.Duration {
	isReady := make(map[string]bool, len(ready))
	for _, id := range ready {
		isReady[id] = true
	}
	var d time.Duration
	see := func(state, worker string) {
		if worker == "" || isReady[worker] {
			return
		}
		switch state {
		case connectapi.StateRunning, connectapi.StatePaused, connectapi.StateRestarting:
			d = absentWorkerRetry
		case connectapi.StateUnassigned:
			if d == 0 {
				d = max(lostWorkerDelay/4, absentWorkerRetry)
			}
		}
	}
	see(st.Connector.State, st.Connector.WorkerID)
	for _, t := range st.Tasks {
		see(t.State, t.WorkerID)
	}
	return d
}

// WorkerIDs are the worker ids of REST endpoints ("http://10.0.0.7:8083"):
// the operator sets no worker.id and no advertised host, so a worker's id is
// the host:port the operator reaches it at.
func WorkerIDs(endpoints []string) []string {
	ids := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		if u, err := url.Parse(e); err == nil && u.Host != "" {
			ids = append(ids, u.Host)
		}
	}
	return ids
}
