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

package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/task"
)

// taskRuntime starts runtime/task runners for the herder.
type taskRuntime struct {
	kafka         []kgo.Opt
	workerConv    map[string]string
	offsets       *store.OffsetStore
	metrics       *metrics.Metrics
	log           *slog.Logger
	flushInterval time.Duration
	flushTimeout  time.Duration
	// consumer holds the worker's consumer.* settings (prefix removed).
	consumer map[string]string
	// producer and admin hold the worker's producer.* and admin.*
	// settings (prefix removed).
	producer, admin map[string]string
	// conn is the worker's Kafka connection in parts (a connector's own
	// identity replaces its security); policy decides which client
	// settings connectors may override.
	conn   *clientconfig.Connection
	policy clientconfig.Policy
	// topicCreation is topic.creation.enable.
	topicCreation bool
	// topicUsed records that a connector's task wrote to a topic (the
	// active topics of GET /connectors/{c}/topics); may be nil.
	topicUsed func(ctx context.Context, connector, topic string, task int) error
	// scrubFor hides one connector's resolved values (dead letter queue
	// headers); nil hides nothing.
	scrubFor func(connector, msg string) string
	// instanceID is the worker's group.instance.id ("" = dynamic): its
	// sink tasks' consumers are static members too, as <id>-<connector>-<task>.
	instanceID string
	// exactlyOnce runs source tasks transactionally (the worker's
	// exactly.once.source.support=enabled), with transactional ids
	// derived from groupID; openOffsets opens a connector's own
	// offsets.storage.topic.
	exactlyOnce bool
	groupID     string
	openOffsets func(ctx context.Context, topic string) (*store.OffsetStore, error)
	// grants and reserved isolate tasks: what the cluster's owner lends
	// them and the topics they may not touch (see isolation.go).
	grants   *plugin.Grants
	reserved *plugin.ReservedTopics
}

func (t *taskRuntime) StartTask(ctx context.Context, spec herder.TaskSpec) (herder.RunningTask, error) {
	id := task.ID{Connector: spec.ID.Connector, Task: spec.ID.Task}
	ts := task.Spec{
		Common: task.Common{
			ID: id, Config: spec.TaskConfig, Kafka: t.kafka,
			// The herder writes statuses (RUNNING at start, FAILED with the
			// trace when the runner ends); the runner's reports feed metrics.
			Status:              task.StatusFunc(func(task.ID, task.State, string) {}),
			Metrics:             t.metrics.Task(id.Connector, id.Task),
			Logger:              t.log,
			OffsetFlushInterval: t.flushInterval,
			OffsetFlushTimeout:  t.flushTimeout,
			Grants:              t.grants,
			Reserved:            t.reserved,
		},
		Plugin: spec.Plugin, Connector: spec.ConnectorConfig, WorkerConverters: t.workerConv,
		Consumer: t.consumer, Producer: t.producer, Admin: t.admin, Policy: t.policy, Connection: t.conn, TopicCreation: t.topicCreation,
		Offsets: store.TaskOffsets{Store: t.offsets},
	}
	if t.scrubFor != nil {
		ts.Scrub = func(msg string) string { return t.scrubFor(id.Connector, msg) }
	}
	if spec.Plugin.Kind == plugin.KindSource && t.exactlyOnce {
		if err := t.transactional(ctx, &ts, spec); err != nil {
			return nil, err
		}
	}
	if t.instanceID != "" {
		ts.ConsumerInstanceID = connectnames.SinkInstanceID(t.instanceID, id.Connector, id.Task)
	}
	if spec.Plugin.Kind == plugin.KindSource && t.topicUsed != nil {
		tt := &topicTracker{seen: map[string]bool{}, report: func(ctx context.Context, topic string) error {
			return t.topicUsed(ctx, spec.ID.Connector, topic, spec.ID.Task)
		}}
		if len(plugin.SplitList(spec.ConnectorConfig[plugin.KeyTransforms])) > 0 {
			// Transforms may route records elsewhere: note the topics
			// they leave the records with, not the polled ones.
			ts.TransformedTopic = func(topic string) { tt.note(context.Background(), topic) }
		} else {
			ts.WrapSource = func(st plugin.SourceTask) plugin.SourceTask { tt.SourceTask = st; return tt }
		}
	}
	r, err := task.New(ts)
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	t.metrics.TaskStarted(id.Connector, id.Task)
	return &runningTask{r: r}, nil
}

