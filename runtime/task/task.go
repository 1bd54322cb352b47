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

// Package task executes one task of a connector: a [SinkRunner] consumes a
// sink connector's topics in the consumer group "connect-<connector>" and
// feeds the plugin's SinkTask; a [SourceRunner] polls the plugin's
// SourceTask and produces the records with the idempotent producer.
//
// A runner owns its Kafka client and one plugin task instance. The herder
// creates a runner per assigned task, starts it, forwards target states
// (Pause, Resume), and stops it with a deadline. Panics and errors of the
// plugin never escape a runner: they turn the task FAILED with a trace,
// reported through [StatusReporter]. A restart is a new runner with a fresh
// plugin task instance.
//
// Everything a runner buffers is bounded: sink batches by records and bytes,
// source records in flight by MaxInFlight; no goroutine per record.
package task

import (
	"context"
	"errors"
	"fmt"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/transforms"
)

// ID names one task of a connector.
type ID struct {
	Connector string
	Task      int
}

// String renders "connector-task", as Kafka Connect names task threads.
func (id ID) String() string { return fmt.Sprintf("%s-%d", id.Connector, id.Task) }

// State is a task state as Kafka Connect reports it.
type State string

// Task states.
const (
	StateUnassigned State = "UNASSIGNED"
	StateRunning    State = "RUNNING"
	StatePaused     State = "PAUSED"
	StateFailed     State = "FAILED"
)

// StatusReporter receives the state changes of tasks. The herder implements
// it, typically by writing to the status topic. Calls come from the
// runner's goroutines; the implementation must not block for long and must
// not call back into the runner.
type StatusReporter interface {
	// TaskState reports that task id entered state. trace is empty except
	// for FAILED, where it holds the error and, after a panic, the stack.
	TaskState(id ID, state State, trace string)
}

// StatusFunc adapts a function to StatusReporter.
type StatusFunc func(id ID, state State, trace string)

// TaskState implements StatusReporter.
func (f StatusFunc) TaskState(id ID, state State, trace string) { f(id, state, trace) }

// SourceOffset is the offset of one source partition, both as the
// connector defines them (JSON-friendly maps).
type SourceOffset struct {
	Partition map[string]any
	Offset    map[string]any
}

// OffsetStore keeps source offsets per connector. The herder implements it
// on the compacted offsets topic.
type OffsetStore interface {
	// Read returns the latest stored offsets of the given source partitions
	// of a connector, aligned with partitions; nil where none was stored.
	Read(ctx context.Context, connector string, partitions []map[string]any) ([]map[string]any, error)
	// Write stores offsets of a connector and returns only after the broker
	// acknowledged them (or with an error). Entries of one call may be
	// written in any order; calls are never concurrent for one task.
	Write(ctx context.Context, connector string, offsets []SourceOffset) error
}

// Common holds what both runners need.
type Common struct {
	// ID names the task; required.
	ID ID
	// Config is the task configuration handed to the plugin task's Start
	// (one of the connector's task configs, placeholders resolved).
	Config map[string]string
	// Transforms holds the connector configuration's transforms and
	// predicates keys (other keys are ignored, so the whole connector
	// configuration will do); the chain they describe is built when the
	// runner is created and applied to every record: after Poll for a
	// source, after conversion for a sink. Nil or no "transforms" key
	// applies none.
	Transforms map[string]string
	// TransformedTopic, when set and the connector has transforms, is
	// called (source runners only, from one goroutine) with the topic of
	// each record the transforms kept, before it is produced: the topic
	// it goes to, which the task's own records may not name.
	TransformedTopic func(topic string)
	// KeyConverter and ValueConverter convert record keys and values;
	// required (see converter.FromConfig).
	KeyConverter   converter.Converter
	ValueConverter converter.Converter
	// Kafka are the client options shared by the worker: seed brokers, TLS,
	// SASL, client id. The runner adds its own producer or consumer options.
	Kafka []kgo.Opt
	// Clients are the settings of the task's producer, consumer and admin
	// clients (see New); a kind without an entry gets Kafka and the
	// runner's options alone.
	Clients map[clientconfig.Kind]Client
	// Status receives state changes; required.
	Status StatusReporter
	// Metrics records task metrics; nil records nothing.
	Metrics *metrics.Task
	// Logger logs the runner's events; nil discards.
	Logger *slog.Logger
	// Scrub hides the connector's resolved placeholder values in text the
	// runner writes outside the worker (dead letter queue context
	// headers); nil leaves text as it is.
	Scrub func(string) string
	// Errors is the connector's error handling (errors.* keys, see
	// ParseErrorConfig); the zero value fails the task on the first bad
	// record, as Kafka Connect's defaults do.
	Errors ErrorConfig
	// OffsetFlushInterval is Kafka Connect's offset.flush.interval.ms: how
	// often offsets are flushed and committed. Default 60s.
	OffsetFlushInterval time.Duration
	// OffsetFlushTimeout is Kafka Connect's offset.flush.timeout.ms: how long
	// one offset write or commit may take. Default 5s.
	OffsetFlushTimeout time.Duration
	// RetryBackoff is the pause before retrying a call that failed with
	// plugin.ErrRetriable. Default 1s (Kafka Connect's put retry backoff is
	// longer; a second keeps tests quick without spinning).
	RetryBackoff time.Duration

	// Grants are what the cluster's owner lends the task (files, ambient
	// cloud credentials); they reach the task's Start through its context.
	// Nil restricts nothing.
	Grants *plugin.Grants
	// Reserved are the topics the task may not write, read or send dead
	// letters to (plugin.ReservedTopics); checked where records cross into
	// Kafka. Nil reserves nothing.
	Reserved *plugin.ReservedTopics

	// chain is built from Transforms by check; nil when there is none.
	chain *transforms.Chain
}

