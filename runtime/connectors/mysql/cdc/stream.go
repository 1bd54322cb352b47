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
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/conveyor-dev/conveyor/runtime/connectors/cdcevent"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// ErrBinlogPurged means the binlog at the stored position is no longer
// on the server.
var ErrBinlogPurged = errors.New("binlog purged")

// tx is the transaction being read.
type tx struct {
	gtid     string // its GTID ("" without GTIDs)
	gtidsPre string // the GTID set executed before it
	file     string
	pos      uint32 // where it starts
	serverID uint32
	commit   time.Time
	n        int64 // records made of it so far
}

// streamer turns binlog events into records.
type streamer struct {
	s         settings
	srv       server
	db        *sql.DB
	syncer    *replication.BinlogSyncer
	bs        *replication.BinlogStreamer
	partition map[string]any
	captured  map[string]bool   // database.table → captured
	tables    map[string]*table // loaded lazily; reset by DDL
	gset      gomysql.GTIDSet   // executed before the current transaction
	file      string            // current binlog file
	tx        tx
	inTx      bool
	skip      *position // the stored position: records of its transaction up to its row were delivered
	from      position
}

// startStream starts reading the binlog from p: after the GTID set (or
// at the file and position) of p's transaction, skipping the records of
// that transaction up to p's row.
func startStream(s settings, srv server, db *sql.DB, captured []mycommon.Table, p position, partition map[string]any) (*streamer, error) {
	cfg, err := mycommon.Config(s.config)
	if err != nil {
		return nil, err
	}
	host, port, err := splitHostPort(cfg.Addr)
	if err != nil {
		return nil, err
	}
	sc := replication.BinlogSyncerConfig{
		ServerID: s.serverID, Flavor: srv.flavor(), Host: host, Port: port, User: cfg.User, Password: cfg.Passwd,
		TLSConfig:               nil,
		TimestampStringLocation: time.UTC,
		HeartbeatPeriod:         10 * time.Second,
		ReadTimeout:             30 * time.Second,
		DisableRetrySync:        true, // the task reconnects from its own position
		Logger:                  discardLogger,
	}
	st := &streamer{s: s, srv: srv, db: db, partition: partition, captured: map[string]bool{}, tables: map[string]*table{}, from: p}
	for _, t := range captured {
		st.captured[t.String()] = true
	}
	skip := p
	skip.snapshot = false
	st.skip = &skip
	st.file = p.file
	var byGTID bool
	if st.gset, byGTID, err = resumeFrom(srv, p); err != nil {
		return nil, err
	}
	st.syncer = replication.NewBinlogSyncer(sc)
	if byGTID {
		st.bs, err = st.syncer.StartSyncGTID(st.gset.Clone())
	} else {
		st.bs, err = st.syncer.StartSync(gomysql.Position{Name: p.file, Pos: p.pos})
	}
	if err != nil {
		st.syncer.Close()
		return nil, st.explain(fmt.Errorf("starting to read the binlog: %w", err))
	}
	return st, nil
}

// resumeFrom parses p's GTID set in the server's flavor (MariaDB's
// domain-server-sequence list, MySQL's uuid:interval sets) and says whether
// the stream resumes from it (the server writes GTIDs and p has a set, or
// no file) or from p's binlog file and position.
func resumeFrom(srv server, p position) (gset gomysql.GTIDSet, byGTID bool, err error) {
	if gset, err = gomysql.ParseGTIDSet(srv.flavor(), p.gtids); err != nil {
		return nil, false, fmt.Errorf("stored offset: GTID set %q is not a %s GTID set (was the offset stored against another server?): %w", p.gtids, srv.flavor(), err)
	}
	return gset, srv.gtid && (p.gtids != "" || p.gtid != "" || p.file == ""), nil
}

func (st *streamer) close() {
	if st.syncer != nil {
		st.syncer.Close()
	}
}

// where names the stream's start for messages.
func (st *streamer) where() string {
	if st.srv.gtid {
		return fmt.Sprintf("GTID set %q (binlog %s:%d)", st.from.gtids, st.from.file, st.from.pos)
	}
	return fmt.Sprintf("binlog %s:%d", st.from.file, st.from.pos)
}

