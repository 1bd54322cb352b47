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

import "context"

// Herder is what the REST layer calls. The worker's herder implements it;
// every method is safe for concurrent use. Errors carry their HTTP status
// (see Error, the sentinels and StatusCode): a missing connector is
// ConnectorNotFound (ErrNotFound, 404), a name in use ConnectorAlreadyExists
// (ErrAlreadyExists, 409), a request during a rebalance RebalanceInProgress
// (409), an invalid request BadRequestf (400); any other error is a 500 whose
// message the client sees, so it must not hold config values. Configs returned
// hold placeholders (${secret:...}) only, never resolved secret values.
//
// Writes (create, put, patch, delete, restart, pause, resume, stop, offsets
// changes, reset topics) must run on the leader. The REST layer forwards a
// write to LeaderURL when IsLeader is false; a herder that learns only while
// handling a write that it is not the leader returns a *NotLeaderError and
// the REST layer forwards then.
type Herder interface {
	// ServerInfo is the body of GET /.
	ServerInfo(ctx context.Context) (ServerInfo, error)
	// Ready returns nil once the worker has joined its group and read the
	// config topic to the end, else an error saying what it waits for.
	Ready(ctx context.Context) error
	// IsLeader reports whether this worker is the group's leader (a single
	// worker always is).
	IsLeader() bool
	// LeaderURL is the leader's advertised REST URL, "" when unknown.
	LeaderURL() string

	// ListConnectors returns the names of all connectors, sorted.
	ListConnectors(ctx context.Context) ([]string, error)
	ConnectorInfo(ctx context.Context, name string) (ConnectorInfo, error)
	ConnectorStatus(ctx context.Context, name string) (ConnectorStateInfo, error)
	ConnectorConfig(ctx context.Context, name string) (map[string]string, error)
	// CreateConnector creates a connector in req.InitialState ("" means
	// RUNNING); ErrAlreadyExists when the name is in use. req.Config["name"]
	// equals req.Name (the REST layer ensures it).
	CreateConnector(ctx context.Context, req CreateConnectorRequest) (ConnectorInfo, error)
	// PutConnectorConfig creates or replaces a connector's config; created
	// says which. cfg["name"] equals name (the REST layer ensures it).
	PutConnectorConfig(ctx context.Context, name string, cfg map[string]string) (info ConnectorInfo, created bool, err error)
	// PatchConnectorConfig merges patch into an existing connector's config
	// (null values remove keys); ErrNotFound when it does not exist.
	PatchConnectorConfig(ctx context.Context, name string, patch ConfigPatch) (ConnectorInfo, error)
	DeleteConnector(ctx context.Context, name string) error

	TaskConfigs(ctx context.Context, name string) ([]TaskInfo, error)
	TaskStatus(ctx context.Context, id ConnectorTaskID) (TaskState, error)
	// RestartConnector restarts the connector and, with includeTasks, its
	// tasks; onlyFailed limits the restart to FAILED instances. When
	// neither flag is set it returns a nil status (the REST layer answers
	// 204); otherwise the status with the instances to restart marked
	// RESTARTING (202).
	RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*ConnectorStateInfo, error)
	RestartTask(ctx context.Context, id ConnectorTaskID) error
	Pause(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Stop(ctx context.Context, name string) error

	// Offsets returns the connector's committed offsets.
	Offsets(ctx context.Context, name string) (ConnectorOffsets, error)
	// AlterOffsets and ResetOffsets work only while the connector is
	// STOPPED; otherwise they return OffsetsNotStopped(name) (400). The
	// Message is Kafka's success message for the connector's type
	// (MessageSinkOffsetsAltered, MessageSourceOffsetsReset, ...).
	AlterOffsets(ctx context.Context, name string, offsets ConnectorOffsets) (Message, error)
	ResetOffsets(ctx context.Context, name string) (Message, error)

	ActiveTopics(ctx context.Context, name string) (ActiveTopicsInfo, error)
	ResetActiveTopics(ctx context.Context, name string) error

	// Plugins lists the installed plugins; connectorsOnly limits the list
	// to source and sink connectors.
	Plugins(ctx context.Context, connectorsOnly bool) ([]PluginInfo, error)
	// PluginConfig returns the config definitions of a plugin, named by
	// class or alias; ErrNotFound when unknown.
	PluginConfig(ctx context.Context, plugin string) ([]ConfigKeyInfo, error)
	// ValidateConfig validates cfg against the connector plugin's spec and
	// the common connector keys; ErrNotFound when the plugin is unknown.
	ValidateConfig(ctx context.Context, plugin string, cfg map[string]string) (ConfigInfos, error)

	// Limits is Conveyor's extension: the connector's task limits.
	Limits(ctx context.Context, name string) (Limits, error)
}
