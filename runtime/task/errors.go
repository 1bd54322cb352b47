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

package task

// Error handling of record stages, after Kafka Connect's KIP-298
// (errors.retry.timeout, errors.retry.delay.max.ms, errors.tolerance,
// errors.log.*, and for sinks errors.deadletterqueue.*).
//
// The runners call into this file only after a record stage failed, so the
// success path costs nothing: no allocation, no lock, no extra branch
// beyond the error check the runners had anyway. A failure goes through
// errorHandler.handle, which
//  1. retries the stage while the error wraps plugin.ErrRetriable and
//     errors.retry.timeout allows it (exponential backoff from 300 ms,
//     capped by errors.retry.delay.max.ms and by the deadline);
//  2. counts and, with errors.log.enable, logs the failure;
//  3. with errors.tolerance=none fails the task; with all skips the record
//     and, for a sink with a dead letter queue, writes the original Kafka
//     record there. The sink commits a skipped record's offset only after
//     the dead letter queue acknowledged it (see SinkRunner's commit).
//
// Stages covered: key, value and header conversion in both runners, and
// the transforms (StageTransformation, see transforms.go).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Stage names a step of a runner's record pipeline. The values are Kafka
// Connect's, so the __connect.errors.stage header and the logs read the same.
type Stage string

// Record stages errors are handled in.
const (
	StageKeyConverter    Stage = "KEY_CONVERTER"
	StageValueConverter  Stage = "VALUE_CONVERTER"
	StageHeaderConverter Stage = "HEADER_CONVERTER"
	StageTransformation  Stage = "TRANSFORMATION"
	// StageTaskPut is a sink task's write of a record, reported through
	// its errant record reporter.
	StageTaskPut Stage = "TASK_PUT"
)

// StageError is the failure of one record in one stage. Only StageErrors
// are retried and tolerated; any other record error fails the task.
type StageError struct {
	Stage Stage
	// Class names what failed: the Go type of the converter or transform.
	Class string
	Err   error
}

func (e *StageError) Error() string { return e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// stageErr wraps err as a failure of stage in the component c.
func stageErr(stage Stage, c any, err error) error {
	return &StageError{Stage: stage, Class: fmt.Sprintf("%T", c), Err: err}
}

// ErrorConfig is a connector's error handling. The zero value is Kafka's
// default behaviour: no retries, errors.tolerance=none, nothing logged, no
// dead letter queue.
type ErrorConfig struct {
	// RetryTimeout is errors.retry.timeout: how long a retriable failure is
	// retried; 0 never, negative forever.
	RetryTimeout time.Duration
	// RetryMaxDelay is errors.retry.delay.max.ms. Default 60s.
	RetryMaxDelay time.Duration
	// RetryMinDelay is the first backoff, doubled per retry. Default 300ms
	// (Kafka's); tests shorten it.
	RetryMinDelay time.Duration
	// ToleranceAll is errors.tolerance=all: skip failed records.
	ToleranceAll bool
	// Log is errors.log.enable; LogMessages errors.log.include.messages
	// (keys, values and headers in the log: off by default, they may hold
	// secrets).
	Log, LogMessages bool
	// DLQTopic is errors.deadletterqueue.topic.name (sinks only); empty for
	// none. DLQReplication is its replication factor when the runner
	// creates it (-1 the broker's default). DLQContextHeaders adds the
	// __connect.errors.* headers.
	DLQTopic          string
	DLQReplication    int16
	DLQContextHeaders bool
}

// ParseErrorConfig reads the errors.* keys of a connector configuration;
// the dead letter queue keys only for sinks. A bad value is an error naming
// the key.
func ParseErrorConfig(kind plugin.Kind, config map[string]string) (ErrorConfig, error) {
	var ec ErrorConfig
	num := func(key string, def, lo int64) (int64, error) {
		v := strings.TrimSpace(config[key])
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo {
			return 0, fmt.Errorf("%s=%q: want a whole number, at least %d", key, v, lo)
		}
		return n, nil
	}
	flag := func(key string) (bool, error) {
		v := strings.TrimSpace(config[key])
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s=%q: want true or false", key, v)
		}
		return b, nil
	}
	var err error
	var n int64
	if n, err = num(plugin.KeyErrorsRetryTimeout, 0, -1); err != nil {
		return ec, err
	}
	ec.RetryTimeout = time.Duration(n) * time.Millisecond
	if n, err = num(plugin.KeyErrorsRetryMaxDelay, 60000, 1); err != nil {
		return ec, err
	}
	ec.RetryMaxDelay = time.Duration(n) * time.Millisecond
	switch t := strings.ToLower(strings.TrimSpace(config[plugin.KeyErrorsTolerance])); t {
	case "", "none":
	case "all":
		ec.ToleranceAll = true
	default:
		return ec, fmt.Errorf("%s=%q: want none or all", plugin.KeyErrorsTolerance, config[plugin.KeyErrorsTolerance])
	}
	if ec.Log, err = flag(plugin.KeyErrorsLogEnable); err != nil {
		return ec, err
	}
	if ec.LogMessages, err = flag(plugin.KeyErrorsLogIncludeMessage); err != nil {
		return ec, err
	}
	if kind != plugin.KindSink {
		return ec, nil
	}
	ec.DLQTopic = strings.TrimSpace(config[plugin.KeyDLQTopicName])
	if n, err = num(plugin.KeyDLQReplication, 3, -1); err != nil || n == 0 || n > 32767 {
		return ec, fmt.Errorf("%s=%q: want -1 (the broker's default) or a positive number", plugin.KeyDLQReplication, config[plugin.KeyDLQReplication])
	}
	ec.DLQReplication = int16(n)
	if ec.DLQContextHeaders, err = flag(plugin.KeyDLQHeaders); err != nil {
		return ec, err
	}
	return ec, nil
}

