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

// Package plugin is the API that Conveyor connectors implement and that the
// worker runtime drives. It is deliberately small: a [Connector] validates
// its configuration, reports its natural task limit and splits its work into
// task configurations; a [SourceTask] polls records and learns which of them
// Kafka acknowledged; a [SinkTask] receives batches of records and flushes
// them. A [Plugin] bundles a connector with its task and a self-describing
// [ConfigSpec]; a [Registry] holds the plugins a worker offers.
//
// The semantics follow Kafka Connect's connect-api (Connector, SourceTask,
// SinkTask, ConfigDef), in Go idiom: contexts for cancellation, errors
// instead of exceptions, log/slog for logging. Bundled connectors import
// only this package and runtime/data.
package plugin

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Records and related types live in runtime/data; these aliases let
// connector code refer to them through the plugin package.
type (
	// SourceRecord is a record produced by a source task.
	SourceRecord = data.SourceRecord
	// SinkRecord is a record delivered to a sink task.
	SinkRecord = data.SinkRecord
	// TopicPartition names one partition of a Kafka topic.
	TopicPartition = data.TopicPartition
)

// Kind is whether a connector reads from a system into Kafka (source) or
// writes from Kafka into a system (sink). The values are Kafka Connect's
// REST "type" strings.
type Kind string

// Connector kinds.
const (
	KindSource Kind = "source"
	KindSink   Kind = "sink"
)

// Reason says what bounds the number of tasks a connector runs. The string
// values are part of the REST API (GET /connectors/{c}/limits) and of the
// operator's status; never change them.
type Reason string

// Reasons for a task limit.
const (
	// TopicPartitions: a sink cannot use more tasks than its topics have partitions.
	TopicPartitions Reason = "TopicPartitions"
	// Tables: one task per table at most.
	Tables Reason = "Tables"
	// Files: one task per file at most.
	Files Reason = "Files"
	// Ranges: one task per key range at most.
	Ranges Reason = "Ranges"
	// SingleReader: the source can only be read by one task (a replication
	// slot, a single socket, ...).
	SingleReader Reason = "SingleReader"
	// TasksMax: the user's tasks.max is the binding limit (the connector has
	// no natural limit or a larger one).
	TasksMax Reason = "TasksMax"
)

// NoLimit is the natural limit of a connector that can use any number of
// tasks. Any negative limit means the same.
const NoLimit = -1

// EffectiveTasks returns how many tasks a connector runs, given the user's
// tasks.max and the connector's natural limit, and the reason for that
// number: min(tasksMax, limit). When the natural limit does not bind
// (NoLimit, or limit >= tasksMax) the reason is [TasksMax]. A tasksMax below
// 1 counts as 1. A share-mode sink ([NoLimit] with reason [ShareGroupMode])
// runs tasksMax tasks with that reason. A natural limit of 0 (no work, e.g. no files) yields 0
// tasks with the connector's reason.
func EffectiveTasks(tasksMax int, limit int, reason Reason) (int, Reason) {
	if tasksMax < 1 {
		tasksMax = 1
	}
	if limit < 0 && reason == ShareGroupMode {
		// A share-mode sink: tasks.max binds, and the reason says that
		// the share group, not the partition count, set the bound.
		return tasksMax, ShareGroupMode
	}
	if limit < 0 || limit >= tasksMax {
		return tasksMax, TasksMax
	}
	if reason == "" {
		reason = TasksMax
	}
	return limit, reason
}

// ErrTooManyTaskConfigs is returned (wrapped) by [CheckTaskConfigs] when a
// connector returned more task configs than tasks.max (KIP-1004).
var ErrTooManyTaskConfigs = errors.New("connector generated more task configurations than tasks.max")

// CheckTaskConfigs enforces KIP-1004: a connector must not return more task
// configurations than tasks.max.
func CheckTaskConfigs(connector string, tasksMax int, configs []map[string]string) error {
	if len(configs) > tasksMax {
		return fmt.Errorf("connector %q: %w: it returned %d task configs for tasks.max=%d; raise tasks.max or fix the connector",
			connector, ErrTooManyTaskConfigs, len(configs), tasksMax)
	}
	return nil
}

