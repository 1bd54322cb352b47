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

package elasticsearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
)

// Task turns records into _bulk actions and sends them on its own
// goroutines, up to max.in.flight.requests requests at a time, while the
// runtime fetches and converts the next records.
//
// The queue, Flush, Close and Stop and the failure hand-off are
// sinkwriter's (its package doc is the contract); this sink adds:
//   - Put renders each record's action (a record that makes none is a bad
//     record: errors.tolerance, the dead letter queue) and queues it. It
//     waits while max.buffered.records records are queued or in flight.
//   - A request takes batch.size actions, or fewer once the oldest has
//     waited linger.ms or a Flush asks. Requests may complete in any
//     order: with key.ignore=false every action carries the record's
//     offset as external version, so the server keeps the newest whatever
//     the order; with key.ignore=true every record is its own document.
//   - A request that still fails after max.retries (429, 5xx, network)
//     queues its unwritten records again, and the next Put or Flush
//     returns the failure once, as retriable: an outage is retried
//     through. Any other failure (credentials refused, a malformed
//     document under behavior.on.malformed.documents=fail that the
//     errors.* handling does not take) fails the task.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter // nil without a dead letter queue or error log
	client *client
	bodies sync.Pool // *bytes.Buffer request bodies
	// Open, Flush and Close are the Writer's; nil before Start.
	*sinkwriter.Writer[op]
}

// Start parses the configuration and starts the writer.
func (t *Task) Start(_ context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	t.s, t.log, t.errant = s, tc.Logger(), tc.ErrantRecordReporter()
	t.client = newClient(s)
	t.bodies.New = func() any { return new(bytes.Buffer) }
	t.Writer = sinkwriter.Start(sinkwriter.Config[op]{
		Name: "Elasticsearch", Write: t.request,
		BatchSize: s.batchSize, MaxInFlight: s.maxInFlight, MaxHeld: s.maxBuffered, Linger: s.linger,
		Go: tc.Go, Log: t.log,
	})
	return nil
}

// Put renders the records' actions and queues them.
func (t *Task) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	return t.Writer.PutRecords(ctx, records, t.render, t.errant)
}

// render builds a record's action; its error names the record.
func (t *Task) render(r *plugin.SinkRecord) (op, error) {
	o, err := t.s.build(r)
	if err != nil && !errors.Is(err, sinkwriter.ErrSkip) {
		err = fmt.Errorf("record %s cannot be written: %w", position(r), err)
	}
	return o, err
}

// JSONValues implements plugin.SinkJSONValues: a value is only rendered as
// a document.
func (t *Task) JSONValues() (data.JSONEncoder, bool) { return encoder, true }

// badRecord hands a record that cannot be written to the errors.*
// handling (which skips it under errors.tolerance=all, after the dead
// letter queue took it), or returns the error that fails the task.
func (t *Task) badRecord(ctx context.Context, r *plugin.SinkRecord, err error) error {
	if t.errant == nil {
		return err
	}
	return t.errant.Report(ctx, r, err)
}

// Stop cancels the requests in flight and waits for them.
func (t *Task) Stop() error {
	if t.Writer == nil {
		return nil
	}
	t.Writer.Stop()
	t.client.close()
	return nil
}

// request sends one batch; it returns the records not written.
func (t *Task) request(ctx context.Context, batch []op) ([]op, error) {
	body := t.bodies.Get().(*bytes.Buffer)
	out := t.client.send(ctx, batch, body)
	if body.Cap() <= 64<<20 {
		t.bodies.Put(body)
	}
	err := out.err
	for _, rj := range out.rejected {
		if err != nil && !plugin.IsRetriable(err) {
			break
		}
		if rerr := t.malformed(ctx, rj); rerr != nil {
			err = rerr
		}
	}
	return out.left, err
}

// malformed applies behavior.on.malformed.documents to a refused document.
func (t *Task) malformed(ctx context.Context, rj rejection) error {
	switch t.s.malformed {
	case BehaviorIgnore:
		return nil
	case BehaviorWarn:
		t.log.Warn("skipping a document the server refused", "topic", rj.rec.Topic, "partition", rj.rec.Partition, "offset", rj.rec.Offset, "status", rj.status, "reason", rj.reason)
		return nil
	}
	return t.badRecord(ctx, rj.rec, rj.error())
}
