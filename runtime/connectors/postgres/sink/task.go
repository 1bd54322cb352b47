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

package sink

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
)

// Task buffers records and writes them in transactions on its own writer
// goroutine, so that the runtime fetches and converts the next records
// while the database works on the previous ones.
//
// Batching adapts to the load, as a group commit does: the writer never
// idles while records are buffered. When no write is in flight, a Put's
// records are written at once (even a single record); while a write is in
// flight, Puts keep appending, and when it ends the next write takes
// everything buffered, up to batch.size records (more stays for the write
// after). Under load batches grow to batch.size by themselves; under a
// trickle each record is committed within about one transaction's time,
// without waiting for the next offset commit.
//
// The queue, the batching, the failure hand-off and Close and Stop are
// sinkwriter's (its package doc is the contract); this sink adds:
//   - Put appends the records to the buffer, for the writer to take as
//     soon as no write is in flight. It waits only while the buffer
//     already holds batch.size records, and returns a failure of an
//     earlier write instead of taking its records (a retriable one: the
//     runtime puts them again).
//   - At most one write is in flight (a pgx.Conn serves one statement at
//     a time), and writes take records in put order: a batch never
//     commits after a later one, which upserts' last-write-wins relies on.
//   - Flush returns nil only once every record put so far is committed:
//     the runtime commits offsets after it, so upserts stay exactly-once
//     under redelivery. A failed Flush keeps the unwritten records;
//     records delivered again are written again, which upserts absorb.
//   - Close drops the buffered records of revoked partitions after the
//     write in flight.
//
// The writes, one at a time, alone use conn, writers and stages, except
// before Start returns and after Stop.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter // nil without a dead letter queue or error log
	tc     plugin.SinkTaskContext
	// offConn reads the stored offsets in Open (exactly.once); the
	// runtime's goroutine's own, as conn is the writer's
	offConn *pgx.Conn

	// the writes' own
	conn    *pgx.Conn
	writers map[string]*writer // by topic; valid for the current connection
	stages  int
	// pgxCopy sends every COPY through pgx's CopyFrom (tests compare it
	// with the sink's own binary encoding)
	pgxCopy bool

	// Put, Flush and Close are the Writer's; nil before Start.
	*sinkwriter.Writer[*plugin.SinkRecord]
}

// Start parses the configuration, opens the connection and starts the
// writer goroutine.
func (t *Task) Start(ctx context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	t.s, t.log, t.errant, t.tc = s, tc.Logger(), tc.ErrantRecordReporter(), tc
	t.writers = map[string]*writer{}
	conn, err := connect(ctx, config)
	if err != nil {
		return err
	}
	if s.exactlyOnce {
		if err := ensureOffsetsTable(ctx, conn, s.offsetsTable); err != nil {
			conn.Close(context.Background())
			return err
		}
	}
	t.conn = conn
	t.Writer = sinkwriter.Start(sinkwriter.Config[*plugin.SinkRecord]{
		Name: "PostgreSQL", Write: t.writeBatch,
		BatchSize: s.batchSize, MaxQueued: s.batchSize, Go: tc.Go,
	})
	return nil
}

// Open seeks the partitions to the offsets stored in the database with
// exactly.once; otherwise it does nothing (tables are found on their first
// record).
func (t *Task) Open(ctx context.Context, partitions []plugin.TopicPartition) error {
	if !t.s.exactlyOnce {
		return nil
	}
	return t.openExactlyOnce(ctx, partitions)
}

// Stop cancels the write in flight, waits for the writer goroutine and
// closes the connection; unflushed records are delivered again.
func (t *Task) Stop() error {
	t.Writer.Stop()
	if t.offConn != nil {
		_ = t.offConn.Close(context.Background())
		t.offConn = nil
	}
	if t.conn != nil {
		err := t.conn.Close(context.Background())
		t.conn = nil
		return err
	}
	return nil
}

// writeBatch writes one batch (see jdbc.WriteBatch): on a failure for
// good with an errant record reporter, record by record.
func (t *Task) writeBatch(ctx context.Context, batch []*plugin.SinkRecord) ([]*plugin.SinkRecord, error) {
	return jdbc.WriteBatch(ctx, batch, t.write, t.errant)
}
