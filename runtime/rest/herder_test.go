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

package rest

// memHerder is an in-memory connectapi.Herder: a test double that drives
// the REST layer through every path, status code and body without Kafka.
// The real herder needs Kafka (kfake) for its config, offset and status
// topics and is tested against it in its own package; what this package
// owns, and what these tests check, is the HTTP layer on top of the
// connectapi contract.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

const (
	fakeSinkClass   = "org.conveyor.FileSinkConnector"
	fakeSourceClass = "org.conveyor.RangeSourceConnector"
	fakeWorkerID    = "10.0.0.7:8083"
	fakePartitions  = 4 // partitions of every sink's topics in this double
)

type memTask struct {
	state, trace string
}

type memConnector struct {
	cfg     map[string]string
	state   string
	trace   string
	tasks   []memTask
	offsets []connectapi.ConnectorOffset
	topics  []string
}

type memHerder struct {
	mu         sync.Mutex
	leader     bool
	leaderURL  string
	notReady   error // Ready's answer
	rebalance  bool  // writes fail with ErrRebalanceInProgress
	block      bool  // calls wait for ctx (timeouts)
	conns      map[string]*memConnector
	writes     []string // write calls seen, for forwarding tests
	lastConfig map[string]string
}

func newMemHerder() *memHerder {
	return &memHerder{leader: true, conns: map[string]*memConnector{}}
}

// seed adds a running sink with a failed task and a stopped source.
func (h *memHerder) seed() *memHerder {
	h.conns["sink-a"] = &memConnector{
		cfg: map[string]string{
			"name": "sink-a", "connector.class": fakeSinkClass, "tasks.max": "2",
			"topics": "orders", "file": "/tmp/out.txt",
			"password": "${secret:db-creds:password}",
		},
		state: connectapi.StateRunning,
		tasks: []memTask{
			{state: connectapi.StateRunning},
			{state: connectapi.StateFailed, trace: "java.lang.Exception: disk full\n\tat Sink.put"},
		},
		offsets: []connectapi.ConnectorOffset{{
			Partition: map[string]any{"kafka_topic": "orders", "kafka_partition": 0},
			Offset:    map[string]any{"kafka_offset": 42},
		}},
		topics: []string{"orders"},
	}
	h.conns["source-b"] = &memConnector{
		cfg: map[string]string{
			"name": "source-b", "connector.class": fakeSourceClass, "tasks.max": "1",
			"topic": "ids", "range.end": "1000",
		},
		state: connectapi.StateStopped,
		offsets: []connectapi.ConnectorOffset{{
			Partition: map[string]any{"range": "0-1000"},
			Offset:    map[string]any{"next": 500},
		}},
		topics: []string{"ids"},
	}
	return h
}

func (h *memHerder) enter(ctx context.Context) {
	h.mu.Lock()
	if h.block {
		h.mu.Unlock()
		<-ctx.Done()
		h.mu.Lock()
	}
}

func (h *memHerder) write(ctx context.Context, call string) error {
	h.writes = append(h.writes, call)
	if h.block {
		return ctx.Err()
	}
	if h.rebalance {
		return connectapi.RebalanceInProgress()
	}
	if !h.leader {
		return &connectapi.NotLeaderError{LeaderURL: h.leaderURL}
	}
	return nil
}

func (h *memHerder) get(name string) (*memConnector, error) {
	c, ok := h.conns[name]
	if !ok {
		return nil, connectapi.ConnectorNotFound(name)
	}
	return c, nil
}

func connectorType(cfg map[string]string) connectapi.ConnectorType {
	switch cfg["connector.class"] {
	case fakeSinkClass:
		return connectapi.TypeSink
	case fakeSourceClass:
		return connectapi.TypeSource
	}
	return connectapi.TypeUnknown
}

func (h *memHerder) ServerInfo(ctx context.Context) (connectapi.ServerInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	return connectapi.ServerInfo{Version: "0.1.0-test", Commit: "abc1234", KafkaClusterID: "kfake-cluster-1"}, nil
}

func (h *memHerder) Ready(ctx context.Context) error {
	h.enter(ctx)
	defer h.mu.Unlock()
	return h.notReady
}

func (h *memHerder) IsLeader() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leader
}

func (h *memHerder) LeaderURL() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leaderURL
}

func (h *memHerder) ListConnectors(ctx context.Context) ([]string, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	if h.block {
		return nil, ctx.Err()
	}
	return slices.Sorted(maps.Keys(h.conns)), nil
}

