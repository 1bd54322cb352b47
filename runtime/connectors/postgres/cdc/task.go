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

package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Task reads the replication slot. Its work happens in Poll: the first
// call connects and sets up publication and slot (and the snapshot); a
// failure that may pass (the server unreachable, the slot still held by a
// previous reader) is returned as retriable and the next Poll sets up
// again, resuming after the last record already handed out.
type Task struct {
	s         settings
	log       *slog.Logger
	tc        plugin.SourceTaskContext
	partition map[string]any

	ctx    context.Context // lives from Start to Stop
	cancel context.CancelFunc

	stored  *position // from the offset store at Start
	polled  position  // position of the last record handed out
	hasPoll bool
	npolled int64 // records handed out

	prefix    ackedPrefix // records handed out, as Kafka acknowledges them
	nacked    int64
	acks      acks
	db        string
	conn      *pgx.Conn      // regular connection: catalog, snapshot
	repl      *pgconn.PgConn // replication connection
	snap      *snapshot
	out       chan *plugin.SourceRecord
	done      chan struct{} // closed when the stream goroutine ended
	streamErr error
}

// Start reads the stored position; connecting waits for the first Poll.
func (t *Task) Start(ctx context.Context, tc plugin.SourceTaskContext, config map[string]string) error {
	s, err := parseSettings(config)
	if err != nil {
		return err
	}
	t.s, t.log, t.tc = s, tc.Logger(), tc
	t.partition = map[string]any{PartitionSlot: s.slot}
	off, err := tc.OffsetReader().Offset(ctx, t.partition)
	if err != nil {
		return fmt.Errorf("postgres cdc: reading the stored position: %w", err)
	}
	if off != nil {
		p, err := parsePosition(off)
		if err != nil {
			return fmt.Errorf("postgres cdc: %w", err)
		}
		t.stored = &p
		t.log.Info("resuming from the stored position", "slot", s.slot, "lsn", p.lsn.String(), "seq", p.seq, "snapshot_unfinished", p.snapshot)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return nil
}

// Poll returns the next snapshot rows or streamed changes.
func (t *Task) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	if t.snap == nil && t.out == nil {
		if err := t.setup(ctx); err != nil {
			t.teardown()
			if retriable(err) && ctx.Err() == nil {
				return nil, plugin.Retriable(fmt.Errorf("postgres cdc: %w", t.s.conn.redact(err)))
			}
			return nil, fmt.Errorf("postgres cdc: %w", t.s.conn.redact(err))
		}
	}
	if t.snap != nil {
		recs, done, err := t.snap.next(t.ctx, t.s.batchSize)
		if err != nil {
			t.teardown()
			if retriable(err) {
				return nil, plugin.Retriable(fmt.Errorf("postgres cdc: snapshot: %w", t.s.conn.redact(err)))
			}
			return nil, fmt.Errorf("postgres cdc: snapshot: %w", t.s.conn.redact(err))
		}
		t.handedOut(recs)
		if done {
			t.log.Info("initial snapshot finished", "slot", t.s.slot, "rows", t.snap.rows, "consistent_point", t.snap.cp.String())
			cp := t.snap.cp
			t.snap = nil
			if !t.hasPoll { // an empty snapshot: stream from the consistent point
				t.polled, t.hasPoll = position{lsn: cp}, true
			}
			if err := t.startStream(cp); err != nil {
				t.teardown()
				return recs, nil // the next Poll sets up again, after these records
			}
		}
		return recs, nil
	}
	return t.pollStream(ctx)
}

func (t *Task) handedOut(recs []*plugin.SourceRecord) {
	if len(recs) == 0 {
		return
	}
	p, err := parsePosition(recs[len(recs)-1].SourceOffset)
	if err == nil {
		t.polled, t.hasPoll = p, true
	}
	t.npolled += int64(len(recs))
	t.prefix.handedOut(recs)
}

