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
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// receiveWait bounds one wait for a replication message, so that newly
// stored positions reach the server within about this long.
const receiveWait = 200 * time.Millisecond

// acks is what the task's Commit tells the stream goroutine: the position
// of the last record whose offset is stored, and how many records (of the
// snapshot and the stream) are stored.
type acks struct {
	mu    sync.Mutex
	pos   position
	has   bool
	count int64
}

func (a *acks) set(p position, count int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pos, a.has, a.count = p, true, count
}

func (a *acks) get() (position, bool, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pos, a.has, a.count
}

// txEnd remembers, per transaction with delivered changes, how many
// changes it had and where it ended, so a fully stored transaction can be
// confirmed past its end.
type txEnd struct {
	changes int64
	end     pglogrepl.LSN
}

// streamer owns the replication connection: it receives and decodes
// pgoutput messages, hands records to the task through a bounded channel
// and tells the server the confirmed position.
type streamer struct {
	s         settings
	db        string
	partition map[string]any
	log       *slog.Logger
	conn      *pgconn.PgConn
	rels      *relations
	out       chan *plugin.SourceRecord
	acks      *acks
	resume    position // changes covered by it were delivered already
	// baseCount is the number of records delivered before streaming began
	// (the snapshot's); produced counts the records sent on out.
	baseCount int64
	produced  int64

	inTx       bool
	xid        uint32
	commitLSN  pglogrepl.LSN
	commitTime time.Time
	seq        int64
	emitted    bool // a record of the current transaction went out
	txEnds     map[pglogrepl.LSN]txEnd
	lastTxEnd  pglogrepl.LSN
	idleWALEnd pglogrepl.LSN // server WAL end seen outside a transaction

	confirmed  pglogrepl.LSN // last flush position sent
	lastStatus time.Time
}