// checkDLQTopic refuses a dead letter queue topic that the sink consumes:
// every record that failed there would be read and fail again.
func (ec ErrorConfig) checkDLQTopic(topics []string, topicsRegex string) error {
	if ec.DLQTopic == "" {
		return nil
	}
	if slices.Contains(topics, ec.DLQTopic) {
		return fmt.Errorf("%s=%q is one of the consumed topics; choose another topic", plugin.KeyDLQTopicName, ec.DLQTopic)
	}
	if topicsRegex != "" {
		if re, err := regexp.Compile("^(?:" + topicsRegex + ")$"); err == nil && re.MatchString(ec.DLQTopic) {
			return fmt.Errorf("%s=%q matches %s; choose another topic", plugin.KeyDLQTopicName, ec.DLQTopic, plugin.KeyTopicsRegex)
		}
	}
	return nil
}

func (ec *ErrorConfig) setDefaults() {
	if ec.RetryMaxDelay <= 0 {
		ec.RetryMaxDelay = time.Minute
	}
	if ec.RetryMinDelay <= 0 {
		ec.RetryMinDelay = 300 * time.Millisecond
	}
	if ec.DLQReplication == 0 {
		ec.DLQReplication = 3
	}
}

// errSkipped is what handle returns for a record skipped under
// errors.tolerance=all; callers test it with ==.
var errSkipped = errors.New("record skipped (errors.tolerance=all)")

// failedRecord is the record a stage failed on: the consumed Kafka record
// (sink) or the polled source record (source).
type failedRecord struct {
	kafka  *kgo.Record
	source *plugin.SourceRecord
	sink   *plugin.SinkRecord // a record a sink task reported, when kafka is nil
}

// errorHandler applies a task's ErrorConfig: from the sink's loop or the
// source's sender, and from a sink task's own goroutines through its
// errant record reporter. Its fields do not change after start, the
// metrics are atomic and the dead letter queue locks, so calls may
// overlap; the dead letter queue's promise runs on the producer's
// goroutines and only touches dlq.
type errorHandler struct {
	cfg     ErrorConfig
	id      ID
	log     *slog.Logger
	metrics *metrics.Task
	sleep   func(time.Duration) bool // false when the task is stopping
	dlq     *deadLetterQueue         // nil without one
}

func newErrorHandler(c *Common, sleep func(time.Duration) bool) *errorHandler {
	return &errorHandler{cfg: c.Errors, id: c.ID, log: c.Logger, metrics: c.Metrics, sleep: sleep}
}

