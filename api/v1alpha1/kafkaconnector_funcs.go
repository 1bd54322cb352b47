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

package v1alpha1

import "github.com/conveyor-dev/conveyor/runtime/connectnames"

// RequestedTasksMax is spec.tasksMax or its default.
func (k *KafkaConnector) RequestedTasksMax() int32 {
	return int32Or(k.Spec.TasksMax, DefaultTasksMax)
}

// TargetState is spec.state or its default (running).
func (k *KafkaConnector) TargetState() ConnectorTargetState {
	if k.Spec.State == "" {
		return DefaultConnectorState
	}
	return k.Spec.State
}

// AutoRestartEnabled reports whether autoRestart.enabled is true (default true).
func (k *KafkaConnector) AutoRestartEnabled() bool {
	return boolOr(k.Spec.AutoRestart.Enabled, DefaultAutoRestartEnabled)
}

// SinkGroup is the consumer group of the connector if it is a sink: "connect-<name>".
func (k *KafkaConnector) SinkGroup() string {
	return connectnames.SinkGroup(k.Name)
}

// RuntimeState is the Kafka Connect runtime state that satisfies the target state.
func (s ConnectorTargetState) RuntimeState() ConnectorState {
	switch s {
	case ConnectorTargetPaused:
		return ConnectorStatePaused
	case ConnectorTargetStopped:
		return ConnectorStateStopped
	default:
		return ConnectorStateRunning
	}
}

// RestartRequested reports whether the restart annotation holds a value the operator has not
// acted on yet, and returns that value.
func (k *KafkaConnector) RestartRequested() (string, bool) {
	v, ok := k.Annotations[RestartAnnotation]
	if !ok || v == "" || v == k.Status.LastRestartAnnotation {
		return "", false
	}
	return v, true
}
