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

// Package connectapi is the contract between the worker's REST layer
// (runtime/rest) and the herder that runs connectors (runtime/herder or
// similar): Kafka Connect's REST entities as Go types with Kafka's exact JSON
// names and omit-when-empty behaviour, the Herder interface that the REST
// layer calls, and the typed errors that map to HTTP status codes.
//
// The JSON shapes follow Kafka Connect's org.apache.kafka.connect.runtime.rest.entities
// classes. Lists that Kafka always renders as arrays (never null) are rendered
// as [] here too, even when the Go slice is nil, so a herder may leave them nil.
package connectapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Connector and task states, as Kafka Connect reports them in status entities.
const (
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StateStopped    = "STOPPED"
	StateFailed     = "FAILED"
	StateUnassigned = "UNASSIGNED"
	StateRestarting = "RESTARTING"
)

// HeldTracePrefix begins the trace of a connector or task that the workers
// hold FAILED because its code crashed a worker process (a Conveyor
// extension of the status trace): it stays FAILED until its configuration
// changes or someone restarts it, and an automatic restart policy must not
// restart it, or it crashes the next worker.
const HeldTracePrefix = "Held FAILED: "

// HeldByCrash reports whether the status shows the connector or one of its
// tasks held FAILED for a crash (HeldTracePrefix).
func HeldByCrash(st ConnectorStateInfo) bool {
	if st.Connector.State == StateFailed && strings.HasPrefix(st.Connector.Trace, HeldTracePrefix) {
		return true
	}
	for _, t := range st.Tasks {
		if t.State == StateFailed && strings.HasPrefix(t.Trace, HeldTracePrefix) {
			return true
		}
	}
	return false
}

// ConnectorType is "source", "sink" or "unknown", lower case as in Kafka's JSON.
type ConnectorType string

// Connector types.
const (
	TypeSource  ConnectorType = "source"
	TypeSink    ConnectorType = "sink"
	TypeUnknown ConnectorType = "unknown"
)

// PluginType is the lower-case plugin kind that /connector-plugins reports.
type PluginType string

// Plugin types, named as Kafka's PluginType renders them.
const (
	PluginSource          PluginType = "source"
	PluginSink            PluginType = "sink"
	PluginConverter       PluginType = "converter"
	PluginHeaderConverter PluginType = "header_converter"
	PluginTransformation  PluginType = "transformation"
	PluginPredicate       PluginType = "predicate"
)

// ServerInfo is the body of GET /.
type ServerInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

// ConnectorTaskID names one task of a connector.
type ConnectorTaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// String renders the id as Kafka does in logs: "<connector>-<task>".
func (id ConnectorTaskID) String() string { return fmt.Sprintf("%s-%d", id.Connector, id.Task) }

// ConnectorInfo is the body of GET /connectors/{c}, and of the create and
// update answers. Config holds placeholders only, never resolved secrets.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []ConnectorTaskID `json:"tasks"`
	Type   ConnectorType     `json:"type"`
}

// MarshalJSON renders nil Config and Tasks as {} and [].
func (c ConnectorInfo) MarshalJSON() ([]byte, error) {
	type plain ConnectorInfo
	if c.Config == nil {
		c.Config = map[string]string{}
	}
	if c.Tasks == nil {
		c.Tasks = []ConnectorTaskID{}
	}
	return json.Marshal(plain(c))
}

// ConnectorState is the connector part of a status.
// Trace (a failure's stack or message) is omitted when empty, as in Kafka.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
	// Version is the plugin version (Kafka 4.1+); omitted when unknown.
	Version string `json:"version,omitempty"`
}

// TaskState is one task's status: GET /connectors/{c}/tasks/{t}/status.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
	Version  string `json:"version,omitempty"`
	// Stalled (a Conveyor extension) is set while a RUNNING task has work
	// and makes no progress; it says for how long.
	Stalled string `json:"stalled,omitempty"`
}

// ConnectorStateInfo is the body of GET /connectors/{c}/status.
type ConnectorStateInfo struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      ConnectorType  `json:"type"`
}

// MarshalJSON renders nil Tasks as [].
func (s ConnectorStateInfo) MarshalJSON() ([]byte, error) {
	type plain ConnectorStateInfo
	if s.Tasks == nil {
		s.Tasks = []TaskState{}
	}
	return json.Marshal(plain(s))
}

// TaskInfo is one element of GET /connectors/{c}/tasks.
type TaskInfo struct {
	ID     ConnectorTaskID   `json:"id"`
	Config map[string]string `json:"config"`
}

// MarshalJSON renders a nil Config as {}.
func (t TaskInfo) MarshalJSON() ([]byte, error) {
	type plain TaskInfo
	if t.Config == nil {
		t.Config = map[string]string{}
	}
	return json.Marshal(plain(t))
}

// ActiveTopicsInfo is a connector's set of topics in use. GET
// /connectors/{c}/topics renders it as {"<connector>": {"topics": [...]}}.
type ActiveTopicsInfo struct {
	Connector string   `json:"-"`
	Topics    []string `json:"topics"`
}

// MarshalJSON renders nil Topics as [].
func (a ActiveTopicsInfo) MarshalJSON() ([]byte, error) {
	topics := a.Topics
	if topics == nil {
		topics = []string{}
	}
	return json.Marshal(struct {
		Topics []string `json:"topics"`
	}{topics})
}