// explain turns the server's "binlog not found" (error 1236) into
// ErrBinlogPurged with the way out.
func (st *streamer) explain(err error) error {
	var me *gomysql.MyError
	if errors.As(err, &me) && me.Code == gomysql.ER_MASTER_FATAL_ERROR_READING_BINLOG || strings.Contains(err.Error(), "1236") {
		return fmt.Errorf("%w: the server no longer has the binlog at the stored position, %s (purged by expire_logs_days/binlog_expire_logs_seconds or PURGE BINARY LOGS): "+
			"changes made since are lost to this connector; reset its offsets to take a new snapshot (the KafkaConnector's spec.offsets with reset: true, "+
			"or PUT /connectors/NAME/stop, DELETE /connectors/NAME/offsets, PUT /connectors/NAME/resume) and keep binlogs longer than the connector may be down: %v", ErrBinlogPurged, st.where(), err)
	}
	return err
}

// next reads events for up to wait and returns up to max records.
func (st *streamer) next(ctx context.Context, max int, wait time.Duration) ([]*plugin.SourceRecord, error) {
	var out []*plugin.SourceRecord
	deadline := time.Now().Add(wait)
	for len(out) < max {
		ectx, cancel := context.WithDeadline(ctx, deadline)
		if len(out) > 0 {
			// Hand out what is there once no event waits.
			cancel()
			ectx, cancel = context.WithTimeout(ctx, time.Millisecond)
		}
		ev, err := st.bs.GetEvent(ectx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				return out, nil
			}
			return out, st.explain(err)
		}
		recs, err := st.handle(ctx, ev)
		if err != nil {
			return out, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

func (st *streamer) handle(ctx context.Context, ev *replication.BinlogEvent) ([]*plugin.SourceRecord, error) {
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		st.file = string(e.NextLogName)
	case *replication.MariadbGTIDEvent:
		st.begin(h, e.GTID.String())
	case *replication.GtidTaggedLogEvent:
		// go-mysql v1.14's MySQL GTID sets have no tags: the task could
		// neither resume after this transaction nor skip it.
		return nil, fmt.Errorf("binlog %s:%d: a transaction with a tagged GTID (MySQL 8.4 gtid_next=AUTOMATIC:%s), which the connector cannot track: "+
			"commit the captured tables' changes without a GTID tag", st.file, h.LogPos-h.EventSize, e.Tag)
	case *replication.TransactionPayloadEvent:
		// MySQL's binlog_transaction_compression: the transaction's
		// events, decompressed.
		var out []*plugin.SourceRecord
		for _, inner := range e.Events {
			recs, err := st.handle(ctx, inner)
			if err != nil {
				return out, err
			}
			out = append(out, recs...)
		}
		return out, nil
	case *replication.GTIDEvent:
		if e.GNO == 0 {
			// MySQL's anonymous GTID event (gtid_mode OFF or a
			// transaction without a GTID under ON_PERMISSIVE): the
			// transaction is tracked by its file and position.
			st.begin(h, "")
			return nil, nil
		}
		g, err := e.GTIDNext()
		if err != nil {
			return nil, fmt.Errorf("binlog GTID event: %w", err)
		}
		st.begin(h, g.String())
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(e.Query))
		if strings.EqualFold(q, "BEGIN") {
			if !st.inTx {
				st.begin(h, "")
			}
			return nil, nil
		}
		if !strings.EqualFold(q, "COMMIT") {
			// A DDL statement (it commits by itself): tables are read
			// again from the catalog at their next change.
			clear(st.tables)
		}
		return nil, st.end()
	case *replication.XIDEvent:
		return nil, st.end()
	case *replication.RowsEvent:
		return st.rows(ctx, h, e)
	}
	return nil, nil
}

func (st *streamer) begin(h *replication.EventHeader, gtid string) {
	st.inTx = true
	st.tx = tx{gtid: gtid, gtidsPre: st.gset.String(), file: st.file, pos: h.LogPos - h.EventSize, serverID: h.ServerID, commit: time.Unix(int64(h.Timestamp), 0)}
}

func (st *streamer) end() error {
	if st.inTx && st.tx.gtid != "" {
		if err := st.gset.Update(st.tx.gtid); err != nil {
			return fmt.Errorf("binlog: GTID %s: %w", st.tx.gtid, err)
		}
	}
	if st.inTx && st.skip != nil && st.skip.sameTx(st.tx.gtid, st.tx.file, st.tx.pos) {
		st.skip = nil
	}
	st.inTx = false
	return nil
}

