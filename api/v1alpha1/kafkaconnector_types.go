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

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConnectorTargetState is the state a user asks a connector to be in.
// +kubebuilder:validation:Enum=running;paused;stopped
type ConnectorTargetState string

// Target states of a connector.
const (
	// ConnectorTargetRunning runs the connector and its tasks.
	ConnectorTargetRunning ConnectorTargetState = "running"
	// ConnectorTargetPaused keeps the tasks assigned but stops them processing
	// records.
	ConnectorTargetPaused ConnectorTargetState = "paused"
	// ConnectorTargetStopped shuts the connector and its tasks down and frees
	// their resources, keeping the config and offsets.
	ConnectorTargetStopped ConnectorTargetState = "stopped"
)

// KafkaConnectorSpec is the desired state of a connector.
type KafkaConnectorSpec struct {
	// clusterRef names the ConnectCluster, in the same namespace, that runs
	// this connector. It cannot change after creation: delete and recreate the
	// connector to move it (source offsets stay with the old cluster's offset
	// topic).
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable: delete the KafkaConnector and create it again to move it to another ConnectCluster"
	ClusterRef ClusterReference `json:"clusterRef"`

	// class is the connector plugin, one bundled in the worker: FileSink,
	// FileSource, RangeSource, PostgresSink, PostgresTableSource or
	// PostgresCDCSource. It becomes the connector's connector.class.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_.$]*$`
	Class string `json:"class"`

	// tasksMax is the most tasks the connector may run (Kafka Connect's
	// tasks.max), sent to the worker exactly as written. The connector may run
	// fewer: a sink cannot use more tasks than its topics have partitions, a
	// table source more than it has tables. status.effectiveTasks and
	// status.taskLimit say how many it runs and why. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	TasksMax *int32 `json:"tasksMax,omitempty"`

	// config is the connector's configuration in the plugin's property names,
	// as strings (for example "topics": "orders", "file":
	// "/data/orders.jsonl"). Secret values are placeholders,
	// "${secret:<secret-name>:<key>}" for a Secret in this namespace, which
	// the worker resolves when a task starts; the config topic, status and
	// logs only ever hold the placeholder. connector.class, tasks.max and name
	// are refused here: use class, tasksMax and metadata.name. Keys are at
	// most 255 characters, values at most 32 KiB. A malformed placeholder is
	// refused by the operator (Ready=False, ConfigInvalid, naming the key):
	// a CEL rule scanning every value would exceed the API server's cost
	// budget.
	// +optional
	// +kubebuilder:validation:MaxProperties=512
	// +kubebuilder:validation:XValidation:rule="!('connector.class' in self) && !('tasks.max' in self) && !('name' in self)",message="config may not set connector.class, tasks.max or name: use spec.class, spec.tasksMax and metadata.name instead",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 255)",message="config keys must be 1 to 255 characters long: use the plugin's property names"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 32768)",message="config values may be at most 32 KiB: put large content (a schema, a certificate) in a Secret listed in the ConnectCluster's spec.connectorAccess.secrets and reference it as ${secret:<name>:<key>}"
	Config map[string]string `json:"config,omitempty"`

	// exactlyOnce asks for exactly-once delivery. For a source connector it
	// sets exactly.once.support: Requested (run transactionally when the
	// cluster has exactly-once on) or Required (refuse the connector unless
	// the cluster has it on and the plugin supports it). For a sink it makes
	// the consumer read read_committed (consumer.override.isolation.level),
	// so records of aborted transactions never reach it; a sink config with
	// exactly.once=true (the PostgreSQL sink) gets that default too. Unset,
	// the config keys decide.
	// +optional
	// +kubebuilder:validation:Enum=Requested;Required
	ExactlyOnce ExactlyOnceRequest `json:"exactlyOnce,omitempty"`

	// state is the state to keep the connector in: running (default), paused
	// (tasks stay assigned but process nothing) or stopped (tasks shut down,
	// config and offsets kept).
	// +optional
	// +kubebuilder:default=running
	State ConnectorTargetState `json:"state,omitempty"`

	// autoRestart makes the operator restart the connector and its failed
	// tasks after a failure, with exponential backoff between attempts.
	// +optional
	// +kubebuilder:default={}
	AutoRestart AutoRestartSpec `json:"autoRestart,omitempty"`

	// driftPolicy is what the operator does when the connector's config on
	// the workers is changed behind its back (through the REST API):
	// enforce writes the spec's config back, with a ConfigDrift condition, a
	// Warning event naming the keys and exponential backoff when the edits
	// go on; report leaves the change and shows the key-level difference in
	// the ConfigDrift condition. Absent: the ConnectCluster's
	// spec.driftPolicy, else enforce. A change of the spec is written in
	// either case.
	// +optional
	DriftPolicy DriftPolicy `json:"driftPolicy,omitempty"`

	// offsets sets or resets the connector's offsets once per requestId:
	// the operator stops the connector, applies them (Kafka Connect's
	// KIP-875) and brings it back to spec.state; status.offsets records the
	// outcome.
	// +optional
	Offsets *OffsetsRequest `json:"offsets,omitempty"`
}

