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

// Package kafkaconnector reconciles KafkaConnector resources into connectors
// on a ConnectCluster's workers.
//
// Decisions are plain functions of plain inputs, table-tested without a
// cluster or a worker: the effective task count and its pre-run estimate
// (tasks.go), the normalized config diff (config.go), target-state
// transitions (state.go), the autoRestart schedule (autorestart.go), restart
// requests by annotation (restart.go) and the digest of referenced Secret
// values (secrets.go; the references themselves are parsed by
// clusterkit.SecretRefs, which the ConnectCluster reconciler uses to keep
// the workers' Role).
//
// The reconciler has the shape of the ConnectCluster one. One pass
// (kafkaconnector_resources.go, kafkaconnector_secrets.go) runs steps that
// observe the cluster and the runtime, then act (create, write the config,
// restart on a Secret rotation, move the state, restart on request or
// failure), then observe the outcome, recording everything in a
// connectorLoop and stopping at the first problem (a condition.Problem). A
// pure computeStatus builds the status from the old one and the loop
// (kafkaconnector_status.go, table-tested); the status is written once, only
// on a diff, and events follow what the pass did and the conditions that
// changed. problemPolicies says, per reason, how soon a stopped pass retries
// and whether it warns. Deletion is kafkaconnector_delete.go. The reconciler
// waits until the workers' Role lists a connector's Secrets
// before it creates the connector or writes its config, and restarts a
// connector and its tasks when status.secretsHash changes (a Secret watch on
// metadata only brings the connectors that reference a changed Secret).
package kafkaconnector