func (h *memHerder) info(name string, c *memConnector) connectapi.ConnectorInfo {
	info := connectapi.ConnectorInfo{Name: name, Config: maps.Clone(c.cfg), Type: connectorType(c.cfg)}
	for i := range c.tasks {
		info.Tasks = append(info.Tasks, connectapi.ConnectorTaskID{Connector: name, Task: i})
	}
	return info
}

func (h *memHerder) ConnectorInfo(ctx context.Context, name string) (connectapi.ConnectorInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	return h.info(name, c), nil
}

func (h *memHerder) status(name string, c *memConnector) connectapi.ConnectorStateInfo {
	st := connectapi.ConnectorStateInfo{
		Name:      name,
		Connector: connectapi.ConnectorState{State: c.state, WorkerID: fakeWorkerID, Trace: c.trace},
		Type:      connectorType(c.cfg),
	}
	for i, t := range c.tasks {
		st.Tasks = append(st.Tasks, connectapi.TaskState{ID: i, State: t.state, WorkerID: fakeWorkerID, Trace: t.trace})
	}
	return st
}

func (h *memHerder) ConnectorStatus(ctx context.Context, name string) (connectapi.ConnectorStateInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.ConnectorStateInfo{}, err
	}
	return h.status(name, c), nil
}

func (h *memHerder) ConnectorConfig(ctx context.Context, name string) (map[string]string, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return nil, err
	}
	return maps.Clone(c.cfg), nil
}

// apply (re)builds a connector from its config: tasks.max tasks, capped by
// the partitions for a sink.
func (h *memHerder) apply(c *memConnector) error {
	if connectorType(c.cfg) == connectapi.TypeUnknown {
		return connectapi.BadRequestf("Connector config has an unknown connector.class: use one of %s, %s", fakeSinkClass, fakeSourceClass)
	}
	n, err := strconv.Atoi(c.cfg["tasks.max"])
	if err != nil || n < 1 {
		n = 1
	}
	if connectorType(c.cfg) == connectapi.TypeSink {
		n = min(n, fakePartitions)
	}
	taskState := connectapi.StateRunning
	if c.state != connectapi.StateRunning {
		taskState = c.state
	}
	c.tasks = make([]memTask, n)
	for i := range c.tasks {
		c.tasks[i].state = taskState
	}
	if c.state == connectapi.StateStopped {
		c.tasks = nil
	}
	return nil
}

func (h *memHerder) CreateConnector(ctx context.Context, req connectapi.CreateConnectorRequest) (connectapi.ConnectorInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "create "+req.Name); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	h.lastConfig = maps.Clone(req.Config)
	if _, ok := h.conns[req.Name]; ok {
		return connectapi.ConnectorInfo{}, connectapi.ConnectorAlreadyExists(req.Name)
	}
	state := string(req.InitialState)
	if state == "" {
		state = connectapi.StateRunning
	}
	c := &memConnector{cfg: maps.Clone(req.Config), state: state}
	if err := h.apply(c); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	h.conns[req.Name] = c
	return h.info(req.Name, c), nil
}

func (h *memHerder) PutConnectorConfig(ctx context.Context, name string, cfg map[string]string) (connectapi.ConnectorInfo, bool, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "put "+name); err != nil {
		return connectapi.ConnectorInfo{}, false, err
	}
	h.lastConfig = maps.Clone(cfg)
	c, exists := h.conns[name]
	if !exists {
		c = &memConnector{state: connectapi.StateRunning}
	}
	next := *c
	next.cfg = maps.Clone(cfg)
	if err := h.apply(&next); err != nil {
		return connectapi.ConnectorInfo{}, false, err
	}
	h.conns[name] = &next
	return h.info(name, &next), !exists, nil
}

func (h *memHerder) PatchConnectorConfig(ctx context.Context, name string, patch connectapi.ConfigPatch) (connectapi.ConnectorInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "patch "+name); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	c, err := h.get(name)
	if err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	next := *c
	next.cfg = maps.Clone(c.cfg)
	for k, v := range patch {
		if v == nil {
			delete(next.cfg, k)
		} else {
			next.cfg[k] = *v
		}
	}
	if err := h.apply(&next); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	h.conns[name] = &next
	return h.info(name, &next), nil
}

func (h *memHerder) DeleteConnector(ctx context.Context, name string) error {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "delete "+name); err != nil {
		return err
	}
	if _, err := h.get(name); err != nil {
		return err
	}
	delete(h.conns, name)
	return nil
}

