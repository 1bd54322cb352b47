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

// Package connectcluster reconciles ConnectClusters into running workers.
//
// Layout, after CloudNativePG's pkg/specs and cert-manager's policy chains:
//
//   - Pure decisions, plain inputs, table tests: DesiredReplicas and
//     CapacityFloor (capacity.go), FindGroupConflict and
//     NormalizeBootstrapServers (groups.go), VerifyTopic (topics.go).
//   - Pure builders, no client and no clock, golden-tested in testdata/:
//     BuildWorkerConfig renders the runtime's workerconfig.Config (never a
//     copy of its keys) into the ConfigMap that conveyor-worker --config
//     reads; BuildWorkerDeployment, BuildService, BuildPodDisruptionBudget,
//     BuildNetworkPolicy, BuildServiceAccount, BuildRestTokenSecret,
//     BuildSecretsRole (the workers' Role and RoleBinding: "get" on exactly
//     the Secrets the cluster's connectors reference as ${secret:<name>:<key>},
//     none at all when they reference none; secrets.go);
//     BuildChildren puts them together.
//   - Kafka behind TopicAdmin/AdminFactory (kafka.go): kadm by default, kfake
//     in tests; EnsureTopics creates or verifies the internal topics.
//   - The reconciler (connectcluster_controller.go, _resources.go,
//     _status.go): fetch, observe (Deployment, connector totals through the
//     spec.clusterRef.name index, clusters of the same group through the
//     group index, Kafka), converge the children with server-side apply as
//     field manager "conveyor-operator", compute the status and write it
//     once, only when it changed, emit events only on state changes.
//
// Children carry controller owner references, so the garbage collector
// deletes them with the cluster; there is no finalizer, because nothing
// outside the API server needs cleaning up (the internal topics are kept on
// purpose: they hold connector configs and offsets).
//
// What the KafkaConnector and autoscaling reconcilers share with this one
// (the field indexes, the children's labels and their apply, the Kafka
// connection, the ${secret:...} references, the Autoscaler hook) lives in
// controllers/clusterkit; this package keeps the reconciler and its builders.
package connectcluster