// runningTask adapts a runner to herder.RunningTask (and herder.Pauser).
type runningTask struct{ r task.Runner }

func (t *runningTask) Stop(ctx context.Context) error {
	err := t.r.Stop(ctx)
	if err != nil && t.r.Err() != nil {
		return nil // it had failed before; the herder reports that
	}
	return err
}
func (t *runningTask) Done() <-chan struct{} { return t.r.Done() }
func (t *runningTask) Pause()                { t.r.Pause() }
func (t *runningTask) Resume()               { t.r.Resume() }

// Err returns the failure with its full trace (stack after a panic).
func (t *runningTask) Err() error {
	if err := t.r.Err(); err != nil {
		return traceError{err: err, trace: task.Trace(err)}
	}
	return nil
}

type traceError struct {
	err   error
	trace string
}

func (e traceError) Error() string { return e.trace }
func (e traceError) Unwrap() error { return e.err }

// topicTracker notes the topics a source task writes to, once per topic.
type topicTracker struct {
	plugin.SourceTask
	seen   map[string]bool // only touched from Poll or the transforms, never concurrently
	report func(ctx context.Context, topic string) error
}

// SkipRecordCommits forwards the wrapped task's choice (see
// plugin.RecordCommitSkipper): the tracker itself never needs CommitRecord.
func (t *topicTracker) SkipRecordCommits() bool { return plugin.SkipsRecordCommits(t.SourceTask) }

func (t *topicTracker) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	recs, err := t.SourceTask.Poll(ctx)
	for _, r := range recs {
		if r != nil {
			t.note(ctx, r.Topic)
		}
	}
	return recs, err
}

// note reports a topic the first time it is seen.
func (t *topicTracker) note(ctx context.Context, topic string) {
	if topic == "" || t.seen[topic] {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if t.report(rctx, topic) == nil {
		t.seen[topic] = true
	}
	cancel()
}

// transactional makes a source task exactly-once: a transactional
// producer with the task's transactional.id, the connector's boundary
// settings, and its own offsets topic when it names one.
func (t *taskRuntime) transactional(ctx context.Context, ts *task.Spec, spec herder.TaskSpec) error {
	eos, errs := plugin.ParseExactlyOnce(spec.ConnectorConfig)
	if len(errs) > 0 {
		return fmt.Errorf("connector %s: %s", spec.ID.Connector, errs[0].Message)
	}
	ts.ExactlyOnce = &task.ExactlyOnce{
		TransactionalID: connectnames.TransactionalID(t.groupID, spec.ID.Connector, spec.ID.Task),
		Boundary:        eos.Boundary, Interval: eos.Interval,
	}
	if t.reserved.Reserved(eos.OffsetsTopic) && eos.OffsetsTopic != t.offsets.Topic() {
		return fmt.Errorf("connector %s: %w", spec.ID.Connector, t.reserved.KeyError(plugin.KeyOffsetsStorageTopic, eos.OffsetsTopic))
	}
	if eos.OffsetsTopic != "" && eos.OffsetsTopic != t.offsets.Topic() && t.openOffsets != nil {
		own, err := t.openOffsets(ctx, eos.OffsetsTopic)
		if err != nil {
			return fmt.Errorf("connector %s: opening its %s %q: %w", spec.ID.Connector, plugin.KeyOffsetsStorageTopic, eos.OffsetsTopic, err)
		}
		ts.Offsets = store.TaskOffsets{Store: own, Fallback: t.offsets}
	}
	return nil
}
