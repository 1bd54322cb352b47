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

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
)

// Defaults of KafkaConnector fields; they match the +kubebuilder:default markers.
const (
	DefaultTasksMax           int32                = 1
	DefaultConnectorState     ConnectorTargetState = ConnectorTargetRunning
	DefaultAutoRestartEnabled                      = true

	// AutoRestartInitialBackoff, AutoRestartMaxBackoff and AutoRestartResetAfter shape the
	// backoff between automatic restarts: the wait starts at the first, doubles up to the
	// second, and the count resets after the connector ran healthy for the third.
	AutoRestartInitialBackoff = 2 * time.Second
	AutoRestartMaxBackoff     = 5 * time.Minute
	AutoRestartResetAfter     = 10 * time.Minute

	// MaxTraceLength bounds status.tasks[].trace.
	MaxTraceLength = 2048

	// RestartAnnotation, set to a new value (a timestamp, say), restarts the connector and
	// all its tasks once; status.lastRestartAnnotation records the value handled.
	RestartAnnotation = "connect.conveyor.dev/restart"

	// SinkGroupPrefix precedes the connector name in a sink connector's consumer group.
	SinkGroupPrefix = connectnames.SinkGroupPrefix
)

// ReservedConnectorConfigKeys are the connector settings that spec.config may not set because
// dedicated fields set them. The CEL rule on KafkaConnectorSpec.Config lists the same keys.
var ReservedConnectorConfigKeys = []string{"connector.class", "tasks.max", "name"}
