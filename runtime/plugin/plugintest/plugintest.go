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

// Package plugintest offers in-memory implementations of the contexts the
// runtime gives connectors and tasks, so connectors can be tested through
// the plugin API without Kafka.
package plugintest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Discard is a logger that drops everything.
var Discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// ConnectorContext is an in-memory plugin.ConnectorContext with settable
// topics.
type ConnectorContext struct {
	mu              sync.Mutex
	topics          map[string]int32
	reconfigs       int
	errors          []error
	reconfigSignals chan struct{}
	Log             *slog.Logger
}

// NewConnectorContext returns a context whose cluster has the given topics
// and partition counts.
func NewConnectorContext(topics map[string]int32) *ConnectorContext {
	c := &ConnectorContext{topics: map[string]int32{}, reconfigSignals: make(chan struct{}, 1), Log: Discard}
	for k, v := range topics {
		c.topics[k] = v
	}
	return c
}

// SetPartitions creates or grows a topic.
func (c *ConnectorContext) SetPartitions(topic string, n int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.topics[topic] = n
}

// Logger implements plugin.ConnectorContext.
func (c *ConnectorContext) Logger() *slog.Logger { return c.Log }

// RequestTaskReconfiguration counts requests and signals Reconfigured.
func (c *ConnectorContext) RequestTaskReconfiguration() {
	c.mu.Lock()
	c.reconfigs++
	c.mu.Unlock()
	select {
	case c.reconfigSignals <- struct{}{}:
	default:
	}
}

// Reconfigured is signalled (coalesced) on each reconfiguration request.
func (c *ConnectorContext) Reconfigured() <-chan struct{} { return c.reconfigSignals }

// Reconfigurations returns how many reconfigurations were requested.
func (c *ConnectorContext) Reconfigurations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconfigs
}

// RaiseError records err.
func (c *ConnectorContext) RaiseError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errors = append(c.errors, err)
}

// Go runs f as the runtime does: a panic or an error of f is raised
// (see Errors) instead of ending the test binary.
func (c *ConnectorContext) Go(f func() error) {
	guard.Go("connector goroutine", f, c.RaiseError)
}

// Errors returns the raised errors.
func (c *ConnectorContext) Errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errors...)
}

// TopicPartitions implements plugin.ConnectorContext.
func (c *ConnectorContext) TopicPartitions(_ context.Context, topics []string) (map[string]int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int32{}
	for _, t := range topics {
		if n, ok := c.topics[t]; ok {
			out[t] = n
		}
	}
	return out, nil
}

// ListTopics implements plugin.ConnectorContext.
func (c *ConnectorContext) ListTopics(context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.topics))
	for t := range c.topics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}

// OffsetStore is an in-memory source offset store. Offsets go through
// JSON like in the real store, so numbers read back as float64.
type OffsetStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewOffsetStore returns an empty store.
func NewOffsetStore() *OffsetStore { return &OffsetStore{m: map[string][]byte{}} }

func key(partition map[string]any) (string, error) {
	b, err := json.Marshal(partition) // map keys are sorted: canonical
	if err != nil {
		return "", fmt.Errorf("encoding source partition: %w", err)
	}
	return string(b), nil
}

