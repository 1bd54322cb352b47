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

// Package store keeps the worker's shared state on compacted Kafka topics,
// in record formats modelled on Kafka Connect's: connector configs, task
// configs and target states (config store), source offsets (offset store),
// and connector and task statuses (status store).
package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
)

// TargetState is the state a connector should be in.
type TargetState string

// Target states, spelled as Kafka Connect writes them to the config topic.
const (
	TargetStarted TargetState = "STARTED"
	TargetPaused  TargetState = "PAUSED"
	TargetStopped TargetState = "STOPPED"
)

// Config topic keys (Kafka Connect's, plus a Conveyor cluster id record).
const (
	connectorPrefix   = "connector-"
	taskPrefix        = "task-"
	commitPrefix      = "commit-"
	targetStatePrefix = "target-state-"
	clusterIDKey      = "conveyor-cluster-id"
	restartConnPrefix = "restart-connector-"
	restartTaskPrefix = "restart-task-"
	// taskCountPrefix keys Kafka Connect's task count record (KIP-618):
	// written after the leader fenced the producers of a connector's
	// earlier tasks, with the number of tasks of the new generation.
	taskCountPrefix = "tasks-fencing-"
	// loggerClusterPrefix keys a cluster-wide log level (KIP-976).
	loggerClusterPrefix = "logger-cluster-"
)

// ConfigEvent tells a listener what changed in the config store.
type ConfigEvent struct {
	Kind      ConfigEventKind
	Connector string
	// Restart details, for RestartRequested.
	IncludeTasks bool
	OnlyFailed   bool
	// Task is the task to restart for TaskRestartRequested.
	Task int
	// Logger, Level and At (the record's timestamp) for LoggerLevelSet;
	// Level as written, checked by the listener.
	Logger, Level string
	At            time.Time
}

// ConfigEventKind says which part of a connector changed.
type ConfigEventKind int

// Kinds of config events.
const (
	ConnectorConfigChanged ConfigEventKind = iota
	ConnectorRemoved
	TaskConfigsCommitted
	TargetStateChanged
	ClusterIDChanged
	// RestartRequested: the connector (and maybe its tasks) should be
	// restarted by the worker that runs it. Emitted only for records
	// written after the store was opened.
	RestartRequested
	// TaskRestartRequested: one task should be restarted.
	TaskRestartRequested
	// LoggerLevelSet: a cluster-wide log level (Logger, Level, At). Unlike
	// the other kinds it is emitted for every record, those read while the
	// store opens included, in the topic's order, so that a worker that
	// starts applies the levels the cluster was given before it (Kafka
	// Connect ignores those: see docs/operations.md).
	LoggerLevelSet
)

// ConfigSnapshot is a consistent copy of the config store.
type ConfigSnapshot struct {
	// Offset is the config topic position this snapshot reflects.
	Offset       int64
	Connectors   map[string]map[string]string
	Tasks        map[string][]map[string]string // committed task configs per connector
	TargetStates map[string]TargetState
	ClusterID    string
}

// ConfigStore holds connector configs, committed task configs and target
// states, read from a single-partition compacted topic. Task configs are
// written first and become visible only with their commit record, so a
// partially written set is never used.
type ConfigStore struct {
	log *kafkalog.Log

	mu           sync.Mutex
	offset       int64
	connectors   map[string]map[string]string
	tasks        map[string][]map[string]string
	pending      map[string]map[int]map[string]string
	targetStates map[string]TargetState
	taskCounts   map[string]int // task count records (exactly-once sources)
	clusterID    string
	// sessionKey and prevSessionKey are the workers' session keys
	// (sessionkey.go).
	sessionKey, prevSessionKey *SessionKey
	listener                   func(ConfigEvent)
	// opened is set once the initial read is done: only LoggerLevelSet
	// events are emitted before.
	opened bool
}

// LogOpener opens a kafkalog with the given apply function; it lets the
// worker pass its topic names and client options once.
type LogOpener func(ctx context.Context, topic kafkalog.Topic, apply func(kafkalog.Record)) (*kafkalog.Log, error)

