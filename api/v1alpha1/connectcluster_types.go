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
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConnectClusterSpec is the desired state of a group of Conveyor workers.
//
// The CEL rule below (and those on StorageSpec) keep a cluster from
// silently moving to another Kafka Connect group or to other internal
// topics: they hold every connector config and offset.
//
// +kubebuilder:validation:XValidation:rule="has(self.groupId) == has(oldSelf.groupId) && (!has(self.groupId) || self.groupId == oldSelf.groupId)",message="groupId cannot be added, removed or changed after creation: the cluster's connector configs and offsets live under the original group; create a new ConnectCluster to use another group",fieldPath=".groupId",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.exactlyOnce) || !has(self.config) || !('exactly.once.source.support' in self.config)",message="set exactly-once either with spec.exactlyOnce or with config[\"exactly.once.source.support\"], not both",fieldPath=".exactlyOnce"
type ConnectClusterSpec struct {
	// replicas is the number of worker pods when autoscaling is disabled. The
	// operator may run more: never fewer than ceil(total effective tasks /
	// maxTasksPerWorker), and the CapacityRaised condition says when it did.
	// Ignored while autoscaling.enabled is true (KEDA then owns the count).
	// Also served by the scale subresource (kubectl scale). Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// image is the container image of the worker pods. Empty means the
	// operator's own image, which carries the conveyor-worker binary; set it
	// only to pin or mirror a release.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// imagePullPolicy of the worker container: Always, IfNotPresent or Never.
	// Empty uses the Kubernetes default for the image's tag.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// kafka says how workers reach the Kafka cluster that holds the group, the
	// internal topics and (by default) the connectors' data.
	// +required
	Kafka KafkaConnection `json:"kafka"`

	// groupId is the Kafka Connect group the workers join. A group id is
	// unique per Kafka cluster: a second ConnectCluster claiming it on the
	// same brokers is refused with the GroupConflict condition. When absent
	// the operator uses "<namespace>.<name>" and records the value in
	// status.groupId. It cannot be added, removed or changed after creation,
	// so a cluster never silently moves to an empty group.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._-]+$`
	GroupID *string `json:"groupId,omitempty"`

	// storage names and sizes the compacted internal topics holding connector
	// configs, source offsets and statuses. The operator creates and verifies
	// them; workers refuse to start on a wrong one. Topic names cannot change
	// after creation.
	// +optional
	// +kubebuilder:default={}
	Storage StorageSpec `json:"storage,omitempty"`

	// config passes worker settings through to every worker, in Kafka
	// Connect's property names (for example "key.converter":
	// "org.apache.kafka.connect.json.JsonConverter" or
	// "offset.flush.interval.ms": "10000"). Keys the operator owns are
	// refused, because dedicated fields set them: group.id (groupId),
	// bootstrap.servers and the security keys (kafka), the storage topic keys
	// (storage), rest.* and listeners (restApi), metrics.port (metrics),
	// max.tasks.per.worker (maxTasksPerWorker),
	// scheduled.rebalance.max.delay.ms (rebalance.lostWorkerDelay),
	// connector.client.config.override.* (connectorClientOverrides), and
	// worker.id and internal.topics.create (the operator itself).
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="['group.id', 'bootstrap.servers', 'producer.bootstrap.servers', 'consumer.bootstrap.servers', 'admin.bootstrap.servers', 'config.storage.topic', 'offset.storage.topic', 'status.storage.topic', 'config.storage.replication.factor', 'offset.storage.replication.factor', 'status.storage.replication.factor', 'offset.storage.partitions', 'status.storage.partitions', 'rest.port', 'rest.host.name', 'rest.advertised.host.name', 'rest.advertised.port', 'rest.advertised.listener', 'listeners', 'scheduled.rebalance.max.delay.ms', 'security.protocol', 'sasl.mechanism', 'sasl.jaas.config', 'ssl.truststore.location', 'ssl.truststore.password', 'ssl.keystore.location', 'ssl.keystore.password', 'ssl.key.password', 'internal.topics.create', 'rest.auth.token.file', 'metrics.port', 'ssl.ca.location', 'ssl.certificate.location', 'ssl.key.location', 'sasl.username', 'sasl.password.file', 'worker.id', 'group.instance.id', 'worker.revision', 'max.tasks.per.worker', 'metrics.auth.token.file', 'config.providers.file.allowed.paths', 'config.providers.env.allowed.variables', 'file.connectors.allowed.paths', 'cloud.ambient.credentials.enabled', 'connector.client.config.override.policy', 'connector.client.config.override.allowlist'].all(k, !(k in self))",messageExpression="'config may not set ' + ['group.id', 'bootstrap.servers', 'producer.bootstrap.servers', 'consumer.bootstrap.servers', 'admin.bootstrap.servers', 'config.storage.topic', 'offset.storage.topic', 'status.storage.topic', 'config.storage.replication.factor', 'offset.storage.replication.factor', 'status.storage.replication.factor', 'offset.storage.partitions', 'status.storage.partitions', 'rest.port', 'rest.host.name', 'rest.advertised.host.name', 'rest.advertised.port', 'rest.advertised.listener', 'listeners', 'scheduled.rebalance.max.delay.ms', 'security.protocol', 'sasl.mechanism', 'sasl.jaas.config', 'ssl.truststore.location', 'ssl.truststore.password', 'ssl.keystore.location', 'ssl.keystore.password', 'ssl.key.password', 'internal.topics.create', 'rest.auth.token.file', 'metrics.port', 'ssl.ca.location', 'ssl.certificate.location', 'ssl.key.location', 'sasl.username', 'sasl.password.file', 'worker.id', 'group.instance.id', 'worker.revision', 'max.tasks.per.worker', 'metrics.auth.token.file', 'config.providers.file.allowed.paths', 'config.providers.env.allowed.variables', 'file.connectors.allowed.paths', 'cloud.ambient.credentials.enabled', 'connector.client.config.override.policy', 'connector.client.config.override.allowlist'].filter(k, k in self)[0] + ': the operator sets it from spec.groupId, spec.kafka, spec.storage, spec.restApi, spec.metrics, spec.maxTasksPerWorker, spec.connectorAccess, spec.connectorClientOverrides or spec.rebalance; remove the key and use those fields'",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 255 && size(self[k]) <= 32768)",message="config keys must be 1 to 255 characters and values at most 32 KiB: use the worker's property names and keep large content in files"
	Config map[string]string `json:"config,omitempty"`

	// exactlyOnce turns on exactly-once sources (KIP-618): workers run with
	// exactly.once.source.support=enabled (records and source offsets in one
	// transaction, earlier tasks fenced before new task configs start), and
	// sink consumers read read_committed unless spec.config sets
	// consumer.isolation.level. The Kafka principal needs WRITE and DESCRIBE
	// on transactional ids "<groupId>-*" (see the ExactlyOnce condition).
	// Or set exactly.once.source.support in spec.config, not both.
	// +optional
	ExactlyOnce *bool `json:"exactlyOnce,omitempty"`

	// maxTasksPerWorker is how many tasks one worker should run at most.
	// Without autoscaling the operator runs at least ceil(total effective
	// tasks / maxTasksPerWorker) workers; with autoscaling that floor raises
	// minReplicas. Default 8.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxTasksPerWorker *int32 `json:"maxTasksPerWorker,omitempty"`

	// rebalance tunes how the workers share connectors and tasks.
	// +optional
	// +kubebuilder:default={}
	Rebalance RebalanceSpec `json:"rebalance,omitempty"`

	// autoscaling lets KEDA scale the workers on the consumer lag of the
	// cluster's sink connectors. Needs KEDA installed; without it the
	// Autoscaling condition says so and the cluster runs spec.replicas.
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// resources are the CPU and memory requests and limits of the worker
	// container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// pod overrides the scheduling and metadata of the worker pods.
	// +optional
	Pod *PodOverrides `json:"pod,omitempty"`

	// restApi configures the Kafka Connect REST API that workers serve on port
	// 8083. Authentication with a bearer token is on by default.
	// +optional
	// +kubebuilder:default={}
	RestAPI RestAPISpec `json:"restApi,omitempty"`

	// networkPolicy makes the operator keep a NetworkPolicy that admits to the
	// workers only the operator, the other workers and the metrics scrapers.
	// +optional
	// +kubebuilder:default={}
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// metrics configures the Prometheus metrics that workers serve.
	// +optional
	// +kubebuilder:default={}
	Metrics MetricsSpec `json:"metrics,omitempty"`

	// connectorAccess lists what the cluster's connectors may read through
	// config placeholders: the Secrets (${secret:...}), files (${file:...})
	// and environment variables (${env:...}). Nothing is allowed by default.
	// +optional
	ConnectorAccess *ConnectorAccess `json:"connectorAccess,omitempty"`

	// connectorClientOverrides says which Kafka client settings the
	// cluster's connectors may override with producer.override.*,
	// consumer.override.* and admin.override.* keys (the workers'
	// connector.client.config.override.policy). Absent: All, Kafka 4.x's
	// default. A refused override fails the connector's validation, naming
	// the key and the policy.
	// +optional
	ConnectorClientOverrides *ClientOverridePolicy `json:"connectorClientOverrides,omitempty"`

	// driftPolicy is the default spec.driftPolicy of the cluster's
	// KafkaConnectors (enforce or report; absent: enforce).
	// +optional
	DriftPolicy DriftPolicy `json:"driftPolicy,omitempty"`
}