func (c *Common) check() error {
	var missing []string
	if c.ID.Connector == "" {
		missing = append(missing, "ID.Connector")
	}
	if c.KeyConverter == nil {
		missing = append(missing, "KeyConverter")
	}
	if c.ValueConverter == nil {
		missing = append(missing, "ValueConverter")
	}
	if c.Status == nil {
		missing = append(missing, "Status")
	}
	if len(missing) > 0 {
		return fmt.Errorf("task %s: missing %s", c.ID, strings.Join(missing, ", "))
	}
	if c.Errors.DLQTopic != "" && c.Reserved.Reserved(c.Errors.DLQTopic) {
		return fmt.Errorf("task %s: %w", c.ID, c.Reserved.KeyError(plugin.KeyDLQTopicName, c.Errors.DLQTopic))
	}
	chain, err := transforms.New(c.Transforms)
	if err != nil {
		return fmt.Errorf("task %s: %w", c.ID, err)
	}
	if chain != nil && c.TransformedTopic != nil {
		note := c.TransformedTopic
		chain = chain.Then("(topic tracking)", transforms.TransformFunc(func(r *transforms.Record) (*transforms.Record, error) {
			note(r.Topic)
			return r, nil
		}))
	}
	c.chain = chain
	if c.OffsetFlushInterval <= 0 {
		c.OffsetFlushInterval = 60 * time.Second
	}
	if c.OffsetFlushTimeout <= 0 {
		c.OffsetFlushTimeout = 5 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	c.Errors.setDefaults()
	if c.Scrub == nil {
		c.Scrub = func(s string) string { return s }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Logger = c.Logger.With("connector", c.ID.Connector, "task", c.ID.Task)
	return nil
}

// ErrStopTimeout is returned by Stop when the task did not finish within the
// deadline; the runner abandoned it (its goroutine ends whenever the plugin
// returns).
var ErrStopTimeout = errors.New("task did not stop within the deadline; abandoned")

// panicError is a recovered panic of plugin code, with the stack.
type panicError = guard.PanicError

// Trace returns the text reported as a FAILED task's trace: the error chain
// and, for a panic, the goroutine stack.
func Trace(err error) string { return guard.Trace(err) }

// safe runs a plugin call, turning a panic into an error that carries the
// stack.
func safe(what string, f func() error) error { return guard.Call(what, f) }

// lifecycle is the state machine shared by both runners: target state,
// stop signal, the reported state and the first fatal error.
type lifecycle struct {
	common *Common

	mu      sync.Mutex
	state   State
	paused  bool // target state
	started bool
	err     error

	wake    chan struct{} // target state changed or stop requested; capacity 1
	stopped chan struct{} // closed by Stop
	done    chan struct{} // closed when the run goroutine returned
	cancel  context.CancelFunc
	stopOne sync.Once
}

func newLifecycle(c *Common) lifecycle {
	return lifecycle{common: c, state: StateUnassigned, wake: make(chan struct{}, 1),
		stopped: make(chan struct{}), done: make(chan struct{})}
}

func (l *lifecycle) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// setState records and reports a state change.
func (l *lifecycle) setState(s State, trace string) {
	l.mu.Lock()
	if l.state == s && s != StateFailed {
		l.mu.Unlock()
		return
	}
	l.state = s
	l.mu.Unlock()
	l.common.Metrics.SetState(string(s))
	l.common.Status.TaskState(l.common.ID, s, trace)
}

// fail records the first fatal error and reports FAILED.
func (l *lifecycle) fail(err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	l.mu.Unlock()
	l.common.Logger.Error("task failed", "error", err)
	l.setState(StateFailed, Trace(err))
}

// goPlugin runs a goroutine that the plugin task starts through its
// context's Go: a panic in it, or an error it returns, fails the task (the
// runner's loop sees the failure and stops the plugin task) instead of
// ending the worker process. An error returned once the task is stopping
// is only logged: goroutines often end with their context's error then.
func (l *lifecycle) goPlugin(f func() error) {
	guard.Go("task goroutine", f, func(err error) {
		if l.isStopping() && !guard.IsPanic(err) {
			l.common.Logger.Warn("task goroutine ended with an error while stopping", "error", err)
			return
		}
		l.fail(err)
		l.signal()
	})
}

func (l *lifecycle) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *lifecycle) isStopping() bool {
	select {
	case <-l.stopped:
		return true
	default:
		return false
	}
}

func (l *lifecycle) targetPaused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused
}