// OpenConfigStore reads the config topic to its end. listener (may be nil)
// is called, outside the store's lock and from the log's goroutine, for
// every change after the initial read, and for every LoggerLevelSet record
// (those of the initial read included).
func OpenConfigStore(ctx context.Context, open LogOpener, topic kafkalog.Topic, listener func(ConfigEvent)) (*ConfigStore, error) {
	s := &ConfigStore{
		connectors:   map[string]map[string]string{},
		tasks:        map[string][]map[string]string{},
		pending:      map[string]map[int]map[string]string{},
		targetStates: map[string]TargetState{},
		taskCounts:   map[string]int{},
		listener:     listener,
	}
	topic.Partitions = 1
	l, err := open(ctx, topic, s.apply)
	if err != nil {
		return nil, fmt.Errorf("opening config store: %w", err)
	}
	s.log = l
	s.mu.Lock()
	s.opened = true
	s.mu.Unlock()
	return s, nil
}

type propsValue struct {
	Properties map[string]string `json:"properties"`
}

type commitValue struct {
	Tasks int `json:"tasks"`
}

type taskCountValue struct {
	TaskCount int `json:"task-count"`
}

type targetValue struct {
	State   string `json:"state"`
	StateV2 string `json:"state.v2,omitempty"`
}

type restartValue struct {
	IncludeTasks bool `json:"include-tasks"`
	OnlyFailed   bool `json:"only-failed"`
}

// loggerLevelValue is Kafka Connect's LOGGER_LEVEL_V0.
type loggerLevelValue struct {
	Level string `json:"level"`
}

type clusterIDValue struct {
	ClusterID string `json:"cluster_id"`
}

func (s *ConfigStore) apply(r kafkalog.Record) {
	key := string(r.Key)
	var ev *ConfigEvent
	s.mu.Lock()
	s.offset = r.Offset + 1
	switch {
	case strings.HasPrefix(key, connectorPrefix):
		name := strings.TrimPrefix(key, connectorPrefix)
		if r.Tombstone() {
			delete(s.connectors, name)
			delete(s.tasks, name)
			delete(s.pending, name)
			delete(s.targetStates, name)
			delete(s.taskCounts, name)
			ev = &ConfigEvent{Kind: ConnectorRemoved, Connector: name}
			break
		}
		var v propsValue
		if json.Unmarshal(r.Value, &v) != nil || v.Properties == nil {
			break // a record we cannot read is skipped, as Kafka Connect does
		}
		s.connectors[name] = v.Properties
		ev = &ConfigEvent{Kind: ConnectorConfigChanged, Connector: name}
	case strings.HasPrefix(key, taskPrefix):
		name, idx, ok := splitTaskKey(strings.TrimPrefix(key, taskPrefix))
		if !ok || r.Tombstone() {
			break
		}
		var v propsValue
		if json.Unmarshal(r.Value, &v) != nil {
			break
		}
		if s.pending[name] == nil {
			s.pending[name] = map[int]map[string]string{}
		}
		s.pending[name][idx] = v.Properties
	case strings.HasPrefix(key, commitPrefix):
		name := strings.TrimPrefix(key, commitPrefix)
		var v commitValue
		if r.Tombstone() || json.Unmarshal(r.Value, &v) != nil {
			break
		}
		p := s.pending[name]
		cfgs := make([]map[string]string, 0, v.Tasks)
		complete := true
		for i := 0; i < v.Tasks; i++ {
			c, ok := p[i]
			if !ok {
				complete = false
				break
			}
			cfgs = append(cfgs, c)
		}
		if !complete {
			break // an inconsistent set: keep the previous committed configs
		}
		s.tasks[name] = cfgs
		delete(s.pending, name)
		ev = &ConfigEvent{Kind: TaskConfigsCommitted, Connector: name}
	case strings.HasPrefix(key, targetStatePrefix):
		name := strings.TrimPrefix(key, targetStatePrefix)
		if r.Tombstone() {
			if _, ok := s.targetStates[name]; ok {
				delete(s.targetStates, name)
				ev = &ConfigEvent{Kind: TargetStateChanged, Connector: name}
			}
			break
		}
		var v targetValue
		if json.Unmarshal(r.Value, &v) != nil {
			break
		}
		st := v.StateV2
		if st == "" {
			st = v.State
		}
		switch TargetState(st) {
		case TargetStarted, TargetPaused, TargetStopped:
			s.targetStates[name] = TargetState(st)
			ev = &ConfigEvent{Kind: TargetStateChanged, Connector: name}
		}
	case strings.HasPrefix(key, taskCountPrefix):
		var v taskCountValue
		if r.Tombstone() || json.Unmarshal(r.Value, &v) != nil {
			break
		}
		s.taskCounts[strings.TrimPrefix(key, taskCountPrefix)] = v.TaskCount
	case strings.HasPrefix(key, restartConnPrefix):
		var v restartValue
		if r.Tombstone() || json.Unmarshal(r.Value, &v) != nil {
			break
		}
		ev = &ConfigEvent{Kind: RestartRequested, Connector: strings.TrimPrefix(key, restartConnPrefix), IncludeTasks: v.IncludeTasks, OnlyFailed: v.OnlyFailed}
	case strings.HasPrefix(key, restartTaskPrefix):
		name, idx, ok := splitTaskKey(strings.TrimPrefix(key, restartTaskPrefix))
		if !ok || r.Tombstone() {
			break
		}
		ev = &ConfigEvent{Kind: TaskRestartRequested, Connector: name, Task: idx}
	case strings.HasPrefix(key, loggerClusterPrefix):
		var v loggerLevelValue
		if r.Tombstone() || json.Unmarshal(r.Value, &v) != nil || v.Level == "" {
			break // as Kafka Connect: a record it cannot read is skipped
		}
		ev = &ConfigEvent{Kind: LoggerLevelSet, Logger: strings.TrimPrefix(key, loggerClusterPrefix), Level: v.Level, At: r.Timestamp}
	case key == sessionKeyKey:
		s.applySessionKey(r.Value, r.Tombstone())
	case key == clusterIDKey:
		var v clusterIDValue
		if r.Tombstone() || json.Unmarshal(r.Value, &v) != nil || v.ClusterID == "" {
			break
		}
		if s.clusterID == "" { // the first id written wins
			s.clusterID = v.ClusterID
			ev = &ConfigEvent{Kind: ClusterIDChanged}
		}
	}
	listener := s.listener
	if !s.opened && ev != nil && ev.Kind != LoggerLevelSet {
		listener = nil
	}
	s.mu.Unlock()
	if ev != nil && listener != nil {
		listener(*ev)
	}
}

