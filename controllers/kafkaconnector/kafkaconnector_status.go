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
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// ReasonConnectorNotManaged: a connector of that name exists in the cluster
// but this KafkaConnector did not create it; the operator leaves it alone.
const ReasonConnectorNotManaged = "ConnectorNotManaged"

// ReasonSecretsNotGranted: the connector references Secrets that the
// workers' Role does not list yet; the operator waits before it creates the
// connector or writes the new config, so its tasks do not fail on a 403.
const ReasonSecretsNotGranted = "SecretsNotGranted"

// RuntimeStatus copies the worker's status entity into the status fields:
// connector state and worker, and the tasks sorted by id with traces cut to
// the API's bound.
func RuntimeStatus(st connectapi.ConnectorStateInfo, status *v1alpha1.KafkaConnectorStatus) {
	status.State = v1alpha1.ConnectorState(st.Connector.State)
	status.WorkerID = st.Connector.WorkerID
	tasks := make([]v1alpha1.TaskStatus, 0, len(st.Tasks))
	for _, t := range st.Tasks {
		tasks = append(tasks, v1alpha1.TaskStatus{
			ID:       int32(t.ID),
			State:    v1alpha1.ConnectorState(t.State),
			WorkerID: t.WorkerID,
			Trace:    truncate(t.Trace, v1alpha1.MaxTraceLength),
		})
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	if len(tasks) == 0 {
		tasks = nil
	}
	status.Tasks = tasks
}

// Failed reports whether the connector or one of its tasks is FAILED.
func Failed(st connectapi.ConnectorStateInfo) bool {
	if st.Connector.State == connectapi.StateFailed {
		return true
	}
	for _, t := range st.Tasks {
		if t.State == connectapi.StateFailed {
			return true
		}
	}
	return false
}

// ReadyCondition says whether the connector and its tasks are in the state
// spec.state asks for. effective is the number of tasks that should run.
func ReadyCondition(target TargetState, st connectapi.ConnectorStateInfo, effective int32, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.KafkaConnectorReady, Status: metav1.ConditionFalse, ObservedGeneration: generation}
	var failed []string
	for _, t := range st.Tasks {
		if t.State == connectapi.StateFailed {
			failed = append(failed, fmt.Sprint(t.ID))
		}
	}
	switch {
	case st.Connector.State == connectapi.StateFailed && target != TargetStopped:
		c.Reason = v1alpha1.ReasonConnectorFailed
		c.Message = truncate("the connector failed: "+firstLine(st.Connector.Trace), maxConditionMessage)
	case len(failed) > 0 && target == TargetRunning:
		c.Reason = v1alpha1.ReasonTasksFailed
		c.Message = fmt.Sprintf("task(s) %s of %d failed; GET /connectors/%s/status has the traces", strings.Join(failed, ", "), len(st.Tasks), st.Name)
	case target == TargetStopped:
		if st.Connector.State == connectapi.StateStopped {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonConnectorStopped, "the connector is stopped, as spec.state asks"
		} else {
			c.Reason, c.Message = v1alpha1.ReasonTasksPending, fmt.Sprintf("stopping: the connector is %s", st.Connector.State)
		}
	case target == TargetPaused:
		if st.Connector.State == connectapi.StatePaused {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonConnectorPaused, "the connector is paused, as spec.state asks"
		} else {
			c.Reason, c.Message = v1alpha1.ReasonTasksPending, fmt.Sprintf("pausing: the connector is %s", st.Connector.State)
		}
	default:
		running := 0
		for _, t := range st.Tasks {
			if t.State == connectapi.StateRunning {
				running++
			}
		}
		if st.Connector.State == connectapi.StateRunning && running == len(st.Tasks) && int32(running) >= effective {
			c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonConnectorRunning
			c.Message = fmt.Sprintf("the connector and its %d task(s) run", running)
		} else {
			c.Reason = v1alpha1.ReasonTasksPending
			c.Message = fmt.Sprintf("the connector is %s with %d of %d task(s) running", orUnknown(st.Connector.State), running, effective)
		}
	}
	return c
}

// TasksLimitedCondition is the TasksLimited condition for requested tasks,
// the effective count and its reason.
func TasksLimitedCondition(requested, effective int32, reason plugin.Reason, generation int64) metav1.Condition {
	if !Limited(requested, effective) || reason == "" || reason == ReasonTasksMax {
		return metav1.Condition{Type: v1alpha1.KafkaConnectorTasksLimited, Status: metav1.ConditionFalse, ObservedGeneration: generation,
			Reason: v1alpha1.ReasonNotLimited, Message: fmt.Sprintf("the connector runs %d task(s) as tasksMax asks", effective)}
	}
	return metav1.Condition{Type: v1alpha1.KafkaConnectorTasksLimited, Status: metav1.ConditionTrue, ObservedGeneration: generation,
		Reason: string(reason), Message: fmt.Sprintf("the connector runs %d of the %d task(s) tasksMax asks for: %s", effective, requested, limitExplanation(reason))}
}

func limitExplanation(r plugin.Reason) string {
	switch r {
	case plugin.TopicPartitions:
		return "a sink cannot use more tasks than its topics have partitions"
	case plugin.Tables:
		return "one task per table at most"
	case plugin.Files:
		return "one task per file at most"
	case plugin.Ranges:
		return "one task per key range at most"
	case plugin.SingleReader:
		return "the source can only be read by one task"
	}
	return "the connector's natural limit"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if s == "" {
		return "no trace reported"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "not reported yet"
	}
	return s
}