func (t *Task) pollStream(ctx context.Context) ([]*plugin.SourceRecord, error) {
	timer := time.NewTimer(t.s.pollInterval)
	defer timer.Stop()
	var batch []*plugin.SourceRecord
	select {
	case rec := <-t.out:
		batch = append(batch, rec)
	case <-t.done:
		// Hand out what the goroutine produced before it ended.
		select {
		case rec := <-t.out:
			batch = append(batch, rec)
		default:
			err := t.streamErr
			t.teardown()
			if retriable(err) && ctx.Err() == nil {
				return nil, plugin.Retriable(fmt.Errorf("postgres cdc: %w", t.s.conn.redact(err)))
			}
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, fmt.Errorf("postgres cdc: %w", t.s.conn.redact(err))
		}
	case <-timer.C:
		return nil, nil
	case <-ctx.Done():
		return nil, nil
	}
	for len(batch) < t.s.batchSize {
		select {
		case rec := <-t.out:
			batch = append(batch, rec)
			continue
		default:
		}
		break
	}
	t.handedOut(batch)
	return batch, nil
}

// setup connects, makes sure publication and slot exist, and starts the
// snapshot or the stream.
func (t *Task) setup(ctx context.Context) error {
	conn, err := t.s.conn.connect(t.ctx)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	t.conn = conn
	var walLevel string
	if err := conn.QueryRow(ctx, "SELECT current_database(), current_setting('wal_level')").Scan(&t.db, &walLevel); err != nil {
		return fmt.Errorf("reading the server settings: %w", err)
	}
	if err := CheckWalLevel(walLevel); err != nil {
		return err
	}
	if t.s.autocreate {
		if err := ensurePublication(ctx, conn, t.s, t.log); err != nil {
			return err
		}
	}
	slot, err := readSlot(ctx, conn, t.s.slot)
	if err != nil {
		return err
	}
	if slot != nil && slot.database != t.db {
		return fmt.Errorf("replication slot %s belongs to database %s, not %s: set %s to a slot of this database", t.s.slot, slot.database, t.db, KeySlotName)
	}
	if slot != nil && slot.plugin != "pgoutput" {
		return fmt.Errorf("replication slot %s uses output plugin %s, not pgoutput: drop it or set %s to another slot", t.s.slot, slot.plugin, KeySlotName)
	}
	repl, err := t.s.conn.connectReplication(t.ctx)
	if err != nil {
		return fmt.Errorf("opening the replication connection: %w", err)
	}
	t.repl = repl

	resumed := t.hasPoll || t.stored != nil
	snapshotDone := t.hasPoll && !t.polled.snapshot || !t.hasPoll && t.stored != nil && !t.stored.snapshot
	if t.s.snapshot == SnapshotInitial && !snapshotDone {
		// A consistent snapshot needs a fresh slot: its exported snapshot
		// is the state as of its consistent point.
		if slot != nil {
			t.log.Info("dropping the replication slot to take the initial snapshot from a new one", "slot", t.s.slot)
			if err := pglogrepl.DropReplicationSlot(ctx, repl, t.s.slot, pglogrepl.DropReplicationSlotOptions{}); err != nil {
				return fmt.Errorf("dropping replication slot %s: %w", t.s.slot, err)
			}
		}
		res, err := pglogrepl.CreateReplicationSlot(ctx, repl, t.s.slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
		if err != nil {
			return fmt.Errorf("creating replication slot %s: %w", t.s.slot, err)
		}
		cp, err := pglogrepl.ParseLSN(res.ConsistentPoint)
		if err != nil {
			return fmt.Errorf("replication slot %s: consistent point %q: %w", t.s.slot, res.ConsistentPoint, err)
		}
		t.log.Info("created replication slot; taking the initial snapshot", "slot", t.s.slot, "consistent_point", cp.String())
		sn, err := beginSnapshot(ctx, t.s, conn, res.SnapshotName, cp, t.db, t.partition)
		if err != nil {
			return err
		}
		t.snap = sn
		t.hasPoll, t.polled = false, position{}
		return nil
	}
	start := pglogrepl.LSN(0)
	if slot == nil {
		res, err := pglogrepl.CreateReplicationSlot(ctx, repl, t.s.slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"})
		if err != nil {
			return fmt.Errorf("creating replication slot %s: %w", t.s.slot, err)
		}
		if start, err = pglogrepl.ParseLSN(res.ConsistentPoint); err != nil {
			return fmt.Errorf("replication slot %s: consistent point %q: %w", t.s.slot, res.ConsistentPoint, err)
		}
		if resumed {
			t.log.Warn("the replication slot was missing and is created anew: changes made since the stored position and before now are not captured",
				"slot", t.s.slot, "stored_lsn", t.resume().lsn.String(), "new_start", start.String())
		} else {
			t.log.Info("created replication slot", "slot", t.s.slot, "start", start.String())
		}
	} else {
		start = slot.confirmed
	}
	return t.startStream(start)
}

// resume is the position up to which changes were handed out (this run)
// or stored (a previous run).
func (t *Task) resume() position {
	if t.hasPoll {
		return t.polled
	}
	if t.stored != nil {
		return *t.stored
	}
	return position{}
}

// startStream starts replication at start and the goroutine that reads it.
func (t *Task) startStream(start pglogrepl.LSN) error {
	args := []string{"proto_version '1'", "publication_names " + quoteLiteral(t.s.publication)}
	if err := pglogrepl.StartReplication(t.ctx, t.repl, t.s.slot, start, pglogrepl.StartReplicationOptions{Mode: pglogrepl.LogicalReplication, PluginArgs: args}); err != nil {
		return fmt.Errorf("starting replication from slot %s at %s: %w", t.s.slot, start, err)
	}
	t.log.Info("streaming changes", "slot", t.s.slot, "publication", t.s.publication, "start", start.String(), "skip_through", t.resume().lsn.String())
	out := make(chan *plugin.SourceRecord, 2*t.s.batchSize)
	done := make(chan struct{})
	st := &streamer{
		s: t.s, db: t.db, partition: t.partition, log: t.log, conn: t.repl,
		rels: newRelations(t.s, t.conn), out: out, acks: &t.acks, resume: t.resume(),
		baseCount: t.npolled, txEnds: map[pglogrepl.LSN]txEnd{}, confirmed: start,
	}
	t.out, t.done = out, done
	ctx := t.ctx
	t.tc.Go(func() error {
		defer close(done)
		// A panic in st.run fails the task through Go, with its stack;
		// Poll then ends the stream with this error.
		t.streamErr = errStreamPanicked
		t.streamErr = st.run(ctx)
		return nil
	})
	return nil
}

// errStreamPanicked is what Poll reports after the stream goroutine
// panicked (the runtime failed the task with the panic itself).
var errStreamPanicked = errors.New("decoding the replication stream panicked")

// teardown stops the stream goroutine and closes the connections; the
// next Poll sets up again.
func (t *Task) teardown() {
	if t.done != nil {
		// Only the goroutine's context can stop it; replace it.
		t.cancel()
		<-t.done
		t.ctx, t.cancel = context.WithCancel(context.Background())
	}
	if t.snap != nil {
		t.snap.close(t.ctx)
		t.snap = nil
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if t.repl != nil {
		_ = t.repl.Close(closeCtx)
		t.repl = nil
	}
	if t.conn != nil {
		_ = t.conn.Close(closeCtx)
		t.conn = nil
	}
	t.out, t.done, t.streamErr = nil, nil, nil
}

// CommitRecord notes a record Kafka acknowledged.
func (t *Task) CommitRecord(rec *plugin.SourceRecord, _ *plugin.RecordMetadata) error {
	t.nacked++
	t.prefix.acked(rec)
	return nil
}

// Commit runs after the runner stored the offset of the last record
// acknowledged together with every record before it (the connector has one
// source partition): the stream goroutine may now confirm that record's
// position to the server, and no further, even when later records were
// acknowledged already (they may sit in other Kafka partitions).
func (t *Task) Commit(context.Context) error {
	if t.prefix.last == nil {
		return nil
	}
	p, err := parsePosition(t.prefix.last)
	if err != nil {
		return fmt.Errorf("postgres cdc: acknowledged record: %w", err)
	}
	t.acks.set(p, t.nacked)
	return nil
}

// Stop ends the stream (sending a last confirmed position) and closes the
// connections.
func (t *Task) Stop() error {
	if t.cancel == nil {
		return nil
	}
	t.teardown()
	t.cancel()
	return nil
}