// splitTaskKey splits "<connector>-<n>" (connector names may contain '-').
func splitTaskKey(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

// Snapshot returns a deep copy of the current state.
func (s *ConfigStore) Snapshot() ConfigSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := ConfigSnapshot{
		Offset:       s.offset,
		Connectors:   make(map[string]map[string]string, len(s.connectors)),
		Tasks:        make(map[string][]map[string]string, len(s.tasks)),
		TargetStates: maps.Clone(s.targetStates),
		ClusterID:    s.clusterID,
	}
	for n, c := range s.connectors {
		snap.Connectors[n] = maps.Clone(c)
	}
	for n, ts := range s.tasks {
		cp := make([]map[string]string, len(ts))
		for i, t := range ts {
			cp[i] = maps.Clone(t)
		}
		snap.Tasks[n] = cp
	}
	return snap
}

// Connector returns a connector's config, if it exists.
func (s *ConfigStore) Connector(name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.connectors[name]
	return maps.Clone(c), ok
}

// ConnectorNames returns the sorted connector names.
func (s *ConfigStore) ConnectorNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.connectors))
}

// TaskConfigs returns a connector's committed task configs.
func (s *ConfigStore) TaskConfigs(name string) []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.tasks[name]
	cp := make([]map[string]string, len(ts))
	for i, t := range ts {
		cp[i] = maps.Clone(t)
	}
	return cp
}

// TaskCounts returns the number of committed task configs per connector,
// for every connector (cheaper than a Snapshot).
func (s *ConfigStore) TaskCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.connectors))
	for n := range s.connectors {
		out[n] = len(s.tasks[n])
	}
	return out
}

// TargetState returns a connector's target state (STARTED when unset).
func (s *ConfigStore) TargetState(name string) TargetState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.targetStates[name]; ok {
		return st
	}
	return TargetStarted
}

// ClusterID returns the cluster id recorded in the config topic, "" if none.
func (s *ConfigStore) ClusterID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clusterID
}

// PutConnectorConfig writes a connector's config (placeholders unresolved).
func (s *ConfigStore) PutConnectorConfig(ctx context.Context, name string, cfg map[string]string) error {
	b, err := json.Marshal(propsValue{Properties: cfg})
	if err != nil {
		return fmt.Errorf("encoding config of connector %q: %w", name, err)
	}
	return s.log.SendAndApply(ctx, []byte(connectorPrefix+name), b)
}

