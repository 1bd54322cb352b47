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

// Condition types of a ConnectCluster. Every condition carries the generation it was computed
// for in observedGeneration.
const (
	// ConnectClusterReady is True when the workers are up, ready and have formed the group.
	ConnectClusterReady = "Ready"
	// ConnectClusterReconciled is True when every child object (Deployment, Service,
	// ConfigMap, NetworkPolicy, ScaledObject, internal topics) matches the spec.
	ConnectClusterReconciled = "Reconciled"
	// ConnectClusterAutoscaling says whether the derived KEDA ScaledObject is in place and
	// active; False with a reason when autoscaling is off or impossible.
	ConnectClusterAutoscaling = "Autoscaling"
	// ConnectClusterGroupConflict is True when another ConnectCluster already claims this
	// group id on the same Kafka cluster; the message names it. This cluster then does not start.
	ConnectClusterGroupConflict = "GroupConflict"
	// ConnectClusterCapacityRaised is True when the task floor
	// ceil(total effective tasks / maxTasksPerWorker) raised the replica count above
	// spec.replicas, or the autoscaler's bounds above autoscaling.minReplicas or maxReplicas.
	ConnectClusterCapacityRaised = "CapacityRaised"
	// ConnectClusterTopicsReady is True when the three internal topics exist with the
	// expected partitions, replication and cleanup.policy=compact.
	ConnectClusterTopicsReady = "TopicsReady"
	// ConnectClusterMonitoring is set while metrics.podMonitor.enabled is true: True when
	// the derived PodMonitor is in place, False with a reason when it cannot be.
	ConnectClusterMonitoring = "Monitoring"
	// ConnectClusterExactlyOnce is True when exactly-once sources are on and the Kafka
	// principal may use the workers' transactional ids; False with the reason when it may
	// not, or when exactly-once is off.
	ConnectClusterExactlyOnce = "ExactlyOnce"
)

// Reasons of the Monitoring condition.
const (
	// ReasonPodMonitorReady: the PodMonitor is applied.
	ReasonPodMonitorReady = "PodMonitorReady"
	// ReasonPodMonitorCRDNotInstalled: the prometheus-operator PodMonitor CRD
	// (monitoring.coreos.com/v1) is not served; the operator applies the
	// PodMonitor once it is, without a restart.
	ReasonPodMonitorCRDNotInstalled = "PodMonitorCRDNotInstalled"
	// ReasonMetricsDisabled: metrics.enabled is false, so there is nothing to scrape.
	ReasonMetricsDisabled = "MetricsDisabled"
	// ReasonPodMonitorFailed: applying or removing the PodMonitor failed.
	ReasonPodMonitorFailed = "PodMonitorFailed"
)

// Reasons of ConnectCluster conditions (CamelCase, as metav1.Condition requires).
const (
	// ReasonWorkersReady: every desired worker is ready and the group has formed.
	ReasonWorkersReady = "WorkersReady"
	// ReasonWorkersNotReady: fewer workers are ready than desired.
	ReasonWorkersNotReady = "WorkersNotReady"
	// ReasonReconciling: the operator is still converging children.
	ReasonReconciling = "Reconciling"
	// ReasonReconcileSucceeded: children match the spec.
	ReasonReconcileSucceeded = "ReconcileSucceeded"
	// ReasonReconcileFailed: converging a child failed; the message says which and why.
	ReasonReconcileFailed = "ReconcileFailed"
	// ReasonInvalidSpec: the spec passed the API server's checks but cannot be run (for
	// example a Secret key that does not exist).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSecretNotFound: a Secret referenced by kafka.tls, kafka.sasl or restApi is missing.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonKafkaUnreachable: the operator cannot reach the bootstrap servers.
	ReasonKafkaUnreachable = "KafkaUnreachable"
	// ReasonTopicInvalid: an internal topic exists with the wrong partitions, replication or
	// cleanup policy; the message names the topic and the difference.
	ReasonTopicInvalid = "TopicInvalid"
	// ReasonTopicCreateFailed: creating an internal topic failed.
	ReasonTopicCreateFailed = "TopicCreateFailed"
	// ReasonExactlyOnceDisabled: exactly-once sources are off.
	ReasonExactlyOnceDisabled = "ExactlyOnceDisabled"
	// ReasonTransactionsAllowed: a transactional producer of the cluster's group could
	// initialize (the principal may use the transactional ids).
	ReasonTransactionsAllowed = "TransactionsAllowed"
	// ReasonTransactionsDenied: Kafka refused the principal a transactional id of the
	// cluster's group; the message names the ACL to add.
	ReasonTransactionsDenied = "TransactionsDenied"
	// ReasonTransactionsUnchecked: the check could not reach Kafka; it is tried again.
	ReasonTransactionsUnchecked = "TransactionsUnchecked"
	// ReasonTopicsReady: the internal topics exist and are as expected.
	ReasonTopicsReady = "TopicsReady"
	// ReasonGroupInUse: another ConnectCluster on the same brokers claims the group id.
	ReasonGroupInUse = "GroupInUse"
	// ReasonGroupUnique: no other ConnectCluster claims the group id.
	ReasonGroupUnique = "GroupUnique"
	// ReasonAutoscalingDisabled: autoscaling.enabled is false.
	ReasonAutoscalingDisabled = "AutoscalingDisabled"
	// ReasonKEDANotInstalled: autoscaling is enabled but the KEDA ScaledObject CRD is not
	// installed; the cluster runs spec.replicas.
	ReasonKEDANotInstalled = "KEDANotInstalled"
	// ReasonScaledObjectReady: the ScaledObject exists and KEDA reports it ready.
	ReasonScaledObjectReady = "ScaledObjectReady"
	// ReasonScaledObjectNotReady: the ScaledObject exists but KEDA does not report it ready.
	ReasonScaledObjectNotReady = "ScaledObjectNotReady"
	// ReasonKEDAWithoutScalingModifiers: KEDA scales the workers, but its ScaledObject CRD
	// has no spec.advanced.scalingModifiers (KEDA older than 2.12), so the HPA follows the
	// largest trigger instead of the summed lag and under-scales when lag is spread out.
	ReasonKEDAWithoutScalingModifiers = "KEDAWithoutScalingModifiers"
	// ReasonTriggersUnreadable: KEDA scales the workers, but cannot read some triggers
	// (a topic deleted, an ACL denying KEDA's principal the topic or the connector's
	// group); the message names each with its connector and topic. A trigger that keeps
	// failing counts as no lag, so the other sinks still scale the cluster.
	ReasonTriggersUnreadable = "TriggersUnreadable"
	// ReasonNoSinkConnectors: autoscaling is enabled but no running sink connector gives it
	// a trigger; the cluster stays at its minimum.
	ReasonNoSinkConnectors = "NoSinkConnectors"
	// ReasonTaskFloor: the task floor raised the replica count above spec.replicas.
	ReasonTaskFloor = "TaskFloor"
	// ReasonTaskFloorAboveMaxReplicas: the task floor raised the autoscaler's minimum (and so
	// its maximum) above autoscaling.maxReplicas.
	ReasonTaskFloorAboveMaxReplicas = "TaskFloorAboveMaxReplicas"
	// ReasonTasksWaitForMaxReplicas: autoscaling.hardMaxReplicas holds the
	// autoscaler at autoscaling.maxReplicas although the tasks need more
	// workers; the message says how many tasks wait unassigned.
	ReasonTasksWaitForMaxReplicas = "TasksWaitForMaxReplicas"
	// ReasonWithinRequested: the requested replica bounds cover the tasks.
	ReasonWithinRequested = "WithinRequested"
)
