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

// Condition types of a KafkaConnector.
const (
	// KafkaConnectorReady is True when the connector and every task are in the state
	// spec.state asks for (RUNNING, PAUSED or STOPPED).
	KafkaConnectorReady = "Ready"
	// KafkaConnectorTasksLimited is True when the connector runs fewer tasks than tasksMax;
	// the reason is the worker's (TopicPartitions, Tables, Files, Ranges, SingleReader) and the
	// message gives the numbers.
	KafkaConnectorTasksLimited = "TasksLimited"
	// KafkaConnectorTasksStalled is True while one or more RUNNING tasks have work (records
	// in flight, sink lag) and make no progress for the worker's task.stall.timeout.ms; the
	// message names them. A stall is a fault that the task state alone does not show.
	KafkaConnectorTasksStalled = "TasksStalled"
)

// Reasons of KafkaConnector conditions.
const (
	// ReasonClusterNotFound: spec.clusterRef names no ConnectCluster in the namespace.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterNotReady: the ConnectCluster exists but is not Ready.
	ReasonClusterNotReady = "ClusterNotReady"
	// ReasonConnectorRunning: the connector and its tasks run.
	ReasonConnectorRunning = "ConnectorRunning"
	// ReasonConnectorPaused: the connector is paused, as asked.
	ReasonConnectorPaused = "ConnectorPaused"
	// ReasonConnectorStopped: the connector is stopped, as asked.
	ReasonConnectorStopped = "ConnectorStopped"
	// ReasonConnectorFailed: the connector instance failed; the message carries the start of the trace.
	ReasonConnectorFailed = "ConnectorFailed"
	// ReasonTasksFailed: one or more tasks failed; the message names them.
	ReasonTasksFailed = "TasksFailed"
	// ReasonTasksPending: tasks are not yet assigned or started.
	ReasonTasksPending = "TasksPending"
	// ReasonPluginNotFound: spec.class names no plugin the workers have.
	ReasonPluginNotFound = "PluginNotFound"
	// ReasonConfigInvalid: the worker's validation refused the config; the message lists the errors.
	ReasonConfigInvalid = "ConfigInvalid"
	// ReasonRestartLimitReached: autoRestart.maxRestarts consecutive restarts did not help.
	ReasonRestartLimitReached = "RestartLimitReached"
	// ReasonSinkGroupConflict: a connector of another ConnectCluster on the same brokers
	// already uses the sink consumer group connect-<name>.
	ReasonSinkGroupConflict = "SinkGroupConflict"
	// ReasonSecretNotAllowed: the config references a Secret that the
	// ConnectCluster's spec.connectorAccess.secrets does not list; the
	// workers get no grant for it. The message names the config key.
	ReasonSecretNotAllowed = "SecretNotAllowed"
	// ReasonProviderNotAllowed: the config uses ${file:...} or ${env:...}
	// outside the ConnectCluster's spec.connectorAccess lists. The message
	// names the config key.
	ReasonProviderNotAllowed = "ProviderNotAllowed"
	// ReasonTasksStalled: tasks have work and make no progress; the message names them.
	ReasonTasksStalled = "TasksStalled"
	// ReasonTasksProgressing: no RUNNING task is stalled.
	ReasonTasksProgressing = "TasksProgressing"
	// ReasonNotLimited: the connector runs as many tasks as tasksMax.
	ReasonNotLimited = "NotLimited"
	// ReasonShareGroup (TasksLimited=False): a sink with
	// consumer.group.type=share runs tasksMax tasks; its partition count does
	// not limit them.
	ReasonShareGroup = "ShareGroup"
)