func (h *memHerder) TaskConfigs(ctx context.Context, name string) ([]connectapi.TaskInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return nil, err
	}
	var out []connectapi.TaskInfo
	for i := range c.tasks {
		cfg := map[string]string{"task.index": strconv.Itoa(i)}
		if t, ok := c.cfg["topics"]; ok {
			cfg["topics"] = t
		}
		out = append(out, connectapi.TaskInfo{ID: connectapi.ConnectorTaskID{Connector: name, Task: i}, Config: cfg})
	}
	return out, nil
}

func (h *memHerder) TaskStatus(ctx context.Context, id connectapi.ConnectorTaskID) (connectapi.TaskState, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(id.Connector)
	if err != nil {
		return connectapi.TaskState{}, err
	}
	if id.Task >= len(c.tasks) {
		return connectapi.TaskState{}, connectapi.TaskNotFound(id)
	}
	t := c.tasks[id.Task]
	return connectapi.TaskState{ID: id.Task, State: t.state, WorkerID: fakeWorkerID, Trace: t.trace}, nil
}

func (h *memHerder) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*connectapi.ConnectorStateInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "restart "+name); err != nil {
		return nil, err
	}
	c, err := h.get(name)
	if err != nil {
		return nil, err
	}
	if !includeTasks && !onlyFailed {
		return nil, nil
	}
	st := h.status(name, c)
	if !onlyFailed || st.Connector.State == connectapi.StateFailed {
		st.Connector.State, st.Connector.Trace = connectapi.StateRestarting, ""
	}
	if includeTasks {
		for i := range st.Tasks {
			if !onlyFailed || st.Tasks[i].State == connectapi.StateFailed {
				st.Tasks[i].State, st.Tasks[i].Trace = connectapi.StateRestarting, ""
			}
		}
	}
	return &st, nil
}

func (h *memHerder) RestartTask(ctx context.Context, id connectapi.ConnectorTaskID) error {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "restart-task "+id.String()); err != nil {
		return err
	}
	c, err := h.get(id.Connector)
	if err != nil {
		return err
	}
	if id.Task >= len(c.tasks) {
		return connectapi.NotFoundf("Task %s not found", id)
	}
	c.tasks[id.Task] = memTask{state: connectapi.StateRunning}
	return nil
}

func (h *memHerder) setState(ctx context.Context, name, state string) error {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, state+" "+name); err != nil {
		return err
	}
	c, err := h.get(name)
	if err != nil {
		return err
	}
	c.state = state
	return h.apply(c)
}

func (h *memHerder) Pause(ctx context.Context, name string) error {
	return h.setState(ctx, name, connectapi.StatePaused)
}

func (h *memHerder) Resume(ctx context.Context, name string) error {
	return h.setState(ctx, name, connectapi.StateRunning)
}

func (h *memHerder) Stop(ctx context.Context, name string) error {
	return h.setState(ctx, name, connectapi.StateStopped)
}

func (h *memHerder) Offsets(ctx context.Context, name string) (connectapi.ConnectorOffsets, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.ConnectorOffsets{}, err
	}
	return connectapi.ConnectorOffsets{Offsets: slices.Clone(c.offsets)}, nil
}

func (h *memHerder) stopped(name string) (*memConnector, error) {
	c, err := h.get(name)
	if err != nil {
		return nil, err
	}
	if c.state != connectapi.StateStopped {
		return nil, connectapi.OffsetsNotStopped(name)
	}
	return c, nil
}

func (h *memHerder) AlterOffsets(ctx context.Context, name string, offsets connectapi.ConnectorOffsets) (connectapi.Message, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "alter-offsets "+name); err != nil {
		return connectapi.Message{}, err
	}
	c, err := h.stopped(name)
	if err != nil {
		return connectapi.Message{}, err
	}
	c.offsets = offsets.Offsets
	if connectorType(c.cfg) == connectapi.TypeSink {
		return connectapi.Message{Message: connectapi.MessageSinkOffsetsAltered}, nil
	}
	return connectapi.Message{Message: connectapi.MessageSourceOffsetsAltered}, nil
}

func (h *memHerder) ResetOffsets(ctx context.Context, name string) (connectapi.Message, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "reset-offsets "+name); err != nil {
		return connectapi.Message{}, err
	}
	c, err := h.stopped(name)
	if err != nil {
		return connectapi.Message{}, err
	}
	c.offsets = nil
	if connectorType(c.cfg) == connectapi.TypeSink {
		return connectapi.Message{Message: connectapi.MessageSinkOffsetsReset}, nil
	}
	return connectapi.Message{Message: connectapi.MessageSourceOffsetsReset}, nil
}

