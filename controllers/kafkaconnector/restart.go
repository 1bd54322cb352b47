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

import "github.com/conveyor-dev/conveyor/api/v1alpha1"

// Restart annotations. Setting one to a new value (a timestamp, a counter,
// anything different from the last handled value) asks for exactly one
// restart; the last handled value is kept in status so the same value never
// restarts twice, and removing the annotation asks for nothing.
const (
	// AnnotationRestart restarts the connector and all its tasks:
	// POST /connectors/{c}/restart?includeTasks=true. Its last handled value
	// is status.lastRestartAnnotation.
	AnnotationRestart = v1alpha1.RestartAnnotation
	// AnnotationRestartTasks restarts the connector together with its failed
	// tasks: POST /connectors/{c}/restart?includeTasks=true&onlyFailed=true.
	AnnotationRestartTasks = "connect.conveyor.dev/restart-tasks"
)

// RestartRequest is one POST /connectors/{c}/restart to send.
type RestartRequest struct {
	IncludeTasks bool
	OnlyFailed   bool
	// Annotation and Value say which request this answers.
	Annotation string
	Value      string
}

// HandledRestarts holds the last handled value of each restart annotation
// (status).
type HandledRestarts struct {
	Restart      string
	RestartTasks string
}

// PendingRestarts compares the restart annotations with the values already
// handled and returns the restart to send (at most one) and the handled
// values to record once the restart succeeded. When both changed, one
// restart of everything answers both. justCreated: the connector
// was created in this reconcile, so annotations present at creation are
// recorded without a restart.
func PendingRestarts(annotations map[string]string, handled HandledRestarts, justCreated bool) (*RestartRequest, HandledRestarts) {
	next := handled
	r, rt := annotations[AnnotationRestart], annotations[AnnotationRestartTasks]
	restartNew := r != "" && r != handled.Restart
	tasksNew := rt != "" && rt != handled.RestartTasks
	if restartNew {
		next.Restart = r
	}
	if tasksNew {
		next.RestartTasks = rt
	}
	if justCreated {
		return nil, next
	}
	switch {
	case restartNew:
		return &RestartRequest{IncludeTasks: true, Annotation: AnnotationRestart, Value: r}, next
	case tasksNew:
		return &RestartRequest{IncludeTasks: true, OnlyFailed: true, Annotation: AnnotationRestartTasks, Value: rt}, next
	}
	return nil, next
}
