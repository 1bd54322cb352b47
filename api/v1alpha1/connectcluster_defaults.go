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

import "time"

// Defaults of ConnectCluster fields. They match the +kubebuilder:default markers on the types,
// which the API server applies; the reconciler uses these constants when it reads an object
// that was stored before a default existed.
const (
	DefaultReplicas               int32 = 1
	DefaultMaxTasksPerWorker      int32 = 8
	DefaultLostWorkerDelay              = 30 * time.Second
	DefaultStorageReplication     int32 = 3
	DefaultOffsetPartitions       int32 = 25
	DefaultStatusPartitions       int32 = 5
	DefaultMinReplicas            int32 = 1
	DefaultMaxReplicas            int32 = 10
	DefaultLagThreshold           int64 = 1000
	DefaultActivationLagThreshold int64 = 0
	DefaultPollingInterval              = 30 * time.Second
	DefaultCooldownPeriod               = 5 * time.Minute
	DefaultRackTopologyKey              = "topology.kubernetes.io/zone"

	// ConfigTopicPartitions is the partition count of the config topic: Kafka Connect needs
	// a single, totally ordered log of configs.
	ConfigTopicPartitions int32 = 1

	// RestPort is the port of the workers' Kafka Connect REST API (and /metrics).
	RestPort int32 = 8083

	// ConfigTopicSuffix, OffsetTopicSuffix and StatusTopicSuffix follow the group id in the
	// default names of the internal topics.
	ConfigTopicSuffix = "-configs"
	OffsetTopicSuffix = "-offsets"
	StatusTopicSuffix = "-status"

	// DefaultMetricsPort serves /metrics on the workers.
	DefaultMetricsPort int32 = 9404

	// RestTokenSecretSuffix follows the cluster name in the name of the REST token Secret
	// the operator generates; RestTokenSecretKey is the key holding the token in it.
	RestTokenSecretSuffix = "-rest-token"
	RestTokenSecretKey    = "token"
)

// OperatorOwnedWorkerConfigKeys are the worker settings that spec.config may not set, because
// the operator derives them from dedicated fields. The CEL rule on ConnectClusterSpec.Config
// lists the same keys; the envtest suite checks that the two agree.
var OperatorOwnedWorkerConfigKeys = []string{
	"group.id",
	"bootstrap.servers",
	"producer.bootstrap.servers",
	"consumer.bootstrap.servers",
	"admin.bootstrap.servers",
	"config.storage.topic",
	"offset.storage.topic",
	"status.storage.topic",
	"config.storage.replication.factor",
	"offset.storage.replication.factor",
	"status.storage.replication.factor",
	"offset.storage.partitions",
	"status.storage.partitions",
	"rest.port",
	"rest.host.name",
	"rest.advertised.host.name",
	"rest.advertised.port",
	"rest.advertised.listener",
	"listeners",
	"scheduled.rebalance.max.delay.ms",
	"security.protocol",
	"sasl.mechanism",
	"sasl.jaas.config",
	"ssl.truststore.location",
	"ssl.truststore.password",
	"ssl.keystore.location",
	"ssl.keystore.password",
	"ssl.key.password",
	// Conveyor worker settings (runtime/workerconfig) that the operator renders.
	"internal.topics.create",
	"rest.auth.token.file",
	"metrics.port",
	"ssl.ca.location",
	"ssl.certificate.location",
	"ssl.key.location",
	"sasl.username",
	"sasl.password.file",
	"worker.id",
	"group.instance.id", // the pod name, through GROUP_INSTANCE_ID
	"worker.revision",   // the pod's pod-template-hash, through POD_TEMPLATE_HASH
	"max.tasks.per.worker",
	"metrics.auth.token.file",
	"config.providers.file.allowed.paths",
	"config.providers.env.allowed.variables",
	"file.connectors.allowed.paths",
	"cloud.ambient.credentials.enabled",
	"connector.client.config.override.policy",
	"connector.client.config.override.allowlist",
}

// DefaultGroupID is the group id of a ConnectCluster that sets no spec.groupId: "<namespace>.<name>".
func DefaultGroupID(namespace, name string) string {
	return namespace + "." + name
}