// State returns the task's current state.
func (l *lifecycle) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Err returns the error that failed the task, or nil.
func (l *lifecycle) Err() error { return l.failed() }

// Done is closed when the task finished (stopped or failed and cleaned up).
func (l *lifecycle) Done() <-chan struct{} { return l.done }

// Pause sets the target state to paused: the task stops polling (source) or
// fetching (sink) and reports PAUSED; its partitions and offsets stay.
func (l *lifecycle) Pause() {
	l.mu.Lock()
	l.paused = true
	l.mu.Unlock()
	l.signal()
}

// Resume sets the target state back to running.
func (l *lifecycle) Resume() {
	l.mu.Lock()
	l.paused = false
	l.mu.Unlock()
	l.signal()
}

// start launches run in a goroutine, guarding against panics in the
// runner itself.
func (l *lifecycle) start(ctx context.Context, run func(ctx context.Context)) error {
	l.mu.Lock()
	if l.started {
		l.mu.Unlock()
		return fmt.Errorf("task %s: already started", l.common.ID)
	}
	l.started = true
	l.mu.Unlock()
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		guard.Label(ctx, l.common.ID.Connector, l.common.ID.Task)
		defer close(l.done)
		defer func() {
			if v := recover(); v != nil {
				l.fail(fmt.Errorf("task runner: %w", &panicError{Value: v, Stack: debug.Stack()}))
			}
		}()
		run(ctx)
	}()
	return nil
}

// Stop stops the task gracefully: stop polling, drain, flush and commit,
// stop the plugin task, close the Kafka client. When ctx ends first, the
// task is abandoned: its contexts are cancelled and Stop returns
// ErrStopTimeout. Stop returns the error that failed the task, if any.
// Stopping twice is harmless.
func (l *lifecycle) Stop(ctx context.Context) error {
	l.stopOne.Do(func() { close(l.stopped) })
	l.signal()
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-l.done:
		return l.failed()
	case <-ctx.Done():
		l.cancel()
		l.common.Logger.Warn("task did not stop within the deadline; abandoning it")
		return fmt.Errorf("task %s: %w", l.common.ID, ErrStopTimeout)
	}
}

// sleep waits d, or until stop, and reports whether it slept fully.
func (l *lifecycle) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stopped:
		return false
	}
}

// kgoLogger routes franz-go's logs to the task's slog logger, at the most
// verbose level that logger has enabled.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	ctx := context.Background()
	switch {
	case k.l.Enabled(ctx, slog.LevelDebug):
		return kgo.LogLevelDebug
	case k.l.Enabled(ctx, slog.LevelInfo):
		return kgo.LogLevelInfo
	case k.l.Enabled(ctx, slog.LevelWarn):
		return kgo.LogLevelWarn
	case k.l.Enabled(ctx, slog.LevelError):
		return kgo.LogLevelError
	}
	return kgo.LogLevelNone
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelInfo
	}
	k.l.Log(context.Background(), l, "kafka client: "+msg, keyvals...)
}