// handle deals with err, returned by a record stage (retry runs that stage
// again). It returns nil when a retry succeeded, errSkipped when the record
// is to be skipped, errStopped when the task stopped while waiting to
// retry, and otherwise the error that fails the task.
func (h *errorHandler) handle(ctx context.Context, err error, retry func() error, rec failedRecord) error {
	var se *StageError
	if !errors.As(err, &se) {
		// Not a record stage (a task bug such as a record without a
		// topic): never tolerated.
		h.metrics.RecordFailure()
		h.metrics.RecordErrors(1)
		return err
	}
	if err = h.retry(err, retry); err == nil || err == errStopped {
		return err
	}
	h.metrics.RecordErrors(1)
	if !errors.As(err, &se) { // a retry failed otherwise
		return err
	}
	if h.cfg.Log {
		h.logFailure(se, err, rec)
	}
	if !h.cfg.ToleranceAll {
		return fmt.Errorf("%w (errors.tolerance=none fails the task on the first bad record; errors.tolerance=all skips such records)", err)
	}
	h.metrics.RecordSkipped()
	if h.dlq != nil && rec.kafka != nil {
		h.dlq.write(ctx, rec.kafka, se, err)
	}
	return errSkipped
}

// retry runs op again while the error is retriable and errors.retry.timeout
// allows, with exponential backoff like Kafka's RetryWithToleranceOperator.
// Every failed attempt counts in total-record-failures, every retry in
// total-retries.
func (h *errorHandler) retry(err error, op func() error) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		h.metrics.RecordFailure()
		if !plugin.IsRetriable(err) || h.cfg.RetryTimeout == 0 {
			return err
		}
		delay := h.cfg.RetryMinDelay << min(attempt, 20)
		if delay <= 0 || delay > h.cfg.RetryMaxDelay {
			delay = h.cfg.RetryMaxDelay
		}
		if h.cfg.RetryTimeout > 0 {
			left := h.cfg.RetryTimeout - time.Since(start)
			if left <= 0 {
				return fmt.Errorf("%w (retried for errors.retry.timeout=%s)", err, h.cfg.RetryTimeout)
			}
			delay = min(delay, left)
		}
		if !h.sleep(delay) {
			return errStopped
		}
		h.metrics.RecordRetry()
		if err = op(); err == nil {
			return nil
		}
	}
}

// logFailure writes one record failure to the task's log: where it
// happened and the error, and the record's contents only with
// errors.log.include.messages.
func (h *errorHandler) logFailure(se *StageError, err error, rec failedRecord) {
	h.metrics.ErrorLogged()
	attrs := []any{"stage", se.Stage, "class", se.Class, "tolerance", map[bool]string{false: "none", true: "all"}[h.cfg.ToleranceAll]}
	switch {
	case rec.kafka != nil:
		kr := rec.kafka
		attrs = append(attrs, "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset)
		if h.cfg.LogMessages {
			attrs = append(attrs, "key", string(kr.Key), "value", string(kr.Value), "headers", kgoHeaders(kr.Headers))
		}
	case rec.sink != nil:
		sr := rec.sink
		attrs = append(attrs, "topic", sr.Topic, "partition", sr.Partition, "offset", sr.Offset)
		if h.cfg.LogMessages {
			attrs = append(attrs, "key", fmt.Sprint(sr.Key), "value", fmt.Sprint(sr.Value), "headers", fmt.Sprint(sr.Headers))
		}
	case rec.source != nil:
		sr := rec.source
		attrs = append(attrs, "topic", sr.Topic, "source_partition", sr.SourcePartition, "source_offset", sr.SourceOffset)
		if h.cfg.LogMessages {
			attrs = append(attrs, "key", fmt.Sprint(sr.Key), "value", fmt.Sprint(sr.Value), "headers", fmt.Sprint(sr.Headers))
		}
	}
	attrs = append(attrs, "error", err)
	h.log.Error("error processing a record", attrs...)
}

func kgoHeaders(hs []kgo.RecordHeader) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(h.Key + "=" + string(h.Value))
	}
	return b.String()
}

// Header names of the error context a dead letter queue record carries,
// Kafka Connect's.
const (
	HeaderErrorTopic       = "__connect.errors.topic"
	HeaderErrorPartition   = "__connect.errors.partition"
	HeaderErrorOffset      = "__connect.errors.offset"
	HeaderErrorConnector   = "__connect.errors.connector.name"
	HeaderErrorTaskID      = "__connect.errors.task.id"
	HeaderErrorStage       = "__connect.errors.stage"
	HeaderErrorClass       = "__connect.errors.class.name"
	HeaderErrorType        = "__connect.errors.exception.class.name"
	HeaderErrorMessage     = "__connect.errors.exception.message"
	HeaderErrorStacktrace  = "__connect.errors.exception.stacktrace"
	deadLetterTopicDefault = 1 // partitions of a created dead letter queue topic, as Kafka
)