// KafkaConnection says how to reach a Kafka cluster.
type KafkaConnection struct {
	// bootstrapServers is a comma-separated list of host:port pairs of Kafka
	// brokers, for example "kafka-0.kafka:9092,kafka-1.kafka:9092".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^, ]+:[0-9]{1,5}(,[^, ]+:[0-9]{1,5})*$')",message="kafka.bootstrapServers must be a comma-separated list of host:port pairs without spaces, such as \"kafka-0.kafka:9092,kafka-1.kafka:9092\""
	BootstrapServers string `json:"bootstrapServers"`

	// tls enables TLS to the brokers. Absent means plaintext.
	// +optional
	TLS *KafkaTLS `json:"tls,omitempty"`

	// sasl enables SASL authentication to the brokers. Absent means none.
	// +optional
	SASL *KafkaSASL `json:"sasl,omitempty"`
}

// KafkaTLS configures TLS to the brokers; the certificates come from
// Secrets in the cluster's namespace.
//
// +kubebuilder:validation:XValidation:rule="has(self.certificate) == has(self.key)",message="kafka.tls.certificate and kafka.tls.key go together: set both for client-certificate authentication, or neither"
type KafkaTLS struct {
	// ca references the PEM CA bundle that verifies the brokers' certificates.
	// Absent means the system roots.
	// +optional
	CA *SecretKeyRef `json:"ca,omitempty"`

	// certificate references the PEM client certificate for mutual TLS; set
	// key with it.
	// +optional
	Certificate *SecretKeyRef `json:"certificate,omitempty"`

	// key references the PEM private key of certificate.
	// +optional
	Key *SecretKeyRef `json:"key,omitempty"`

	// insecureSkipVerify disables verification of the brokers' certificates.
	// Only for tests. Default false.
	// +optional
	// +kubebuilder:default=false
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// SASLMechanism is a SASL mechanism for Kafka.
// +kubebuilder:validation:Enum=PLAIN;SCRAM-SHA-256;SCRAM-SHA-512
type SASLMechanism string

// SASL mechanisms supported by the workers.
const (
	SASLMechanismPlain       SASLMechanism = "PLAIN"
	SASLMechanismScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	SASLMechanismScramSHA512 SASLMechanism = "SCRAM-SHA-512"
)

// KafkaSASL configures SASL authentication; the credentials come from
// Secrets in the cluster's namespace.
type KafkaSASL struct {
	// mechanism is the SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	// Use PLAIN only over TLS.
	// +required
	Mechanism SASLMechanism `json:"mechanism"`

	// username references the Secret key holding the SASL user name.
	// +required
	Username SecretKeyRef `json:"username"`

	// password references the Secret key holding the SASL password.
	// +required
	Password SecretKeyRef `json:"password"`
}

// SecretKeyRef selects one key of a Secret in the same namespace.
// +structType=atomic
type SecretKeyRef struct {
	// name of the Secret, in the namespace of the referencing object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="a Secret name must be lower case letters, digits, '-' and '.' (a DNS subdomain), such as kafka-credentials"
	Name string `json:"name"`

	// key within the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// SecretRef names a Secret in the same namespace.
// +structType=atomic
type SecretRef struct {
	// name of the Secret, in the namespace of the referencing object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// StorageSpec names and sizes the internal topics.
//
// +kubebuilder:validation:XValidation:rule="has(self.configTopic) == has(oldSelf.configTopic) && (!has(self.configTopic) || self.configTopic == oldSelf.configTopic)",message="storage.configTopic cannot be added, removed or changed after creation: it holds the cluster's connector configs; create a new ConnectCluster to use another topic",fieldPath=".configTopic",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(self.offsetTopic) == has(oldSelf.offsetTopic) && (!has(self.offsetTopic) || self.offsetTopic == oldSelf.offsetTopic)",message="storage.offsetTopic cannot be added, removed or changed after creation: it holds the source connectors' offsets; create a new ConnectCluster to use another topic",fieldPath=".offsetTopic",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(self.statusTopic) == has(oldSelf.statusTopic) && (!has(self.statusTopic) || self.statusTopic == oldSelf.statusTopic)",message="storage.statusTopic cannot be added, removed or changed after creation: it holds the connector and task statuses; create a new ConnectCluster to use another topic",fieldPath=".statusTopic",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.configTopic) || !has(self.offsetTopic) || self.configTopic != self.offsetTopic",message="storage.configTopic and storage.offsetTopic must be different topics",fieldPath=".offsetTopic"
// +kubebuilder:validation:XValidation:rule="!has(self.configTopic) || !has(self.statusTopic) || self.configTopic != self.statusTopic",message="storage.configTopic and storage.statusTopic must be different topics",fieldPath=".statusTopic"
// +kubebuilder:validation:XValidation:rule="!has(self.offsetTopic) || !has(self.statusTopic) || self.offsetTopic != self.statusTopic",message="storage.offsetTopic and storage.statusTopic must be different topics",fieldPath=".statusTopic"
type StorageSpec struct {
	// configTopic is the compacted topic holding connector and task
	// configurations and target states. It always has one partition. Default
	// "<groupId>-configs". Cannot change after creation.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=249
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._-]+$`
	ConfigTopic *string `json:"configTopic,omitempty"`

	// offsetTopic is the compacted topic holding source connector offsets.
	// Default "<groupId>-offsets". Cannot change after creation.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=249
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._-]+$`
	OffsetTopic *string `json:"offsetTopic,omitempty"`

	// statusTopic is the compacted topic holding connector and task statuses.
	// Default "<groupId>-status". Cannot change after creation.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=249
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._-]+$`
	StatusTopic *string `json:"statusTopic,omitempty"`

	// replicationFactor of the three internal topics when the operator creates
	// them; -1 uses the brokers' default.replication.factor. Use 3 or more in
	// production. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=32
	// +kubebuilder:validation:XValidation:rule="self != 0",message="storage.replicationFactor must be -1 (the brokers' default) or at least 1"
	ReplicationFactor *int32 `json:"replicationFactor,omitempty"`

	// offsetPartitions is the partition count of offsetTopic. Default 25.
	// +optional
	// +kubebuilder:default=25
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	OffsetPartitions *int32 `json:"offsetPartitions,omitempty"`

	// statusPartitions is the partition count of statusTopic. Default 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	StatusPartitions *int32 `json:"statusPartitions,omitempty"`
}

// RebalanceSpec tunes how workers share connectors and tasks.
type RebalanceSpec struct {
	// lostWorkerDelay is how long the tasks of a worker that vanished without
	// leaving the group (a crash, a lost node) wait for it to come back before
	// they move to other workers, as a duration such as "30s" or "2m". Planned
	// departures (scale-down, rolling updates) move tasks at once and never
	// wait. Kafka Connect's default is five minutes; Conveyor's is 30s. At
	// most 1h.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="rebalance.lostWorkerDelay must be a duration between 0s and 1h, such as \"30s\""
	LostWorkerDelay *metav1.Duration `json:"lostWorkerDelay,omitempty"`
}

// AutoscalingSpec configures the KEDA ScaledObject the operator derives
// for the cluster.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="autoscaling.minReplicas must be less than or equal to autoscaling.maxReplicas",fieldPath=".minReplicas"
type AutoscalingSpec struct {
	// enabled turns autoscaling on. The operator then owns one KEDA
	// ScaledObject targeting the worker Deployment, with one kafka trigger per
	// running sink connector on its consumer group, and leaves the replica
	// count to the HPA. Default false.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled,omitempty"`

	// minReplicas is the fewest workers the autoscaler keeps. The operator
	// raises it to ceil(total effective tasks / maxTasksPerWorker) when that
	// is larger. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most workers the autoscaler runs. Workers beyond the
	// total number of effective tasks would idle, so the operator lowers the
	// bound to that number, and raises it (with the CapacityRaised condition)
	// when minReplicas had to be raised above it. Default 10.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// hardMaxReplicas makes maxReplicas a ceiling the task floor never
	// raises: with it, tasks beyond maxReplicas x maxTasksPerWorker wait
	// unassigned and the CapacityRaised condition (reason
	// TasksWaitForMaxReplicas) says how many. Without it (the default)
	// capacity wins over maxReplicas, up to the cap of 1000 workers that
	// holds for every floor.
	// +optional
	HardMaxReplicas bool `json:"hardMaxReplicas,omitempty"`

	// lagThreshold is the target consumer lag (records) per worker: the
	// autoscaler adds workers while a sink connector's lag exceeds
	// lagThreshold times the current workers. Default 1000.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	LagThreshold *int64 `json:"lagThreshold,omitempty"`

	// activationLagThreshold is the lag (records) above which the scaler
	// counts as active at all; 0 activates on any lag. Default 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	ActivationLagThreshold *int64 `json:"activationLagThreshold,omitempty"`

	// pollingInterval is how often KEDA reads the lag, as a duration such as
	// "30s" (whole seconds, at least 1s). Default "30s".
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="autoscaling.pollingInterval must be a duration between 1s and 1h, such as \"30s\""
	PollingInterval *metav1.Duration `json:"pollingInterval,omitempty"`

	// cooldownPeriod is how long the lag must stay low before the workers
	// scale down, as a duration such as "5m" (whole seconds). It becomes the
	// HPA's scale-down stabilization window (at most 1h: the HPA then scales
	// to the largest count it recommended within that window) and KEDA's
	// cooldownPeriod. Default "5m".
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="autoscaling.cooldownPeriod must be a duration between 0s and 24h, such as \"5m\""
	CooldownPeriod *metav1.Duration `json:"cooldownPeriod,omitempty"`
}

// PodOverrides adjusts the worker pods the operator builds.
type PodOverrides struct {
	// labels added to the worker pods. Keys under connect.conveyor.dev/ and
	// the app.kubernetes.io/ keys the operator selects pods by are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component', 'app.kubernetes.io/managed-by'].all(k, !(k in self))",message="pod.labels may not set app.kubernetes.io/name, instance, component or managed-by: the operator selects worker pods by them"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('connect.conveyor.dev/'))",message="pod.labels may not set connect.conveyor.dev/ keys: the operator owns them"
	Labels map[string]string `json:"labels,omitempty"`

	// annotations added to the worker pods.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`

	// nodeSelector limits the worker pods to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// affinity of the worker pods (node, pod and anti-pod affinity).
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// tolerations of the worker pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// topologySpreadConstraints of the worker pods. Empty lets the operator
	// spread workers across zones and nodes on a best-effort basis
	// (whenUnsatisfiable: ScheduleAnyway).
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// priorityClassName of the worker pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// imagePullSecrets used to pull the worker image.
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// rack makes each worker tell Kafka the zone of its node (client.rack), so
	// sink tasks fetch from the nearest replica (brokers need
	// replica.selector.class set for that).
	// +optional
	Rack *RackSpec `json:"rack,omitempty"`
}

// RackSpec takes the rack of a worker from a label of its node.
type RackSpec struct {
	// topologyKey is the node label whose value becomes the worker's
	// client.rack. Default "topology.kubernetes.io/zone".
	// +optional
	// +kubebuilder:default="topology.kubernetes.io/zone"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="pod.rack.topologyKey must be a node label key, such as topology.kubernetes.io/zone: an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.'"
	TopologyKey string `json:"topologyKey,omitempty"`
}

// RestAPISpec configures the Kafka Connect REST API of the workers.
type RestAPISpec struct {
	// authentication protects the REST API. It is on by default.
	// +optional
	// +kubebuilder:default={}
	Authentication RestAuthentication `json:"authentication,omitempty"`
}

// RestAuthentication protects the REST API of the workers with a bearer
// token.
type RestAuthentication struct {
	// enabled requires "Authorization: Bearer <token>" on every REST call
	// except the health endpoints; calls without it get 401. Default true;
	// turn it off only where the NetworkPolicy alone is enough.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// tokenSecret references the Secret key holding the token that the workers
	// accept and the operator sends. Absent means the operator generates a
	// random token once, in a Secret named "<cluster>-rest-token" with key
	// "token", and never rotates it by accident.
	// +optional
	TokenSecret *SecretKeyRef `json:"tokenSecret,omitempty"`
}

// NetworkPolicySpec configures the NetworkPolicy of the workers.
type NetworkPolicySpec struct {
	// enabled makes the operator keep a NetworkPolicy admitting to the worker
	// pods only the operator (REST), the other workers of the cluster (REST
	// forwarding to the leader) and the namespaces of metricsNamespaceSelector
	// (metrics). Default true.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// metricsNamespaceSelector selects the namespaces whose pods may scrape
	// the workers' metrics, such as the one running Prometheus. Absent admits
	// metrics scrapes from no other namespace.
	// +optional
	MetricsNamespaceSelector *metav1.LabelSelector `json:"metricsNamespaceSelector,omitempty"`

	// egress, when set, limits where the workers (and so every connector)
	// may connect: the NetworkPolicy then also lists Egress and allows
	// these destinations, plus what the workers need themselves: the Kafka
	// bootstrap servers' ports, DNS (port 53) and the other workers (8083).
	// A cluster whose connectors use ${secret:...} lists the Kubernetes API
	// server's endpoints here. Absent: egress is not restricted. An empty
	// list allows only those.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Egress []networkingv1.NetworkPolicyEgressRule `json:"egress,omitempty"`
}

// ConnectCluster is a group of Conveyor workers: a Kafka
// Connect-compatible distributed worker cluster that runs KafkaConnectors.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=cc,categories=conveyor
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name of a ConnectCluster must be a DNS-1035 label (lower case letters, digits and '-', starting with a letter, such as \"orders\"): its Services are named after it"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Connectors",type=integer,JSONPath=`.status.connectors`
// +kubebuilder:printcolumn:name="Tasks",type=integer,JSONPath=`.status.tasks`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.status.groupId`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConnectCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the cluster.
	// +required
	Spec ConnectClusterSpec `json:"spec"`

	// status is the state the operator observed.
	// +kubebuilder:default={}
	// +optional
	Status ConnectClusterStatus `json:"status,omitempty"`
}

// ConnectClusterList is a list of ConnectClusters.
//
// +kubebuilder:object:root=true
type ConnectClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConnectCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ConnectCluster{}, &ConnectClusterList{})
}