// RemoveConnector deletes a connector's config, target state and task commit.
func (s *ConfigStore) RemoveConnector(ctx context.Context, name string) error {
	if err := s.log.SendAndApply(ctx, []byte(connectorPrefix+name), nil); err != nil {
		return err
	}
	// Tombstones for the rest keep the compacted topic small.
	if _, _, err := s.log.Send(ctx, []byte(targetStatePrefix+name), nil); err != nil {
		return err
	}
	_, _, err := s.log.Send(ctx, []byte(commitPrefix+name), nil)
	return err
}

// PutTaskConfigs writes a connector's task configs followed by their commit
// record; readers use them only once the commit is in.
func (s *ConfigStore) PutTaskConfigs(ctx context.Context, name string, cfgs []map[string]string) error {
	for i, c := range cfgs {
		b, err := json.Marshal(propsValue{Properties: c})
		if err != nil {
			return fmt.Errorf("encoding task config %d of connector %q: %w", i, name, err)
		}
		if _, _, err := s.log.Send(ctx, []byte(fmt.Sprintf("%s%s-%d", taskPrefix, name, i)), b); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(commitValue{Tasks: len(cfgs)})
	return s.log.SendAndApply(ctx, []byte(commitPrefix+name), b)
}

// TaskCount returns the task count record of a connector: how many tasks
// its last fenced generation has (ok=false when none was written).
func (s *ConfigStore) TaskCount(name string) (n int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok = s.taskCounts[name]
	return n, ok
}

// PutTaskCount writes a connector's task count record, after the
// producers of its earlier tasks were fenced.
func (s *ConfigStore) PutTaskCount(ctx context.Context, name string, n int) error {
	b, _ := json.Marshal(taskCountValue{TaskCount: n})
	return s.log.SendAndApply(ctx, []byte(taskCountPrefix+name), b)
}

// PutTargetState writes a connector's target state.
func (s *ConfigStore) PutTargetState(ctx context.Context, name string, st TargetState) error {
	v := targetValue{State: string(st)}
	if st == TargetStopped {
		// Kafka Connect writes PAUSED into "state" for older readers.
		v = targetValue{State: string(TargetPaused), StateV2: string(st)}
	}
	b, _ := json.Marshal(v)
	return s.log.SendAndApply(ctx, []byte(targetStatePrefix+name), b)
}

// RequestRestart asks the worker running the connector to restart it (and,
// with includeTasks, its tasks; onlyFailed limits it to FAILED instances).
func (s *ConfigStore) RequestRestart(ctx context.Context, name string, includeTasks, onlyFailed bool) error {
	b, _ := json.Marshal(restartValue{IncludeTasks: includeTasks, OnlyFailed: onlyFailed})
	return s.log.SendAndApply(ctx, []byte(restartConnPrefix+name), b)
}

// RequestTaskRestart asks the worker running a task to restart it.
func (s *ConfigStore) RequestTaskRestart(ctx context.Context, id TaskID) error {
	return s.log.SendAndApply(ctx, []byte(fmt.Sprintf("%s%s-%d", restartTaskPrefix, id.Connector, id.Task)), []byte("{}"))
}

// PutLoggerLevel sets a log level on every worker of the cluster (Kafka
// Connect's logger-cluster record, KIP-976): each applies it when it reads
// the record, and a worker that starts later applies it too. It returns
// once this worker has read it back.
func (s *ConfigStore) PutLoggerLevel(ctx context.Context, logger, level string) error {
	b, _ := json.Marshal(loggerLevelValue{Level: level})
	return s.log.SendAndApply(ctx, []byte(loggerClusterPrefix+logger), b)
}

// PutClusterID records the cluster id if none is recorded yet and returns
// the id in force (the first one written).
func (s *ConfigStore) PutClusterID(ctx context.Context, id string) (string, error) {
	if cur := s.ClusterID(); cur != "" {
		return cur, nil
	}
	b, _ := json.Marshal(clusterIDValue{ClusterID: id})
	if err := s.log.SendAndApply(ctx, []byte(clusterIDKey), b); err != nil {
		return "", err
	}
	return s.ClusterID(), nil
}

// ReadToEnd waits until every write made before the call is applied.
func (s *ConfigStore) ReadToEnd(ctx context.Context) error { return s.log.ReadToEnd(ctx) }

// Offset is the config topic position this store reflects.
func (s *ConfigStore) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

// Close stops following the topic.
func (s *ConfigStore) Close() { s.log.Close() }