// deadLetterQueue writes the original records that a sink skipped to the
// dead letter queue topic, with an idempotent producer (acks=all). Writes
// are asynchronous; flush waits for them, and the sink calls it before
// committing offsets, so a skipped record's offset is committed only after
// its dead letter was acknowledged. A write that fails fails the task.
type deadLetterQueue struct {
	cfg     ErrorConfig
	id      ID
	client  *kgo.Client
	metrics *metrics.Task
	fail    func(error)

	mu  sync.Mutex
	err error // first failed write
}

// openDeadLetterQueue creates the producer and the topic when it is
// missing (one partition, the configured replication factor).
func openDeadLetterQueue(ctx context.Context, c *Common, fail func(error)) (*deadLetterQueue, error) {
	topic := c.Errors.DLQTopic
	cl, err := kgo.NewClient(c.clientOpts([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic)})...)
	if err != nil {
		return nil, fmt.Errorf("creating the dead letter queue producer: %w", err)
	}
	// Bounded like Kafka's admin calls (default.api.timeout.ms), so an
	// unreachable cluster fails the task instead of hanging its start.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, topic)
	if err == nil && details[topic].Err != nil && !errors.Is(details[topic].Err, kerr.UnknownTopicOrPartition) {
		err = details[topic].Err
	}
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("looking up dead letter queue topic %q: %w", topic, err)
	}
	if !details.Has(topic) || details[topic].Err != nil {
		resp, err := adm.CreateTopic(ctx, deadLetterTopicDefault, c.Errors.DLQReplication, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			cl.Close()
			if errors.Is(err, kerr.InvalidReplicationFactor) {
				return nil, fmt.Errorf("creating dead letter queue topic %q: %w; set %s to at most the number of brokers, or -1", topic, err, plugin.KeyDLQReplication)
			}
			return nil, fmt.Errorf("creating dead letter queue topic %q: %w", topic, err)
		}
		c.Logger.Info("created the dead letter queue topic", "topic", topic, "replication_factor", c.Errors.DLQReplication)
	}
	return &deadLetterQueue{cfg: c.Errors, id: c.ID, client: cl, metrics: c.Metrics, fail: fail}, nil
}

