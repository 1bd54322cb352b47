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