// run streams until ctx ends or the stream fails; it always returns a
// non-nil error. Before returning it sends a last status update.
func (st *streamer) run(ctx context.Context) error {
	err := st.loop(ctx)
	if st.conn != nil && !st.conn.IsClosed() {
		if serr := st.status(true); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

func (st *streamer) loop(ctx context.Context) error {
	if err := st.status(true); err != nil {
		return err
	}
	for {
		if err := st.status(false); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, receiveWait)
		msg, err := st.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			return fmt.Errorf("receiving from replication slot %s: %w", st.s.slot, err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return fmt.Errorf("parsing a keepalive of replication slot %s: %w", st.s.slot, err)
				}
				if !st.inTx {
					st.idleWALEnd = max(st.idleWALEnd, ka.ServerWALEnd)
				}
				if ka.ReplyRequested {
					if err := st.status(true); err != nil {
						return err
					}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return fmt.Errorf("parsing WAL data of replication slot %s: %w", st.s.slot, err)
				}
				if err := st.handle(ctx, xld); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("replication slot %s: %w", st.s.slot, pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return fmt.Errorf("the server ended the replication stream of slot %s", st.s.slot)
		}
	}
}

// handle decodes one pgoutput message.
func (st *streamer) handle(ctx context.Context, xld pglogrepl.XLogData) error {
	msg, err := pglogrepl.Parse(xld.WALData)
	if err != nil {
		return fmt.Errorf("decoding a pgoutput message at %s: %w", xld.WALStart, err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		return st.rels.fromMessage(ctx, m)
	case *pglogrepl.BeginMessage:
		st.inTx, st.xid, st.commitLSN, st.commitTime, st.seq, st.emitted = true, m.Xid, m.FinalLSN, m.CommitTime, 0, false
	case *pglogrepl.CommitMessage:
		if st.emitted {
			st.txEnds[st.commitLSN] = txEnd{changes: st.seq, end: m.TransactionEndLSN}
		}
		st.inTx = false
		st.lastTxEnd = max(st.lastTxEnd, m.TransactionEndLSN)
	case *pglogrepl.InsertMessage:
		return st.change(ctx, m.RelationID, xld.WALStart, func(r *relation) ([]change, error) {
			after, err := r.rowFromTuple(m.Tuple, nil)
			return []change{{op: OpCreate, after: after}}, err
		})
	case *pglogrepl.UpdateMessage:
		return st.change(ctx, m.RelationID, xld.WALStart, func(r *relation) ([]change, error) {
			var old *pglogrepl.TupleData
			if m.OldTupleType != pglogrepl.UpdateMessageTupleTypeNone {
				old = m.OldTuple
			}
			before, err := r.rowFromTuple(old, nil)
			if err != nil {
				return nil, err
			}
			var full *pglogrepl.TupleData
			if m.OldTupleType == pglogrepl.UpdateMessageTupleTypeOld {
				full = m.OldTuple
			}
			after, err := r.rowFromTuple(m.NewTuple, full)
			if err != nil {
				return nil, err
			}
			if r.keyChanged(before, after) {
				// The row moved to another key: a delete of the old key and
				// a create of the new one, so that consumers keyed by the
				// primary key (compaction, upserting sinks) drop the old row.
				return []change{{op: OpDelete, before: before}, {op: OpCreate, after: after}}, nil
			}
			return []change{{op: OpUpdate, before: before, after: after}}, nil
		})
	case *pglogrepl.DeleteMessage:
		return st.change(ctx, m.RelationID, xld.WALStart, func(r *relation) ([]change, error) {
			before, err := r.rowFromTuple(m.OldTuple, nil)
			return []change{{op: OpDelete, before: before}}, err
		})
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if err := st.change(ctx, id, xld.WALStart, func(*relation) ([]change, error) {
				return []change{{op: OpTruncate}}, nil
			}); err != nil {
				return err
			}
		}
	}
	// Type, Origin and logical decoding messages carry nothing to emit.
	return nil
}

// change counts a change of the current transaction and, unless it was
// delivered before or its table is not captured, emits its records. A
// change may give several: a delete is followed by its tombstone (with
// tombstones.on.delete), a key-changing update gives a delete (and its
// tombstone) and a create. Every record but the last carries the position
// before the change, so a restart between them emits the whole change
// again (a duplicate delete event at worst) rather than lose the rest.
func (st *streamer) change(ctx context.Context, relID uint32, lsn pglogrepl.LSN, build func(*relation) ([]change, error)) error {
	if !st.inTx {
		return fmt.Errorf("replication slot %s: change at %s outside a transaction", st.s.slot, lsn)
	}
	st.seq++
	if st.resume.covers(st.commitLSN, st.seq) {
		return nil
	}
	r, ok := st.rels.byOID[relID]
	if !ok {
		return fmt.Errorf("replication slot %s: change at %s of relation %d without a preceding Relation message", st.s.slot, lsn, relID)
	}
	if r == nil { // not captured
		return nil
	}
	chs, err := build(r)
	if err != nil {
		return fmt.Errorf("change at %s: %w", lsn, err)
	}
	recs := make([]*plugin.SourceRecord, 0, 2*len(chs))
	for _, ch := range chs {
		ch.xid, ch.lsn, ch.commitLSN, ch.commitTime = st.xid, lsn, st.commitLSN, st.commitTime
		rec := r.record(st.s, st.db, st.partition, ch)
		recs = append(recs, rec)
		if ch.op == OpDelete && st.s.tombstones && rec.Key != nil {
			recs = append(recs, tombstone(rec))
		}
	}
	for i, rec := range recs {
		pos := position{lsn: st.commitLSN, seq: st.seq}
		if i < len(recs)-1 {
			pos.seq--
		}
		rec.SourceOffset = pos.offset()
		if err := st.emit(ctx, rec); err != nil {
			return err
		}
	}
	st.emitted = true
	return nil
}

// emit hands a record to the task, waiting while the channel is full and
// keeping the server informed meanwhile (it must hear from us within its
// wal_sender_timeout).
func (st *streamer) emit(ctx context.Context, rec *plugin.SourceRecord) error {
	select {
	case st.out <- rec:
		st.produced++
		return nil
	default:
	}
	tick := time.NewTicker(receiveWait)
	defer tick.Stop()
	for {
		select {
		case st.out <- rec:
			st.produced++
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if err := st.status(false); err != nil {
				return err
			}
		}
	}
}

// target is the position the server may consider flushed: the commit LSN
// of the transaction of the last stored record (its end when all its
// changes are stored), and, when every record handed out is stored and no
// transaction is open, the end of the last transaction or the server's
// WAL end seen since.
func (st *streamer) target() pglogrepl.LSN {
	pos, has, count := st.acks.get()
	t := st.confirmed
	if has && !pos.snapshot {
		c := pos.lsn
		if e, ok := st.txEnds[pos.lsn]; ok && pos.seq >= e.changes {
			c = e.end
		}
		t = max(t, c)
		for lsn := range st.txEnds {
			if lsn < pos.lsn {
				delete(st.txEnds, lsn)
			}
		}
	}
	if !st.inTx && count == st.baseCount+st.produced && len(st.out) == 0 {
		t = max(t, st.lastTxEnd, st.idleWALEnd)
	}
	return t
}

// status sends a standby status update when the confirmed position moved,
// when forced, or when the status interval passed.
func (st *streamer) status(force bool) error {
	t := st.target()
	if !force && t == st.confirmed && time.Since(st.lastStatus) < st.s.statusInterval {
		return nil
	}
	if t == 0 {
		return nil // nothing known yet; never confirm 0/0
	}
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), st.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: t, WALFlushPosition: t, WALApplyPosition: t,
	})
	if err != nil {
		return fmt.Errorf("sending the confirmed position %s of replication slot %s: %w", t, st.s.slot, err)
	}
	if t > st.confirmed {
		st.log.Debug("confirmed position", "slot", st.s.slot, "lsn", t.String())
	}
	st.confirmed, st.lastStatus = t, time.Now()
	return nil
}

// retriable reports whether a stream or setup error may go away by itself:
// a lost connection, or a slot still held by a previous reader.
func retriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "55006" || pgErr.Code == "57P01" || pgErr.Code == "53300" // object in use, admin shutdown, too many connections
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	return errors.As(err, &netErr) || errors.As(err, &connErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed)
}