// ConnectorOffset is one source partition (or Kafka topic partition for a
// sink) and its offset. In an alter request a null Offset resets that
// partition.
type ConnectorOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// ConnectorOffsets is the body of GET /connectors/{c}/offsets and of PATCH.
type ConnectorOffsets struct {
	Offsets []ConnectorOffset `json:"offsets"`
}

// MarshalJSON renders nil Offsets as [].
func (o ConnectorOffsets) MarshalJSON() ([]byte, error) {
	type plain ConnectorOffsets
	if o.Offsets == nil {
		o.Offsets = []ConnectorOffset{}
	}
	return json.Marshal(plain(o))
}

// Message is a human message body, e.g. the answer to an offsets change.
type Message struct {
	Message string `json:"message"`
}

// PluginInfo is one element of GET /connector-plugins. Version is omitted
// when the plugin does not declare one.
type PluginInfo struct {
	Class   string     `json:"class"`
	Type    PluginType `json:"type"`
	Version string     `json:"version,omitempty"`
}

// ConfigKeyInfo describes one configuration key of a plugin: the elements
// of GET /connector-plugins/{p}/config and the "definition" of a validation
// result. Type and Importance and Width are Kafka's upper-case names
// (STRING, INT, ... ; HIGH, MEDIUM, LOW ; NONE, SHORT, MEDIUM, LONG).
type ConfigKeyInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         string   `json:"group"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
	Order         int      `json:"order"`
}

// MarshalJSON renders nil Dependents as [].
func (k ConfigKeyInfo) MarshalJSON() ([]byte, error) {
	type plain ConfigKeyInfo
	if k.Dependents == nil {
		k.Dependents = []string{}
	}
	return json.Marshal(plain(k))
}

// ConfigValueInfo is the validated value of one key. Value is null when unset.
type ConfigValueInfo struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

// MarshalJSON renders nil RecommendedValues and Errors as [].
func (v ConfigValueInfo) MarshalJSON() ([]byte, error) {
	type plain ConfigValueInfo
	if v.RecommendedValues == nil {
		v.RecommendedValues = []string{}
	}
	if v.Errors == nil {
		v.Errors = []string{}
	}
	return json.Marshal(plain(v))
}

// ConfigInfo pairs a key's definition with its validated value.
type ConfigInfo struct {
	Definition ConfigKeyInfo   `json:"definition"`
	Value      ConfigValueInfo `json:"value"`
}

// ConfigInfos is the body of PUT /connector-plugins/{p}/config/validate.
// Name is the plugin class; ErrorCount counts the errors of all values.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// MarshalJSON renders nil Groups and Configs as [].
func (c ConfigInfos) MarshalJSON() ([]byte, error) {
	type plain ConfigInfos
	if c.Groups == nil {
		c.Groups = []string{}
	}
	if c.Configs == nil {
		c.Configs = []ConfigInfo{}
	}
	return json.Marshal(plain(c))
}

// ErrorMessage is the body of every error answer.
type ErrorMessage struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// InitialState is the target state a connector is created in.
type InitialState string

// Initial states accepted by POST /connectors.
const (
	InitialRunning InitialState = "RUNNING"
	InitialPaused  InitialState = "PAUSED"
	InitialStopped InitialState = "STOPPED"
)

// ParseInitialState accepts RUNNING, PAUSED or STOPPED in any case (as Kafka
// does); the empty string means "not given" and is returned unchanged.
func ParseInitialState(s string) (InitialState, error) {
	if s == "" {
		return "", nil
	}
	switch st := InitialState(strings.ToUpper(s)); st {
	case InitialRunning, InitialPaused, InitialStopped:
		return st, nil
	}
	return "", errors.New("Field \"initial_state\" is not valid: use RUNNING, PAUSED or STOPPED")
}

// CreateConnectorRequest is the body of POST /connectors. InitialState is
// empty when not given (the herder treats that as RUNNING).
type CreateConnectorRequest struct {
	Name         string            `json:"name"`
	Config       map[string]string `json:"config"`
	InitialState InitialState      `json:"initial_state,omitempty"`
}

// ConfigPatch is the body of PATCH /connectors/{c}/config: keys with a value
// are set, keys with null are removed, keys absent are kept.
type ConfigPatch map[string]*string

// Limits is Conveyor's extension GET /connectors/{c}/limits: the task count
// the user asked for (tasks.max), the connector's natural limit (null when it
// has none, for example a source with no natural split), the number of task
// configs actually in effect, and why: a reason constant from the plugin
// package (such as "TopicPartitions") as the herder reports it.
type Limits struct {
	TasksMax       int    `json:"tasks_max"`
	NaturalLimit   *int   `json:"natural_limit"`
	EffectiveTasks int    `json:"effective_tasks"`
	Reason         string `json:"reason"`
	// BacklogUnit is the unit of the connector's figure on the metrics
	// port's GET /backlog/{c} (rows, bytes, records); absent when it has
	// none. The operator derives a metrics-api trigger from it.
	BacklogUnit string `json:"backlog_unit,omitempty"`
}

// ConnectorExpansion is one entry of GET /connectors?expand=...: status and
// info as in Kafka Connect; limits and topics are Conveyor's (the answers
// of GET /connectors/{c}/limits and /topics), so that the operator reads a
// whole cluster in one call. A field is nil when not asked for.
type ConnectorExpansion struct {
	Status *ConnectorStateInfo `json:"status,omitempty"`
	Info   *ConnectorInfo      `json:"info,omitempty"`
	Limits *Limits             `json:"limits,omitempty"`
	Topics *ActiveTopicsInfo   `json:"topics,omitempty"`
}
