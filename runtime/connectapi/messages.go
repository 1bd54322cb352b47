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

package connectapi

// Kafka Connect's own wording for the common answers, so that scripts and
// tools that match on messages keep working against Conveyor.

// ConnectorNotFound is the 404 for an unknown connector.
func ConnectorNotFound(name string) *Error { return NotFoundf("Connector %s not found", name) }

// ConnectorAlreadyExists is the 409 for a create with a name in use.
func ConnectorAlreadyExists(name string) *Error {
	return AlreadyExistsf("Connector %s already exists", name)
}

// TaskNotFound is the 404 for the status of an unknown task.
func TaskNotFound(id ConnectorTaskID) *Error {
	return NotFoundf("No status found for task %s", id)
}

// OffsetsNotStopped is the 400 for an offsets change on a connector that
// is not STOPPED.
func OffsetsNotStopped(name string) *Error {
	return BadRequestf("%s", OffsetsNotStoppedMessage(name))
}

// RebalanceInProgress is the 409 for a request that cannot complete while
// the group rebalances or the worker's config view is stale.
func RebalanceInProgress() *Error { return RebalanceInProgressf("%s", MessageRebalance) }

// Success messages of PATCH and DELETE /connectors/{c}/offsets, by
// connector type (a source may keep offsets outside Kafka too).
const (
	MessageSinkOffsetsAltered   = "The offsets for this connector have been altered successfully"
	MessageSinkOffsetsReset     = "The offsets for this connector have been reset successfully"
	MessageSourceOffsetsAltered = "The Connect framework-managed offsets for this connector have been altered successfully. " +
		"However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
	MessageSourceOffsetsReset = "The Connect framework-managed offsets for this connector have been reset successfully. " +
		"However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses."
)
