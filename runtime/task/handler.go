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

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

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
