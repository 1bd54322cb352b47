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

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ConnectClusterStatus is the observed state of a ConnectCluster.
type ConnectClusterStatus struct {
	// conditions: Ready (workers up and the group formed), Reconciled
	// (children match the spec), Autoscaling, GroupConflict, CapacityRaised,
	// and Reconciling / Stalled for kstatus (converging by itself / needs
	// a change by the user).
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

	// groupId is the Kafka Connect group the workers use: spec.groupId or the
	// default the operator chose at creation.
	// +optional
	GroupID string `json:"groupId,omitempty"`

	// kafkaClusterId is the cluster id Kafka reported in its Metadata answer.
	// Group conflicts (worker groups and sink consumer groups) compare it,
	// not the bootstrap address strings, so two spellings of one Kafka
	// cluster (a host name and an IP, another broker) are the same Kafka.
	// +optional
	KafkaClusterID string `json:"kafkaClusterId,omitempty"`

	// replicas is the number of worker pods that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of worker pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// desiredReplicas is the worker count the operator asks for: spec.replicas
	// raised to the task floor, or the autoscaler's bounds while autoscaling.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`

	// selector is the label selector of the worker pods, in string form, for
	// the scale subresource and the HPA.
	// +optional
	Selector string `json:"selector,omitempty"`

	// restUrl is the in-cluster URL of the workers' Kafka Connect REST API.
	// +optional
	RestURL string `json:"restUrl,omitempty"`

	// connectors is the number of KafkaConnectors assigned to this cluster.
	// +optional
	Connectors int32 `json:"connectors,omitempty"`

	// tasks is the total of the connectors' effective task counts.
	// +optional
	Tasks int32 `json:"tasks,omitempty"`

	// unmanagedConnectors are connectors on the workers that no
	// KafkaConnector of this cluster manages (created through the REST API,
	// or left by a deleted KafkaConnector whose finalizer was removed by
	// hand), sorted, at most 100. The operator never deletes them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	UnmanagedConnectors []string `json:"unmanagedConnectors,omitempty"`
}
