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

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
)

// Status is a connector's or task's state as recorded in the status topic.
type Status struct {
	State      string `json:"state"`
	Trace      string `json:"trace,omitempty"`
	WorkerID   string `json:"worker_id"`
	Generation int    `json:"generation"`
	// Stalled (Conveyor) says why a RUNNING task counts as stalled: it has
	// work and made no progress for task.stall.timeout.ms. Kafka Connect's
	// readers ignore it.
	Stalled string `json:"stalled,omitempty"`
}

// TaskID names a task.
type TaskID struct {
	Connector string
	Task      int
}

const (
	statusConnectorPrefix = "status-connector-"
	statusTaskPrefix      = "status-task-"
	statusTopicPrefix     = "status-topic-"
	limitsPrefix          = "conveyor-limits-"
	crashPrefix           = "conveyor-crash-"
)

// Crash records that a worker process ended while running a connector's
// code: a crash the runtime could not recover (a fatal error, a panic
// outside the runtime's guard). The connector is held FAILED with Trace
// while its configuration is the one it crashed with (ConfigHash), until a
// restart, so it does not move on and crash the next worker (a Conveyor
// record).
type Crash struct {
	WorkerID   string `json:"worker_id"`
	Task       int    `json:"task"` // -1: the connector instance
	Time       int64  `json:"time_ms"`
	Trace      string `json:"trace"`
	ConfigHash string `json:"config_hash"`
}

// Limits are a connector's task limits as last computed by the worker that
// runs it (a Conveyor record, so any worker can answer GET /limits).
type Limits struct {
	TasksMax       int    `json:"tasks_max"`
	NaturalLimit   *int   `json:"natural_limit"`
	EffectiveTasks int    `json:"effective_tasks"`
	Reason         string `json:"reason"`
}

type topicStatusValue struct {
	Topic struct {
		Name              string `json:"name"`
		Connector         string `json:"connector"`
		Task              int    `json:"task"`
		DiscoverTimestamp int64  `json:"discoverTimestamp"`
	} `json:"topic"`
}

// StatusStore keeps connector and task statuses and the topics connectors
// use, keyed as Kafka Connect keys them.
type StatusStore struct {
	log *kafkalog.Log

	mu         sync.Mutex
	connectors map[string]Status
	tasks      map[TaskID]Status
	topics     map[string]map[string]bool // connector -> topic
	limits     map[string]Limits
	crashes    map[string]Crash
	onCrash    func(connector string)
}

// OpenStatusStore reads the status topic to its end.
func OpenStatusStore(ctx context.Context, open LogOpener, topic kafkalog.Topic) (*StatusStore, error) {
	s := &StatusStore{
		connectors: map[string]Status{},
		tasks:      map[TaskID]Status{},
		topics:     map[string]map[string]bool{},
		limits:     map[string]Limits{},
		crashes:    map[string]Crash{},
	}
	l, err := open(ctx, topic, s.apply)
	if err != nil {
		return nil, fmt.Errorf("opening status store: %w", err)
	}
	s.log = l
	return s, nil
}

func (s *StatusStore) apply(r kafkalog.Record) {
	key := string(r.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case strings.HasPrefix(key, statusConnectorPrefix):
		name := strings.TrimPrefix(key, statusConnectorPrefix)
		if r.Tombstone() {
			delete(s.connectors, name)
			return
		}
		var st Status
		if json.Unmarshal(r.Value, &st) == nil {
			s.connectors[name] = st
		}
	case strings.HasPrefix(key, statusTaskPrefix):
		name, idx, ok := splitTaskKey(strings.TrimPrefix(key, statusTaskPrefix))
		if !ok {
			return
		}
		id := TaskID{name, idx}
		if r.Tombstone() {
			delete(s.tasks, id)
			return
		}
		var st Status
		if json.Unmarshal(r.Value, &st) == nil {
			s.tasks[id] = st
		}
	case strings.HasPrefix(key, limitsPrefix):
		name := strings.TrimPrefix(key, limitsPrefix)
		var l Limits
		if r.Tombstone() {
			delete(s.limits, name)
		} else if json.Unmarshal(r.Value, &l) == nil {
			s.limits[name] = l
		}
	case strings.HasPrefix(key, crashPrefix):
		name := strings.TrimPrefix(key, crashPrefix)
		var c Crash
		if r.Tombstone() {
			delete(s.crashes, name)
		} else if json.Unmarshal(r.Value, &c) == nil {
			s.crashes[name] = c
		}
		if s.onCrash != nil {
			s.onCrash(name)
		}
	case strings.HasPrefix(key, statusTopicPrefix):
		rest := strings.TrimPrefix(key, statusTopicPrefix)
		i := strings.Index(rest, ":connector-")
		if i < 0 {
			return
		}
		topic, conn := rest[:i], rest[i+len(":connector-"):]
		if r.Tombstone() {
			if m := s.topics[conn]; m != nil {
				delete(m, topic)
			}
			return
		}
		if s.topics[conn] == nil {
			s.topics[conn] = map[string]bool{}
		}
		s.topics[conn][topic] = true
	}
}

