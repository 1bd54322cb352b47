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

// Conditions both kinds carry for GitOps tools: kstatus (Flux, kubectl
// wait habits) reads an object as InProgress while Reconciling is True and
// as Failed while Stalled is True; with both False and
// status.observedGeneration equal to metadata.generation it is Current.
const (
	// ConditionReconciling is True while the operator expects the object to
	// converge by itself (workers starting, tasks being assigned, a cluster
	// the connector waits for); the reason and message are those of the
	// condition that is not True yet.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the object cannot converge without a
	// change by the user (a bad config, a missing Secret, a failed task);
	// the reason and message say what to fix.
	ConditionStalled = "Stalled"
)

const (
	// ReasonConverged: Reconciling and Stalled are False because every
	// condition the object needs is True.
	ReasonConverged = "Converged"
	// ReasonProgressing: Stalled is False because the object is still
	// converging (Reconciling is True).
	ReasonProgressing = "Progressing"
	// ReasonStalled: Reconciling is False because the object is Stalled.
	ReasonStalled = "Stalled"
)
