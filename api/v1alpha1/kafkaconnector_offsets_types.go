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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OffsetsRequest asks the operator to set or reset a connector's offsets
// once (Kafka Connect's KIP-875): it stops the connector, applies the
// request, and brings the connector back to spec.state.
//
// +kubebuilder:validation:XValidation:rule="has(self.reset) && self.reset ? !has(self.offsets) || size(self.offsets) == 0 : has(self.offsets) && size(self.offsets) > 0",message="spec.offsets needs exactly one of reset: true (start from the beginning) or a non-empty offsets list (the positions to resume from)"
type OffsetsRequest struct {
	// requestId names the request. The operator applies each requestId
	// once and records it in status.offsets.requestId, so applying the same
	// document again changes nothing; change requestId to apply offsets
	// again.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`
	RequestID string `json:"requestId"`

	// reset: true deletes every offset of the connector (DELETE
	// /connectors/{c}/offsets): a source starts from the beginning, a sink
	// from its consumer's auto.offset.reset.
	// +optional
	Reset bool `json:"reset,omitempty"`

	// offsets are the positions to resume from (PATCH
	// /connectors/{c}/offsets), in Kafka Connect's shape: GET
	// /connectors/{c}/offsets gives a document to start from.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Offsets []PartitionOffset `json:"offsets,omitempty"`
}

// PartitionOffset is one partition and the offset to resume it from. The
// keys are the connector's own, so admission checks only the shape; the
// operator checks a sink's kafka_partition and kafka_offset before it
// sends them, and reports a refusal in status.offsets naming the entry
// (CEL cannot see into values of arbitrary JSON).
type PartitionOffset struct {
	// partition identifies the partition as the connector names it: a
	// sink's {"kafka_topic": "orders", "kafka_partition": 0}, a FileSource's
	// {"file": "/data/in.txt"}.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=16
	Partition map[string]apiextensionsv1.JSON `json:"partition"`

	// offset is where to resume: a sink's {"kafka_offset": 42}, a
	// FileSource's {"position": 1024} (a byte offset). Absent resets this
	// partition alone.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Offset map[string]apiextensionsv1.JSON `json:"offset,omitempty"`
}

// OffsetsResult is the outcome of an offsets request.
// +kubebuilder:validation:Enum=Applied;Failed
type OffsetsResult string

// Offsets results.
const (
	OffsetsApplied OffsetsResult = "Applied"
	OffsetsFailed  OffsetsResult = "Failed"
)

// OffsetsStatus records the last offsets request the operator finished.
type OffsetsStatus struct {
	// requestId is the spec.offsets.requestId handled.
	// +required
	RequestID string `json:"requestId"`

	// result: Applied, or Failed (the workers refused the request; the
	// connector went back to spec.state with its old offsets).
	// +required
	Result OffsetsResult `json:"result"`

	// time is when the request was handled.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`

	// message is the workers' answer: their confirmation, or the error.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}
