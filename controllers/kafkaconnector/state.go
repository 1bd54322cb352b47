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
	"strings"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// TargetState is spec.state: what the user wants the connector to do.
type TargetState = v1alpha1.ConnectorTargetState

// Target states, spelled as in the KafkaConnector API.
const (
	TargetRunning = v1alpha1.ConnectorTargetRunning
	TargetPaused  = v1alpha1.ConnectorTargetPaused
	TargetStopped = v1alpha1.ConnectorTargetStopped
)

// StateAction is the REST call that moves a connector towards its target.
type StateAction string

// State actions. StateNone means no call.
const (
	StateNone   StateAction = ""
	StateResume StateAction = "resume" // PUT /connectors/{c}/resume
	StatePause  StateAction = "pause"  // PUT /connectors/{c}/pause
	StateStop   StateAction = "stop"   // PUT /connectors/{c}/stop
)

// Connector states as the worker reports them (Kafka Connect's words).
const (
	observedRunning = connectapi.StateRunning
	observedPaused  = connectapi.StatePaused
	observedStopped = connectapi.StateStopped
	observedFailed  = connectapi.StateFailed
)

// InitialState is the initial_state to create a connector with, so a
// connector created paused or stopped never runs first. Upper case as
// Kafka Connect's POST /connectors takes it.
func InitialState(target TargetState) connectapi.InitialState {
	switch target {
	case TargetPaused:
		return connectapi.InitialPaused
	case TargetStopped:
		return connectapi.InitialStopped
	default:
		return connectapi.InitialRunning
	}
}

// DecideStateAction returns the call that moves a connector from its
// observed state (the connector part of GET /connectors/{c}/status) towards
// the target. lastSent is the action this operator last sent for the
// connector ("" when unknown): a FAILED connector stays FAILED after pause
// or resume until it is restarted, so the action is not repeated on every
// reconcile once sent. Rules:
//   - stopped: stop from any state but STOPPED, FAILED included (stopping a
//     failed connector is how users park it);
//   - paused: pause from RUNNING, UNASSIGNED, RESTARTING, STOPPED and FAILED;
//   - running: resume from PAUSED and STOPPED; FAILED is autoRestart's or the
//     user's business (a restart), not a resume, unless the last call sent
//     was a pause or stop, whose target state must be undone.
func DecideStateAction(target TargetState, observed string, lastSent StateAction) StateAction {
	observed = strings.ToUpper(observed)
	var want StateAction
	switch target {
	case TargetStopped:
		if observed == observedStopped {
			return StateNone
		}
		want = StateStop
	case TargetPaused:
		if observed == observedPaused {
			return StateNone
		}
		want = StatePause
	default:
		switch observed {
		case observedPaused, observedStopped:
			return StateResume
		case observedFailed:
			if lastSent == StatePause || lastSent == StateStop {
				return StateResume
			}
			return StateNone
		default:
			return StateNone
		}
	}
	if observed == observedFailed && lastSent == want {
		return StateNone
	}
	return want
}