// write produces the original key, value, headers and timestamp of kr,
// plus the error context headers when enabled.
func (d *deadLetterQueue) write(ctx context.Context, kr *kgo.Record, se *StageError, err error) {
	out := &kgo.Record{Topic: d.cfg.DLQTopic, Key: bytes.Clone(kr.Key), Value: bytes.Clone(kr.Value), Timestamp: kr.Timestamp}
	if kr.Key == nil {
		out.Key = nil
	}
	if kr.Value == nil {
		out.Value = nil
	}
	out.Headers = make([]kgo.RecordHeader, 0, len(kr.Headers)+10)
	for _, h := range kr.Headers {
		out.Headers = append(out.Headers, kgo.RecordHeader{Key: h.Key, Value: bytes.Clone(h.Value)})
	}
	if d.cfg.DLQContextHeaders {
		add := func(k, v string) { out.Headers = append(out.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
		add(HeaderErrorTopic, kr.Topic)
		add(HeaderErrorPartition, strconv.Itoa(int(kr.Partition)))
		add(HeaderErrorOffset, strconv.FormatInt(kr.Offset, 10))
		add(HeaderErrorConnector, d.id.Connector)
		add(HeaderErrorTaskID, strconv.Itoa(d.id.Task))
		add(HeaderErrorStage, string(se.Stage))
		add(HeaderErrorClass, se.Class)
		add(HeaderErrorType, errorType(se.Err))
		add(HeaderErrorMessage, err.Error())
		add(HeaderErrorStacktrace, errorChain(err))
	}
	d.client.Produce(ctx, out, func(_ *kgo.Record, err error) {
		d.metrics.DeadLetterProduced(err)
		if err == nil {
			return
		}
		err = fmt.Errorf("writing a skipped record of %s-%d@%d to dead letter queue topic %s: %w", kr.Topic, kr.Partition, kr.Offset, d.cfg.DLQTopic, err)
		d.mu.Lock()
		first := d.err == nil
		if first {
			d.err = err
		}
		d.mu.Unlock()
		if first {
			d.fail(err)
		}
	})
}

// flush waits until every dead letter written so far is acknowledged; an
// error means some may not be, so offsets must not be committed.
func (d *deadLetterQueue) flush(ctx context.Context) error {
	if err := d.client.Flush(ctx); err != nil {
		return fmt.Errorf("waiting for the dead letter queue: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

func (d *deadLetterQueue) close() { d.client.Close() }

// errorChain is what Go has for a stack trace (the
// __connect.errors.exception.stacktrace header): the chain of wrapped
// errors, one "type: message" line each, outermost first, and the
// goroutine stack after a panic.
func errorChain(err error) string {
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "%T: %s\n", e, e.Error())
	}
	var pe *panicError
	if errors.As(err, &pe) {
		b.WriteString("\n" + string(pe.stack))
	}
	return b.String()
}

// errorType names the type of the innermost error of err's chain (the
// __connect.errors.exception.class.name header): the most specific cause.
func errorType(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return fmt.Sprintf("%T", err)
		}
		err = next
	}
}

// recordFailed handles a sink record whose conversion failed with err:
// nil after a successful retry (rec is filled), errSkipped when the record
// is skipped, else the error that ends the loop.
func (r *SinkRunner) recordFailed(ctx context.Context, kr *kgo.Record, rec *plugin.SinkRecord, err error) error {
	return r.errs.handle(ctx, err, func() error { return r.convert(kr, rec) }, failedRecord{kafka: kr})
}

// errantReporter is a sink task's plugin.ErrantRecordReporter: a record
// the task could not write goes through the same errors.* handling as a
// record that failed conversion, in the stage TASK_PUT. The task may call
// it from its own goroutine: handle keeps no state of its own between
// calls (the metrics are atomic, the dead letter queue locks).
type errantReporter struct{ r *SinkRunner }

func (e errantReporter) Report(_ context.Context, rec *plugin.SinkRecord, err error) error {
	if rec == nil || err == nil {
		return errors.New("errant record reporter: Report needs the record and its error")
	}
	r := e.r
	se := &StageError{Stage: StageTaskPut, Class: fmt.Sprintf("%T", r.cfg.Task), Err: err}
	// The record as Kafka would hold it, for the dead letter queue (as
	// Kafka Connect does, through the task's converters; a record the
	// converters cannot take back goes to the log only).
	kr, cerr := r.kafkaRecord(rec)
	if cerr != nil {
		r.cfg.Logger.Warn("a record reported by the sink task cannot be converted back for the dead letter queue",
			"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "error", cerr)
		kr = nil
	}
	// The dead letter is produced under the runner's context, not the
	// caller's: the task's write ends (and may cancel its context) long
	// before the producer is done, and the runner waits for the dead
	// letters before it commits offsets.
	herr := r.errs.handle(r.runCtx, se, func() error { return se }, failedRecord{kafka: kr, sink: rec})
	if herr == errSkipped {
		return nil
	}
	return herr
}

// kafkaRecord serialises a sink record with the task's converters.
func (r *SinkRunner) kafkaRecord(rec *plugin.SinkRecord) (*kgo.Record, error) {
	key, err := r.cfg.KeyConverter.FromConnectData(rec.Topic, rec.KeySchema, rec.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	value, err := r.cfg.ValueConverter.FromConnectData(rec.Topic, rec.ValueSchema, rec.Value)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	kr := &kgo.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Key: key, Value: value, Timestamp: rec.Timestamp}
	for _, h := range rec.Headers {
		b, err := headerBytes(rec.Topic, h.Schema, h.Value)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Key, err)
		}
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: b})
	}
	return kr, nil
}

// flushDeadLetters waits for the dead letter queue (when there is one)
// before offsets are committed.
func (r *SinkRunner) flushDeadLetters(ctx context.Context) error {
	if r.errs.dlq == nil {
		return nil
	}
	return r.errs.dlq.flush(ctx)
}

// convertFailed handles a source record whose conversion failed with err.
// After a successful retry kr is filled and the partition key returned;
// a skipped record leaves kr zero (no topic: sendBatch acknowledges it
// without producing, so its offset is committable, as Kafka does for
// dropped records); otherwise it returns the error that fails the task.
func (r *SourceRunner) convertFailed(ctx context.Context, rec *plugin.SourceRecord, kr *kgo.Record, arena *[]byte, err error) (string, error) {
	var pkey string
	err = r.errs.handle(ctx, err, func() error {
		var err error
		pkey, err = r.convert(rec, kr, arena)
		return err
	}, failedRecord{source: rec})
	switch err {
	case nil:
		return pkey, nil
	case errSkipped:
		*kr = kgo.Record{}
		return r.partitionKey(rec.SourcePartition)
	}
	return "", err
}
