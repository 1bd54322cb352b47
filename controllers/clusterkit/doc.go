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

// Package clusterkit is a ConnectCluster as the operator's reconcilers share it:
// the field indexes that find a cluster's connectors and the clusters of a
// group (index.go), the names and labels of its children and their
// server-side apply (labels.go, apply.go), the operator's own connection to
// its Kafka (kafka.go), the Secrets its connectors reference and what its
// owner lets them reach (secrets.go, access.go), and the contract between
// the ConnectCluster reconciler and the autoscaler (autoscaler.go). The
// reconcilers themselves live in controllers/connectcluster,
// controllers/kafkaconnector and controllers/autoscaling.
package clusterkit