// table returns a captured table (nil when not captured) with the
// columns of the binlog's row images. The catalog describes the table as
// it is now, which is later than the event when the task lags behind a
// DDL statement: a table map with column names (binlog_row_metadata=FULL)
// picks its columns from the catalog by name; without names, a table map
// with fewer columns than the catalog takes the first ones (ADD COLUMN
// appends at the end). Anything else is an error that names the way out.
func (st *streamer) table(ctx context.Context, e *replication.RowsEvent) (*table, error) {
	id := mycommon.Table{Schema: string(e.Table.Schema), Name: string(e.Table.Table)}
	if !st.captured[id.String()] {
		return nil, nil
	}
	names := e.Table.ColumnNameString()
	view := fmt.Sprintf("%s#%d#%s", id, e.Table.ColumnCount, strings.Join(names, ","))
	if t := st.tables[view]; t != nil {
		return t, nil
	}
	t, err := loadTable(ctx, st.s, st.db, id)
	if err != nil {
		return nil, err
	}
	n := int(e.Table.ColumnCount)
	switch {
	case len(names) == n:
		if t, err = t.pick(names); err != nil {
			return nil, fmt.Errorf("%w at GTID %s (binlog %s:%d): the table changed since; reset the connector's offsets to take a new snapshot", err, st.tx.gtid, st.tx.file, st.tx.pos)
		}
	case n < len(t.columns):
		names = make([]string, n)
		for i := range names {
			names[i] = t.columns[i].Name
		}
		if t, err = t.pick(names); err != nil {
			return nil, err
		}
	case n > len(t.columns):
		return nil, fmt.Errorf("table %s: the binlog has %d columns at GTID %s (binlog %s:%d), the table now %d: "+
			"columns were dropped since and the binlog does not name its columns (binlog_row_metadata=FULL would); reset the connector's offsets to take a new snapshot",
			id, n, st.tx.gtid, st.tx.file, st.tx.pos, len(t.columns))
	}
	st.tables[view] = t
	return t, nil
}

func (st *streamer) rows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent) ([]*plugin.SourceRecord, error) {
	t, err := st.table(ctx, e)
	if err != nil || t == nil {
		return nil, err
	}
	if !st.inTx {
		st.begin(h, "")
	}
	var out []*plugin.SourceRecord
	emit := func(rec *plugin.SourceRecord) {
		st.tx.n++
		if st.skip != nil && st.skip.sameTx(st.tx.gtid, st.tx.file, st.tx.pos) && st.tx.n <= st.skip.row {
			return // delivered before the restart
		}
		rec.SourcePartition = st.partition
		rec.SourceOffset = position{gtids: st.tx.gtidsPre, gtid: st.tx.gtid, file: st.tx.file, pos: st.tx.pos, row: st.tx.n}.offset()
		out = append(out, rec)
	}
	record := func(op string, before, after *data.Struct) {
		rec := t.schemas.Record(t.topic, cdcevent.Change{Op: op, Before: before, After: after, Source: st.source(t), Commit: st.tx.commit})
		emit(rec)
		if op == cdcevent.OpDelete && st.s.tombstones && rec.Key != nil {
			emit(cdcevent.Tombstone(rec))
		}
	}
	change := func(op string, beforeVals, afterVals []any) error {
		var before, after *data.Struct
		var err error
		if beforeVals != nil {
			if before, err = t.rowFromBinlog(beforeVals, nil); err != nil {
				return err
			}
		}
		if afterVals != nil {
			if after, err = t.rowFromBinlog(afterVals, nil); err != nil {
				return err
			}
		}
		if op == cdcevent.OpUpdate && t.schemas.KeyChanged(before, after) {
			// As Debezium: a delete of the old key (and its tombstone),
			// then a create of the new one.
			record(cdcevent.OpDelete, before, nil)
			record(cdcevent.OpCreate, nil, after)
			return nil
		}
		record(op, before, after)
		return nil
	}
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		for _, r := range e.Rows {
			if err := change(cdcevent.OpCreate, nil, r); err != nil {
				return nil, err
			}
		}
	case replication.EnumRowsEventTypeDelete:
		for _, r := range e.Rows {
			if err := change(cdcevent.OpDelete, r, nil); err != nil {
				return nil, err
			}
		}
	case replication.EnumRowsEventTypeUpdate:
		for i := 0; i+1 < len(e.Rows); i += 2 {
			if err := change(cdcevent.OpUpdate, e.Rows[i], e.Rows[i+1]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (st *streamer) source(t *table) *data.Struct {
	src := data.NewStruct(SourceSchema).
		Put("connector", "mysql").
		Put("name", st.s.topicPrefix).
		Put("db", t.id.Schema).
		Put("table", t.id.Name).
		Put("snapshot", "false").
		Put("server_id", int64(st.tx.serverID)).
		Put("file", st.tx.file).
		Put("pos", int64(st.tx.pos)).
		Put("row", int32(st.tx.n+1)).
		Put("ts_ms", st.tx.commit.UnixMilli())
	if st.tx.gtid != "" {
		src.Put("gtid", st.tx.gtid)
	}
	return src
}
