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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DriftPolicy says what the operator does when the config a connector has
// on the workers differs from its KafkaConnector although the spec did not
// change (someone wrote it through the REST API).
//
// There is no "adopt": the operator never writes a spec (it may be kept in
// git), so adopting a REST edit could only mean leaving it in place, which
// is what report does, and the next spec change overwrites it either way.
// +kubebuilder:validation:Enum=enforce;report
type DriftPolicy string

// Drift policies.
const (
	// DriftEnforce writes the spec's config back, with a ConfigDrift
	// condition and a Warning event naming the changed keys; repeated edits
	// are reverted with exponential backoff.
	DriftEnforce DriftPolicy = "enforce"
	// DriftReport leaves the edited config in place and shows the key-level
	// difference in the ConfigDrift condition.
	DriftReport DriftPolicy = "report"
)

// Condition type and reasons of config drift.
const (
	// KafkaConnectorConfigDrift is True while the connector's config on the
	// workers differs from the spec without a spec change; the message lists
	// the keys (never the values).
	KafkaConnectorConfigDrift = "ConfigDrift"
	// ReasonInSync: the workers hold the spec's config.
	ReasonInSync = "InSync"
	// ReasonDriftReverted: the operator wrote the spec's config back
	// (driftPolicy enforce); False, as the config matches again.
	ReasonDriftReverted = "Reverted"
	// ReasonRevertBackedOff: the config keeps being changed; the next revert
	// waits for the backoff (driftPolicy enforce).
	ReasonRevertBackedOff = "RevertBackedOff"
	// ReasonDriftReported: the change is left in place (driftPolicy report).
	ReasonDriftReported = "DriftReported"
)

// Drift revert schedule (driftPolicy enforce): the first revert of a series
// goes out at once, the n-th waits DriftInitialBackoff*2^(n-2) after the
// previous one, at most DriftMaxBackoff; DriftResetAfter without drift
// starts a new series.
const (
	DriftInitialBackoff = 30 * time.Second
	DriftMaxBackoff     = 10 * time.Minute
	DriftResetAfter     = 30 * time.Minute
)

// ConfigDriftStatus records the last config drift the operator saw.
type ConfigDriftStatus struct {
	// added are the keys (never the values) that the workers' config has
	// and the spec's config does not.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=600
	Added []string `json:"added,omitempty"`
	// changed are the keys whose value on the workers differs from the spec.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=600
	Changed []string `json:"changed,omitempty"`
	// removed are the spec's keys that the workers' config lacks.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=600
	Removed []string `json:"removed,omitempty"`

	// detectedTime is when the operator last saw the drift.
	// +optional
	DetectedTime *metav1.Time `json:"detectedTime,omitempty"`

	// reverts counts the reverts of the current series (driftPolicy
	// enforce); it drives the backoff.
	// +optional
	Reverts int32 `json:"reverts,omitempty"`

	// lastRevertTime is when the operator last wrote the spec's config back.
	// +optional
	LastRevertTime *metav1.Time `json:"lastRevertTime,omitempty"`
}

// EffectiveDriftPolicy is spec.driftPolicy, else the cluster's
// spec.driftPolicy (cc may be nil), else enforce.
func (k *KafkaConnector) EffectiveDriftPolicy(cc *ConnectCluster) DriftPolicy {
	switch {
	case k.Spec.DriftPolicy != "":
		return k.Spec.DriftPolicy
	case cc != nil && cc.Spec.DriftPolicy != "":
		return cc.Spec.DriftPolicy
	}
	return DriftEnforce
}

// OffsetsPending reports whether spec.offsets holds a request the operator
// has not handled yet.
func (k *KafkaConnector) OffsetsPending() bool {
	return k.Spec.Offsets != nil && (k.Status.Offsets == nil || k.Status.Offsets.RequestID != k.Spec.Offsets.RequestID)
}