// Plugin describes one connector implementation that a worker offers.
type Plugin struct {
	// Class is the full class name, for example
	// "dev.conveyor.connect.file.FileSourceConnector". Users put it (or an
	// alias) into connector.class.
	Class string
	// Aliases are further names the plugin answers to, for example a Kafka
	// class name it is compatible with. The registry also derives the simple
	// name (after the last dot) and the simple name without "Connector".
	Aliases []string
	// Kind is source or sink.
	Kind Kind
	// Version is the plugin version shown by GET /connector-plugins.
	Version string
	// Doc describes the plugin in one or two sentences.
	Doc string
	// Spec lists the connector-specific configuration fields. The common
	// fields (name, tasks.max, converters, topics...) come from [CommonSpec]
	// and must not be repeated here.
	Spec ConfigSpec
	// NewConnector returns a fresh, unstarted connector.
	NewConnector func() Connector
	// NewSourceTask returns a fresh source task; set for source plugins.
	NewSourceTask func() SourceTask
	// NewSinkTask returns a fresh sink task; set for sink plugins.
	NewSinkTask func() SinkTask
}

// FullSpec returns the common fields for the plugin's kind followed by the
// plugin's own fields.
func (p Plugin) FullSpec() ConfigSpec {
	common := CommonSpec(p.Kind)
	return ConfigSpec{Fields: append(common.Fields, p.Spec.Fields...)}
}

func (p Plugin) check() error {
	if p.Class == "" {
		return errors.New("plugin without a class name")
	}
	if p.Kind != KindSource && p.Kind != KindSink {
		return fmt.Errorf("plugin %s: kind %q is neither source nor sink", p.Class, p.Kind)
	}
	if p.NewConnector == nil {
		return fmt.Errorf("plugin %s: NewConnector is nil", p.Class)
	}
	if p.Kind == KindSource && p.NewSourceTask == nil {
		return fmt.Errorf("plugin %s: source plugin without NewSourceTask", p.Class)
	}
	if p.Kind == KindSink && p.NewSinkTask == nil {
		return fmt.Errorf("plugin %s: sink plugin without NewSinkTask", p.Class)
	}
	common := CommonSpec(p.Kind)
	for _, f := range p.Spec.Fields {
		if common.Field(f.Name) != nil {
			return fmt.Errorf("plugin %s: field %q is a common connector field; remove it from the plugin spec", p.Class, f.Name)
		}
	}
	if err := p.FullSpec().check(); err != nil {
		return fmt.Errorf("plugin %s: %w", p.Class, err)
	}
	return nil
}

// names returns every name the plugin answers to.
func (p Plugin) names() []string {
	out := []string{p.Class}
	add := func(n string) {
		if n == "" {
			return
		}
		for _, x := range out {
			if x == n {
				return
			}
		}
		out = append(out, n)
	}
	for _, full := range append([]string{p.Class}, p.Aliases...) {
		add(full)
		simple := full[strings.LastIndexByte(full, '.')+1:]
		add(simple)
		add(strings.TrimSuffix(simple, "Connector"))
	}
	return out
}

// Registry holds plugins by class name and alias. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	plugins map[string]*Plugin // by class
	names   map[string]*Plugin // by every name
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{plugins: map[string]*Plugin{}, names: map[string]*Plugin{}}
}

// Register adds a plugin. It fails when the plugin is incomplete or when
// one of its names (class, aliases, derived simple names) is taken.
func (r *Registry) Register(p Plugin) error {
	if err := p.check(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	names := p.names()
	for _, n := range names {
		if other, ok := r.names[n]; ok {
			return fmt.Errorf("registering plugin %s: name %q is already taken by %s", p.Class, n, other.Class)
		}
	}
	pp := &p
	r.plugins[p.Class] = pp
	for _, n := range names {
		r.names[n] = pp
	}
	return nil
}

// MustRegister is Register that panics on error, for package setup.
func (r *Registry) MustRegister(p Plugin) {
	if err := r.Register(p); err != nil {
		panic(err)
	}
}

// Lookup finds a plugin by full class name or alias.
func (r *Registry) Lookup(name string) (Plugin, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.names[strings.TrimSpace(name)]
	if !ok {
		return Plugin{}, false
	}
	return *p, true
}

// List returns all plugins sorted by class name.
func (r *Registry) List() []Plugin {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Plugin, 0, len(r.plugins))
	for _, p := range r.plugins {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}