// Put stores the offset of a source partition.
func (s *OffsetStore) Put(partition, offset map[string]any) error {
	k, err := key(partition)
	if err != nil {
		return err
	}
	v, err := json.Marshal(offset)
	if err != nil {
		return fmt.Errorf("encoding source offset: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = v
	return nil
}

// Len returns the number of stored partitions.
func (s *OffsetStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Offset implements plugin.OffsetReader.
func (s *OffsetStore) Offset(_ context.Context, partition map[string]any) (map[string]any, error) {
	k, err := key(partition)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	v, ok := s.m[k]
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	var out map[string]any
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("decoding source offset: %w", err)
	}
	return out, nil
}

// Offsets implements plugin.OffsetReader.
func (s *OffsetStore) Offsets(ctx context.Context, partitions []map[string]any) ([]map[string]any, error) {
	out := make([]map[string]any, len(partitions))
	for i, p := range partitions {
		o, err := s.Offset(ctx, p)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

// SourceTaskContext is an in-memory plugin.SourceTaskContext.
type SourceTaskContext struct {
	Store *OffsetStore
	Log   *slog.Logger
	// Failures are the failures of the task's goroutines.
	Failures Failures
}

// Logger implements plugin.SourceTaskContext.
func (c *SourceTaskContext) Logger() *slog.Logger {
	if c.Log == nil {
		return Discard
	}
	return c.Log
}

// OffsetReader implements plugin.SourceTaskContext.
func (c *SourceTaskContext) OffsetReader() plugin.OffsetReader { return c.Store }

// Go implements plugin.SourceTaskContext: see [Failures].
func (c *SourceTaskContext) Go(f func() error) { c.Failures.Go(f) }

// Failures keeps what the goroutines a task started through Go ended
// with: their errors and recovered panics, as the runtime would fail the
// task with them.
type Failures struct {
	mu   sync.Mutex
	errs []error
}

// Go runs f through the runtime's guard and keeps its failure.
func (fs *Failures) Go(f func() error) {
	guard.Go("task goroutine", f, func(err error) {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.errs = append(fs.errs, err)
	})
}

// Errors returns the failures so far.
func (fs *Failures) Errors() []error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]error(nil), fs.errs...)
}

// SinkTaskContext is an in-memory plugin.SinkTaskContext.
type SinkTaskContext struct {
	mu         sync.Mutex
	assignment []plugin.TopicPartition
	paused     map[plugin.TopicPartition]bool
	commits    int
	resets     map[plugin.TopicPartition]int64
	Log        *slog.Logger
	// Errant, when set, is the context's errant record reporter (nil: the
	// context has none, as without a dead letter queue or error log).
	Errant *ErrantRecords
	// Failures are the failures of the task's goroutines.
	Failures Failures
}

// ErrantRecords is an errant record reporter that keeps what it was
// given. With Tolerate false it refuses every record, as under
// errors.tolerance=none.
type ErrantRecords struct {
	Tolerate bool
	mu       sync.Mutex
	records  []*plugin.SinkRecord
	errs     []error
}

// Report implements plugin.ErrantRecordReporter.
func (e *ErrantRecords) Report(_ context.Context, rec *plugin.SinkRecord, err error) error {
	if !e.Tolerate {
		return fmt.Errorf("not tolerated: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records = append(e.records, rec)
	e.errs = append(e.errs, err)
	return nil
}

// Reported returns the records reported so far and their errors.
func (e *ErrantRecords) Reported() ([]*plugin.SinkRecord, []error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*plugin.SinkRecord(nil), e.records...), append([]error(nil), e.errs...)
}

// ErrantRecordReporter implements plugin.SinkTaskContext.
func (c *SinkTaskContext) ErrantRecordReporter() plugin.ErrantRecordReporter {
	if c.Errant == nil {
		return nil
	}
	return c.Errant
}

// NewSinkTaskContext returns a context with the given assignment.
func NewSinkTaskContext(assignment ...plugin.TopicPartition) *SinkTaskContext {
	return &SinkTaskContext{assignment: assignment, paused: map[plugin.TopicPartition]bool{}, resets: map[plugin.TopicPartition]int64{}, Log: Discard}
}

// StartSinkTask starts task with a NewSinkTaskContext and config, failing
// the test on an error, and stops it when the test ends.
func StartSinkTask[T plugin.SinkTask](t testing.TB, task T, config map[string]string) T {
	t.Helper()
	if err := task.Start(context.Background(), NewSinkTaskContext(), config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

// Logger implements plugin.SinkTaskContext.
func (c *SinkTaskContext) Logger() *slog.Logger { return c.Log }

// Go implements plugin.SinkTaskContext: see [Failures].
func (c *SinkTaskContext) Go(f func() error) { c.Failures.Go(f) }

// Assignment implements plugin.SinkTaskContext.
func (c *SinkTaskContext) Assignment() []plugin.TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]plugin.TopicPartition(nil), c.assignment...)
}

// Pause implements plugin.SinkTaskContext.
func (c *SinkTaskContext) Pause(tps ...plugin.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		c.paused[tp] = true
	}
}

// Resume implements plugin.SinkTaskContext.
func (c *SinkTaskContext) Resume(tps ...plugin.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		delete(c.paused, tp)
	}
}

// Paused reports whether a partition is paused.
func (c *SinkTaskContext) Paused(tp plugin.TopicPartition) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused[tp]
}

// RequestCommit implements plugin.SinkTaskContext.
func (c *SinkTaskContext) RequestCommit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commits++
}

// CommitRequests returns how many commits were requested.
func (c *SinkTaskContext) CommitRequests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits
}

// ResetOffsets implements plugin.SinkTaskContext.
func (c *SinkTaskContext) ResetOffsets(offsets map[plugin.TopicPartition]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range offsets {
		c.resets[k] = v
	}
}

// Resets returns the offsets requested through ResetOffsets.
func (c *SinkTaskContext) Resets() map[plugin.TopicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[plugin.TopicPartition]int64{}
	for k, v := range c.resets {
		out[k] = v
	}
	return out
}

// Drain polls a started source task until it has returned want records or
// maxEmptyPolls consecutive polls returned nothing. After each non-empty
// batch it acknowledges every record (CommitRecord), stores the source
// offsets in store (when not nil) and calls Commit, like the runtime does.
func Drain(ctx context.Context, task plugin.SourceTask, store *OffsetStore, want, maxEmptyPolls int) ([]*plugin.SourceRecord, error) {
	var out []*plugin.SourceRecord
	empty := 0
	for len(out) < want && empty < maxEmptyPolls {
		recs, err := task.Poll(ctx)
		if err != nil {
			return out, err
		}
		if len(recs) == 0 {
			empty++
			continue
		}
		empty = 0
		for i, r := range recs {
			md := &plugin.RecordMetadata{Topic: r.Topic, Offset: int64(len(out) + i)}
			if err := task.CommitRecord(r, md); err != nil {
				return out, fmt.Errorf("CommitRecord: %w", err)
			}
			if store != nil && r.SourcePartition != nil {
				if err := store.Put(r.SourcePartition, r.SourceOffset); err != nil {
					return out, err
				}
			}
		}
		if err := task.Commit(ctx); err != nil {
			return out, fmt.Errorf("Commit: %w", err)
		}
		out = append(out, recs...)
	}
	return out, nil
}

// Backlog is rep's backlog figure for config and offsets, failing t on an
// error or on a unit other than rep.BacklogUnit(config).
func Backlog(t testing.TB, ctx context.Context, rep plugin.BacklogReporter, config map[string]string, offsets plugin.OffsetReader) int64 {
	t.Helper()
	b, err := rep.Backlog(ctx, config, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if want := rep.BacklogUnit(config); b.Unit != want || want == "" {
		t.Fatalf("backlog unit %q, and BacklogUnit says %q", b.Unit, want)
	}
	return b.Value
}