// ClusterReference names a ConnectCluster in the same namespace.
// +structType=atomic
type ClusterReference struct {
	// name of the ConnectCluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AutoRestartSpec configures automatic restarts of failed connectors and
// tasks.
type AutoRestartSpec struct {
	// enabled restarts a FAILED connector or task automatically, waiting 2s
	// before the first attempt and doubling the wait up to 5m; the wait resets
	// after 10m of running. Default true.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// maxRestarts is how many consecutive automatic restarts to try before
	// leaving the connector FAILED for a human; absent means no limit.
	// Restarting by hand (the connect.conveyor.dev/restart annotation) resets
	// the count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`
}

// ConnectorState is the runtime state of a connector or task, as Kafka
// Connect reports it.
type ConnectorState string

// Runtime states of connectors and tasks (Kafka Connect's names).
const (
	ConnectorStateUnassigned ConnectorState = "UNASSIGNED"
	ConnectorStateRunning    ConnectorState = "RUNNING"
	ConnectorStatePaused     ConnectorState = "PAUSED"
	ConnectorStateStopped    ConnectorState = "STOPPED"
	ConnectorStateFailed     ConnectorState = "FAILED"
	ConnectorStateRestarting ConnectorState = "RESTARTING"
)

// TaskStatus is the runtime state of one task.
type TaskStatus struct {
	// id of the task within the connector, from 0.
	// +required
	ID int32 `json:"id"`

	// state of the task: UNASSIGNED, RUNNING, PAUSED, STOPPED, FAILED or
	// RESTARTING.
	// +required
	State ConnectorState `json:"state"`

	// workerId is the worker running the task (its host:port).
	// +optional
	WorkerID string `json:"workerId,omitempty"`

	// trace is the start of the error trace of a FAILED task (at most 2048
	// characters; the REST API has the whole one).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Trace string `json:"trace,omitempty"`
}

// TaskLimit says how many tasks a connector can use and why.
type TaskLimit struct {
	// value is the most tasks the connector can use, whatever tasksMax says.
	// +required
	Value int32 `json:"value"`

	// reason names what limits it, as the worker reports it: TopicPartitions,
	// Tables, Files, Ranges or SingleReader.
	// +required
	Reason string `json:"reason"`
}

// KafkaConnectorStatus is the observed state of a connector.
type KafkaConnectorStatus struct {
	// conditions: Ready (the connector and all its tasks run as spec.state
	// asks), TasksLimited (the connector runs fewer tasks than tasksMax),
	// and Reconciling / Stalled for kstatus (converging by itself / needs a
	// change by the user).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the spec generation the status describes; 0
	// until the operator's first pass (the API server defaults it), so
	// kstatus reads a new object as InProgress, never as Current.
	// +kubebuilder:default=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// state is the connector's runtime state: UNASSIGNED, RUNNING, PAUSED,
	// STOPPED, FAILED or RESTARTING.
	// +optional
	State ConnectorState `json:"state,omitempty"`

	// workerId is the worker running the connector instance itself.
	// +optional
	WorkerID string `json:"workerId,omitempty"`

	// tasks are the states of the connector's tasks.
	// +optional
	// +listType=map
	// +listMapKey=id
	Tasks []TaskStatus `json:"tasks,omitempty"`

	// tasksMax is the task count requested (spec.tasksMax).
	// +optional
	TasksMax int32 `json:"tasksMax,omitempty"`

	// effectiveTasks is the task count the connector runs: min(tasksMax,
	// taskLimit.value).
	// +optional
	EffectiveTasks int32 `json:"effectiveTasks,omitempty"`

	// taskLimit is the connector's natural task limit and its reason; absent
	// when unknown.
	// +optional
	TaskLimit *TaskLimit `json:"taskLimit,omitempty"`

	// backlogUnit is the unit of the backlog figure the workers serve for
	// the connector (rows for a table source, bytes for a CDC or file
	// source, records for a share-mode sink), which autoscaling reads
	// through a metrics-api trigger; absent when it has none (a classic
	// sink's lag is read by KEDA's kafka scaler).
	// +optional
	BacklogUnit string `json:"backlogUnit,omitempty"`

	// topics the connector reads (sinks) or has written to (sources).
	// +optional
	// +listType=set
	Topics []string `json:"topics,omitempty"`

	// lag is the total consumer lag (records) of a sink connector's group
	// connect-<name>.
	// +optional
	Lag *int64 `json:"lag,omitempty"`

	// restarts counts the consecutive automatic restarts since the connector
	// last ran healthy or was restarted by hand.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`

	// lastRestartTime is when the operator last restarted the connector or a
	// task.
	// +optional
	LastRestartTime *metav1.Time `json:"lastRestartTime,omitempty"`

	// lastRestartAnnotation is the value of the connect.conveyor.dev/restart
	// annotation that the operator last acted on; setting the annotation to a
	// new value restarts the connector and its tasks once.
	// +optional
	LastRestartAnnotation string `json:"lastRestartAnnotation,omitempty"`

	// lastRestartTasksAnnotation is the value of the
	// connect.conveyor.dev/restart-tasks annotation that the operator last
	// acted on; setting the annotation to a new value restarts the connector
	// and its FAILED tasks once.
	// +optional
	LastRestartTasksAnnotation string `json:"lastRestartTasksAnnotation,omitempty"`

	// secretsHash digests the values of the Secret keys that spec.config
	// references as ${secret:<name>:<key>} (a SHA-256, never the values);
	// when it changes, the operator restarts the connector and its tasks so
	// they read the rotated values. Empty when the config references none.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SecretsHash string `json:"secretsHash,omitempty"`

	// configHash digests the connector config the operator last wrote or
	// found in place (a SHA-256 of keys and placeholders, never resolved
	// values): a difference on the workers while it still matches the spec
	// is drift, not a spec change.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ConfigHash string `json:"configHash,omitempty"`

	// drift is the last config drift seen on the workers (keys only).
	// +optional
	Drift *ConfigDriftStatus `json:"drift,omitempty"`

	// offsets is the outcome of the last spec.offsets request handled.
	// +optional
	Offsets *OffsetsStatus `json:"offsets,omitempty"`
}

// KafkaConnector is a connector run by a ConnectCluster: a source that
// writes records from an outside system to Kafka or a sink that writes
// Kafka records to one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kctr,categories=conveyor
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.class`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Tasks Max",type=integer,JSONPath=`.spec.tasksMax`
// +kubebuilder:printcolumn:name="Tasks",type=integer,JSONPath=`.status.effectiveTasks`
// +kubebuilder:printcolumn:name="Limit",type=string,JSONPath=`.status.taskLimit.reason`,priority=1
// +kubebuilder:printcolumn:name="Lag",type=integer,JSONPath=`.status.lag`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaConnector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the connector.
	// +required
	Spec KafkaConnectorSpec `json:"spec"`

	// status is the state the operator observed.
	// +kubebuilder:default={}
	// +optional
	Status KafkaConnectorStatus `json:"status,omitempty"`
}

// KafkaConnectorList is a list of KafkaConnectors.
//
// +kubebuilder:object:root=true
type KafkaConnectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KafkaConnector `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KafkaConnector{}, &KafkaConnectorList{})
}

// ExactlyOnceRequest is a KafkaConnector's spec.exactlyOnce.
type ExactlyOnceRequest string

// Values of spec.exactlyOnce.
const (
	ExactlyOnceRequested ExactlyOnceRequest = "Requested"
	ExactlyOnceRequired  ExactlyOnceRequest = "Required"
)
