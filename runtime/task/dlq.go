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
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

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
	// scrub hides the connector's resolved values (Common.Scrub).
	scrub func(string) string

	mu  sync.Mutex
	err error // first failed write
}

// openDeadLetterQueue creates the producer and the topic when it is
// missing (one partition, the configured replication factor).
func openDeadLetterQueue(ctx context.Context, c *Common, fail func(error)) (*deadLetterQueue, error) {
	topic := c.Errors.DLQTopic
	cl, err := kgo.NewClient(c.clientOpts(clientconfig.Producer, []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic)})...)
	if err != nil {
		return nil, fmt.Errorf("creating the dead letter queue producer: %w", err)
	}
	// The topic is looked up and created by an admin client of its own
	// (the connector's admin.* settings and identity), as Kafka Connect's.
	admCl, err := kgo.NewClient(c.clientOpts(clientconfig.Admin, nil)...)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("creating the dead letter queue admin client: %w", err)
	}
	defer admCl.Close()
	// Bounded like Kafka's admin calls (default.api.timeout.ms), so an
	// unreachable cluster fails the task instead of hanging its start.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	adm := kadm.NewClient(admCl)
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
	return &deadLetterQueue{cfg: c.Errors, id: c.ID, client: cl, metrics: c.Metrics, fail: fail, scrub: c.Scrub}, nil
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
		// The error text may quote the connector's resolved values (a
		// database error echoing a connection string).
		add(HeaderErrorMessage, d.scrub(err.Error()))
		add(HeaderErrorStacktrace, d.scrub(errorChain(err)))
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
		b.WriteString("\n" + string(pe.Stack))
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