// PutConnector records a connector's status.
func (s *StatusStore) PutConnector(ctx context.Context, name string, st Status) error {
	b, _ := json.Marshal(st)
	return s.log.SendAndApply(ctx, []byte(statusConnectorPrefix+name), b)
}

// PutTask records a task's status.
func (s *StatusStore) PutTask(ctx context.Context, id TaskID, st Status) error {
	b, _ := json.Marshal(st)
	return s.log.SendAndApply(ctx, []byte(fmt.Sprintf("%s%s-%d", statusTaskPrefix, id.Connector, id.Task)), b)
}

// DeleteTask removes a task's status (the task no longer exists).
func (s *StatusStore) DeleteTask(ctx context.Context, id TaskID) error {
	return s.log.SendAndApply(ctx, []byte(fmt.Sprintf("%s%s-%d", statusTaskPrefix, id.Connector, id.Task)), nil)
}

// DeleteConnector removes a connector's status and its tasks' statuses.
func (s *StatusStore) DeleteConnector(ctx context.Context, name string) error {
	for _, id := range s.TaskIDs(name) {
		if err := s.DeleteTask(ctx, id); err != nil {
			return err
		}
	}
	if err := s.log.SendAndApply(ctx, []byte(limitsPrefix+name), nil); err != nil {
		return err
	}
	if _, ok := s.Crash(name); ok {
		if err := s.DeleteCrash(ctx, name); err != nil {
			return err
		}
	}
	return s.log.SendAndApply(ctx, []byte(statusConnectorPrefix+name), nil)
}

// PutLimits records a connector's task limits.
func (s *StatusStore) PutLimits(ctx context.Context, name string, l Limits) error {
	s.mu.Lock()
	cur, ok := s.limits[name]
	s.mu.Unlock()
	if ok && cur.TasksMax == l.TasksMax && cur.EffectiveTasks == l.EffectiveTasks && cur.Reason == l.Reason &&
		(cur.NaturalLimit == nil) == (l.NaturalLimit == nil) && (cur.NaturalLimit == nil || *cur.NaturalLimit == *l.NaturalLimit) {
		return nil
	}
	b, _ := json.Marshal(l)
	return s.log.SendAndApply(ctx, []byte(limitsPrefix+name), b)
}

// Limits returns a connector's recorded task limits.
func (s *StatusStore) Limits(name string) (Limits, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.limits[name]
	return l, ok
}

// Connector returns a connector's status.
func (s *StatusStore) Connector(name string) (Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.connectors[name]
	return st, ok
}

// Task returns a task's status.
func (s *StatusStore) Task(id TaskID) (Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.tasks[id]
	return st, ok
}

// TaskIDs returns the ids of a connector's tasks that have a status, sorted.
func (s *StatusStore) TaskIDs(connector string) []TaskID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []TaskID
	for id := range s.tasks {
		if id.Connector == connector {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b TaskID) int { return a.Task - b.Task })
	return ids
}

// PutTopic records that a connector's task used a topic (once per topic).
func (s *StatusStore) PutTopic(ctx context.Context, connector, topic string, task int) error {
	s.mu.Lock()
	known := s.topics[connector][topic]
	s.mu.Unlock()
	if known {
		return nil
	}
	var v topicStatusValue
	v.Topic.Name, v.Topic.Connector, v.Topic.Task = topic, connector, task
	v.Topic.DiscoverTimestamp = time.Now().UnixMilli()
	b, _ := json.Marshal(v)
	return s.log.SendAndApply(ctx, []byte(statusTopicPrefix+topic+":connector-"+connector), b)
}

// Topics returns the sorted topics a connector used.
func (s *StatusStore) Topics(connector string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.topics[connector]))
}

// ResetTopics forgets the topics a connector used.
func (s *StatusStore) ResetTopics(ctx context.Context, connector string) error {
	for _, t := range s.Topics(connector) {
		if err := s.log.SendAndApply(ctx, []byte(statusTopicPrefix+t+":connector-"+connector), nil); err != nil {
			return err
		}
	}
	return nil
}

// PutCrash records that a worker crashed running the connector's code.
func (s *StatusStore) PutCrash(ctx context.Context, name string, c Crash) error {
	b, _ := json.Marshal(c)
	return s.log.SendAndApply(ctx, []byte(crashPrefix+name), b)
}

// DeleteCrash forgets a connector's crash (a restart asked for).
func (s *StatusStore) DeleteCrash(ctx context.Context, name string) error {
	return s.log.SendAndApply(ctx, []byte(crashPrefix+name), nil)
}

// Crash returns a connector's recorded crash.
func (s *StatusStore) Crash(name string) (Crash, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.crashes[name]
	return c, ok
}

// OnCrashChange calls f (with the store's lock held: f must not block or
// call the store) whenever a connector's crash record is written or
// removed, by any worker.
func (s *StatusStore) OnCrashChange(f func(connector string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onCrash = f
}

// Close stops following the topic.
func (s *StatusStore) Close() { s.log.Close() }