func (h *memHerder) ActiveTopics(ctx context.Context, name string) (connectapi.ActiveTopicsInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.ActiveTopicsInfo{}, err
	}
	return connectapi.ActiveTopicsInfo{Connector: name, Topics: slices.Clone(c.topics)}, nil
}

func (h *memHerder) ResetActiveTopics(ctx context.Context, name string) error {
	h.enter(ctx)
	defer h.mu.Unlock()
	if err := h.write(ctx, "reset-topics "+name); err != nil {
		return err
	}
	c, err := h.get(name)
	if err != nil {
		return err
	}
	c.topics = nil
	return nil
}

func (h *memHerder) Plugins(ctx context.Context, connectorsOnly bool) ([]connectapi.PluginInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	out := []connectapi.PluginInfo{
		{Class: fakeSinkClass, Type: connectapi.PluginSink, Version: "0.1.0"},
		{Class: fakeSourceClass, Type: connectapi.PluginSource, Version: "0.1.0"},
	}
	if !connectorsOnly {
		out = append(out,
			connectapi.PluginInfo{Class: "org.conveyor.JsonConverter", Type: connectapi.PluginConverter},
			connectapi.PluginInfo{Class: "org.conveyor.StringConverter", Type: connectapi.PluginConverter})
	}
	return out, nil
}

func strp(s string) *string { return &s }

func (h *memHerder) definitions(plugin string) ([]connectapi.ConfigKeyInfo, error) {
	switch plugin {
	case fakeSinkClass, "FileSink", "FileSinkConnector":
		return []connectapi.ConfigKeyInfo{
			{Name: "topics", Type: "LIST", Required: true, Importance: "HIGH",
				Documentation: "Topics to consume.", Group: "Common", Width: "LONG", DisplayName: "Topics", Order: 1},
			{Name: "file", Type: "STRING", Required: true, Importance: "HIGH",
				Documentation: "File to append records to.", Group: "File", Width: "LONG", DisplayName: "File", Order: 1},
			{Name: "batch.size", Type: "INT", DefaultValue: strp("500"), Importance: "LOW",
				Documentation: "Records per write.", Group: "File", Width: "SHORT", DisplayName: "Batch size",
				Dependents: []string{"file"}, Order: 2},
		}, nil
	}
	return nil, connectapi.NotFoundf("Plugin %s not found: GET /connector-plugins lists the installed ones", plugin)
}

func (h *memHerder) PluginConfig(ctx context.Context, plugin string) ([]connectapi.ConfigKeyInfo, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	return h.definitions(plugin)
}

func (h *memHerder) ValidateConfig(ctx context.Context, plugin string, cfg map[string]string) (connectapi.ConfigInfos, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	h.lastConfig = maps.Clone(cfg)
	defs, err := h.definitions(plugin)
	if err != nil {
		return connectapi.ConfigInfos{}, err
	}
	out := connectapi.ConfigInfos{Name: fakeSinkClass, Groups: []string{"Common", "File"}}
	for _, d := range defs {
		v := connectapi.ConfigValueInfo{Name: d.Name, Visible: true}
		if s, ok := cfg[d.Name]; ok {
			v.Value = &s
		} else if d.DefaultValue != nil {
			v.Value = d.DefaultValue
		} else if d.Required {
			v.Errors = []string{fmt.Sprintf("Missing required configuration %q which has no default value.", d.Name)}
			out.ErrorCount++
		}
		out.Configs = append(out.Configs, connectapi.ConfigInfo{Definition: d, Value: v})
	}
	return out, nil
}

func (h *memHerder) Limits(ctx context.Context, name string) (connectapi.Limits, error) {
	h.enter(ctx)
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.Limits{}, err
	}
	max, _ := strconv.Atoi(c.cfg["tasks.max"])
	l := connectapi.Limits{TasksMax: max, EffectiveTasks: max, Reason: "TasksMax"}
	if connectorType(c.cfg) == connectapi.TypeSink {
		n := fakePartitions
		l.NaturalLimit = &n
		if n < max {
			l.EffectiveTasks, l.Reason = n, "TopicPartitions"
		}
	}
	return l, nil
}

var _ connectapi.Herder = (*memHerder)(nil)
