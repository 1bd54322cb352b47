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

package tablesource

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// maxPollWait bounds how long one Poll blocks when no table is due.
const maxPollWait = time.Second

// tableState is what a task knows about one of its tables.
type tableState struct {
	table     pgcommon.Table
	topic     string
	partition map[string]any // one map per table, reused by every record
	cols      []pgcommon.Mapped
	selectSQL string // SELECT list and FROM
	incIdx    int    // -1 unless an incrementing mode
	tsIdx     int    // -1 unless a timestamp mode
	keyIdx    []int  // primary key columns
	keySchema *data.Schema
	valSchema *data.Schema

	// Position of the last record handed out.
	hasInc  bool
	lastInc int64
	hasTs   bool
	lastTs  time.Time

	nextDue time.Time
}

// stream is an open ordered query over one table, read across polls.
type stream struct {
	ts     *tableState
	rows   pgx.Rows
	cancel context.CancelFunc
	decs   []pgcommon.Decoder
	// slab holds the field (and key field) values of the next records,
	// recs the next records and structs their values and keys: one
	// allocation for many rows instead of several per row.
	slab    []any
	recs    []plugin.SourceRecord
	structs []data.Struct
	// timestamp mode only: the last record read, held back until the next
	// row shows whether its timestamp group is complete.
	pending   *plugin.SourceRecord
	pendingTs time.Time
	// the offset of everything before the pending record's group
	groupBase map[string]any
}

// Task streams its tables into Kafka.
type Task struct {
	s      *settings
	log    *slog.Logger
	pool   *pgxpool.Pool
	tables []*tableState
	next   int // round-robin position
	cur    *stream
	now    func() time.Time
}

var (
	_ plugin.SourceTask          = (*Task)(nil)
	_ plugin.RecordCommitSkipper = (*Task)(nil)
)

// SkipRecordCommits: the task needs no per-record acknowledgement; its
// positions travel as source offsets.
func (t *Task) SkipRecordCommits() bool { return true }

// CommitRecord does nothing.
func (t *Task) CommitRecord(*plugin.SourceRecord, *plugin.RecordMetadata) error { return nil }

// Commit does nothing: the stored offsets are the task's positions.
func (t *Task) Commit(context.Context) error { return nil }

// Start reads the task's tables, their columns and stored offsets.
func (t *Task) Start(ctx context.Context, tc plugin.SourceTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	t.s, t.log = s, tc.Logger()
	if t.now == nil {
		t.now = time.Now
	}
	pool, err := pgcommon.Pool(ctx, config, s.poolMax)
	if err != nil {
		return err
	}
	t.pool = pool
	var tables []pgcommon.Table
	if raw := config[KeyTaskTables]; raw != "" {
		var pairs [][2]string
		if err := json.Unmarshal([]byte(raw), &pairs); err != nil {
			return fmt.Errorf("table source task: %s: %w", KeyTaskTables, err)
		}
		for _, p := range pairs {
			tables = append(tables, pgcommon.Table{Schema: p[0], Name: p[1]})
		}
	} else { // standalone: every table of the connector
		infos, err := ListTables(ctx, pool, s.whitelist, s.pattern)
		if err != nil {
			return fmt.Errorf("table source task: %w", err)
		}
		for _, ti := range infos {
			tables = append(tables, ti.Table)
		}
	}
	parts := make([]map[string]any, 0, len(tables))
	for _, tb := range tables {
		st, err := t.describe(ctx, tb)
		if err != nil {
			return err
		}
		t.tables = append(t.tables, st)
		parts = append(parts, st.partition)
	}
	offsets, err := tc.OffsetReader().Offsets(ctx, parts)
	if err != nil {
		return fmt.Errorf("table source task: reading stored offsets: %w", err)
	}
	for i, off := range offsets {
		if off == nil || i >= len(t.tables) {
			continue
		}
		if err := t.tables[i].restore(off); err != nil {
			return fmt.Errorf("table source task: stored offset of table %s: %w", t.tables[i].table, err)
		}
		t.log.Info("resuming table", "table", t.tables[i].table.String(), "offset", off)
	}
	return nil
}

// describe reads a table's columns and primary key and prepares its query.
func (t *Task) describe(ctx context.Context, tb pgcommon.Table) (*tableState, error) {
	cols, err := pgcommon.Columns(ctx, t.pool, tb)
	if err != nil {
		return nil, fmt.Errorf("table source task: %w", err)
	}
	idx, err := modeColumns(t.s, tb, cols)
	if err != nil {
		return nil, fmt.Errorf("table source task: %w", err)
	}
	pk, err := pgcommon.PrimaryKey(ctx, t.pool, tb)
	if err != nil {
		return nil, fmt.Errorf("table source task: %w", err)
	}
	st := &tableState{table: tb, topic: t.s.topicPrefix + tb.Name, partition: map[string]any{PartitionTable: tb.String()},
		incIdx: idx[0], tsIdx: idx[1]}
	exprs := make([]string, len(cols))
	fields := make([]data.Field, len(cols))
	for i, c := range cols {
		m := pgcommon.MapColumn(c)
		st.cols = append(st.cols, m)
		exprs[i] = m.SelectExpr()
		fields[i] = data.F(c.Name, m.Schema)
	}
	st.valSchema = data.StructOf(tb.Name, fields...)
	if len(pk) > 0 {
		var kf []data.Field
		for _, name := range pk {
			for i, c := range cols {
				if c.Name == name {
					st.keyIdx = append(st.keyIdx, i)
					kf = append(kf, data.F(name, st.cols[i].Schema))
				}
			}
		}
		st.keySchema = data.StructOf(tb.Name+".Key", kf...)
	}
	st.selectSQL = "SELECT " + strings.Join(exprs, ", ") + " FROM " + tb.Quoted()
	return st, nil
}

// restore sets the position from a stored offset.
func (st *tableState) restore(off map[string]any) error {
	if v, ok := off[OffsetIncrementing]; ok && st.incIdx >= 0 {
		n, err := plugin.OffsetInt64(v)
		if err != nil {
			return fmt.Errorf("%s: %w", OffsetIncrementing, err)
		}
		st.hasInc, st.lastInc = true, n
	}
	if v, ok := off[OffsetTimestamp]; ok && st.tsIdx >= 0 {
		ms, err := plugin.OffsetInt64(v)
		if err != nil {
			return fmt.Errorf("%s: %w", OffsetTimestamp, err)
		}
		var nanos int64
		if nv, ok := off[OffsetTimestampNano]; ok {
			if nanos, err = plugin.OffsetInt64(nv); err != nil {
				return fmt.Errorf("%s: %w", OffsetTimestampNano, err)
			}
		}
		sec := ms / 1000
		if ms%1000 < 0 {
			sec--
		}
		st.hasTs, st.lastTs = true, time.Unix(sec, nanos).UTC()
	}
	return nil
}

// offset renders a position as a source offset.
func offset(hasInc bool, inc int64, hasTs bool, ts time.Time) map[string]any {
	m := make(map[string]any, 3)
	if hasInc {
		m[OffsetIncrementing] = inc
	}
	if hasTs {
		m[OffsetTimestamp] = ts.UnixMilli()
		m[OffsetTimestampNano] = int64(ts.Nanosecond())
	}
	return m
}

// query builds the ordered query that continues a table from its position.
func (t *Task) query(st *tableState) (string, []any) {
	var where []string
	var args []any
	var order string
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch t.s.mode {
	case ModeIncrementing:
		inc := pgcommon.QuoteIdent(st.cols[st.incIdx].Name)
		if st.hasInc {
			where = append(where, inc+" > "+arg(st.lastInc))
		}
		order = inc
	case ModeTimestamp, ModeTimestampIncrementing:
		tsCol := pgcommon.QuoteIdent(st.cols[st.tsIdx].Name)
		now := "CURRENT_TIMESTAMP"
		if st.cols[st.tsIdx].Kind == pgcommon.KindTimestamp {
			now = "LOCALTIMESTAMP"
		}
		where = append(where, fmt.Sprintf("%s < %s - make_interval(secs => %s)", tsCol, now, arg(t.s.tsDelay.Seconds())))
		if t.s.mode == ModeTimestamp {
			if st.hasTs {
				where = append(where, tsCol+" > "+arg(st.lastTs))
			}
			order = tsCol
		} else {
			inc := pgcommon.QuoteIdent(st.cols[st.incIdx].Name)
			switch {
			case st.hasTs && st.hasInc:
				where = append(where, fmt.Sprintf("(%s, %s) > (%s, %s)", tsCol, inc, arg(st.lastTs), arg(st.lastInc)))
			case st.hasTs:
				where = append(where, tsCol+" >= "+arg(st.lastTs))
			}
			order = tsCol + ", " + inc
		}
	}
	sql := st.selectSQL
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	if order != "" {
		sql += " ORDER BY " + order
	}
	return sql, args
}

// Poll returns up to batch.max.rows records of the table being streamed,
// opening the next due table's query when none is open. When no table is
// due it waits for the next one (at most a second); a query that finds
// nothing new ends the poll with no records.
func (t *Task) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	waited := false
	for {
		if t.cur == nil {
			st, wait := t.due()
			if st == nil {
				if waited {
					return nil, nil
				}
				waited = true
				timer := time.NewTimer(min(wait, maxPollWait))
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil, nil
				case <-timer.C:
				}
				continue
			}
			if err := t.open(st); err != nil {
				st.nextDue = t.now().Add(min(t.s.pollInterval, time.Second))
				return nil, plugin.Retriable(err)
			}
		}
		return t.read()
	}
}

// due returns the next table whose poll interval elapsed (round-robin), or
// how long until one is due.
func (t *Task) due() (*tableState, time.Duration) {
	if len(t.tables) == 0 {
		return nil, maxPollWait
	}
	now := t.now()
	wait := time.Duration(math.MaxInt64)
	for i := range t.tables {
		st := t.tables[(t.next+i)%len(t.tables)]
		if !now.Before(st.nextDue) {
			t.next = (t.next + i + 1) % len(t.tables)
			return st, 0
		}
		wait = min(wait, st.nextDue.Sub(now))
	}
	return nil, wait
}

// open starts the ordered query of a table.
func (t *Task) open(st *tableState) error {
	sql, args := t.query(st)
	qctx, cancel := context.WithCancel(context.Background())
	rows, err := t.pool.Query(qctx, sql, args...)
	if err != nil {
		cancel()
		return fmt.Errorf("querying table %s: %w", st.table, err)
	}
	fds := rows.FieldDescriptions()
	tm := rows.Conn().TypeMap()
	decs := make([]pgcommon.Decoder, len(st.cols))
	for i, m := range st.cols {
		decs[i] = pgcommon.NewDecoder(tm, m, fds[i].DataTypeOID, fds[i].Format)
	}
	t.cur = &stream{ts: st, rows: rows, cancel: cancel, decs: decs}
	return nil
}

// read returns up to batch.max.rows records from the open stream, closing
// it at its end.
//
// In the incrementing modes the last record of the batch carries the
// position after it; the records before it share one offset, the position
// before the batch (one map per batch instead of one per row). Storing the
// offset of any record therefore never skips a row, and a restart re-sends
// at most the rows of the batch whose last record was not yet stored.
func (t *Task) read() ([]*plugin.SourceRecord, error) {
	cs := t.cur
	st := cs.ts
	out := make([]*plugin.SourceRecord, 0, min(t.s.batchMaxRows, 4096))
	tsMode := t.s.mode == ModeTimestamp
	var base map[string]any
	if t.s.mode != ModeBulk && !tsMode {
		base = offset(st.hasInc, st.lastInc, st.hasTs, st.lastTs)
		defer func() {
			if len(out) > 0 {
				out[len(out)-1].SourceOffset = offset(st.hasInc, st.lastInc, st.hasTs, st.lastTs)
			}
		}()
	}
	for len(out) < t.s.batchMaxRows {
		if !cs.rows.Next() {
			err := cs.rows.Err()
			t.closeStream()
			if err != nil {
				// The rows read so far are good; the table is read again
				// from the last record handed out.
				st.nextDue = t.now().Add(min(t.s.pollInterval, time.Second))
				if len(out) > 0 {
					t.log.Warn("reading table failed; continuing later from the last row sent", "table", st.table.String(), "error", err)
					return out, nil
				}
				return nil, plugin.Retriable(fmt.Errorf("reading table %s: %w", st.table, err))
			}
			if tsMode && cs.pending != nil {
				st.hasTs, st.lastTs = true, cs.pendingTs
				cs.pending.SourceOffset = offset(false, 0, true, cs.pendingTs)
				out = append(out, cs.pending)
			}
			st.nextDue = t.now().Add(t.s.pollInterval)
			return out, nil
		}
		rec, err := t.record(cs, st)
		if err != nil {
			t.closeStream()
			return out, err
		}
		switch {
		case t.s.mode == ModeBulk:
		case tsMode:
			ts := rec.Value.(*data.Struct).GetIndex(st.tsIdx).(time.Time)
			if p := cs.pending; p != nil {
				if !ts.Equal(cs.pendingTs) { // the pending record ends its group
					st.hasTs, st.lastTs = true, cs.pendingTs
					cs.groupBase = offset(false, 0, true, cs.pendingTs)
				}
				p.SourceOffset = cs.groupBase
				out = append(out, p)
			}
			cs.pending, cs.pendingTs = rec, ts
			continue
		default:
			v := rec.Value.(*data.Struct)
			if st.incIdx >= 0 {
				n, err := plugin.OffsetInt64(v.GetIndex(st.incIdx))
				if err != nil {
					t.closeStream()
					return out, fmt.Errorf("table %s: incrementing column %s: %w", st.table, t.s.incColumn, err)
				}
				st.hasInc, st.lastInc = true, n
			}
			if st.tsIdx >= 0 {
				st.hasTs, st.lastTs = true, v.GetIndex(st.tsIdx).(time.Time)
			}
			rec.SourceOffset = base
		}
		out = append(out, rec)
	}
	return out, nil
}

// record decodes the current row.
func (t *Task) record(cs *stream, st *tableState) (*plugin.SourceRecord, error) {
	raw := cs.rows.RawValues()
	n := len(st.valSchema.Fields)
	if len(raw) != n {
		return nil, fmt.Errorf("table %s: a row has %d columns, want %d", st.table, len(raw), n)
	}
	nk := len(st.keyIdx)
	if len(cs.slab) < n+nk {
		cs.slab = make([]any, (n+nk)*256)
	}
	values := cs.slab[:n:n]
	for i, b := range raw {
		v, err := cs.decs[i](b)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", st.table, err)
		}
		if v == nil && !st.valSchema.Fields[i].Schema.Optional {
			return nil, fmt.Errorf("table %s: column %s is NULL but was NOT NULL when the task started; restart the task to read the table's new definition",
				st.table, st.valSchema.Fields[i].Name)
		}
		values[i] = v
	}
	if (st.incIdx >= 0 && values[st.incIdx] == nil) || (st.tsIdx >= 0 && values[st.tsIdx] == nil) {
		// NULLs sort last and cannot be a position: stop before them.
		return nil, fmt.Errorf("table %s: a row has NULL in its %s column; make the column NOT NULL or fill it", st.table, t.modeColumnNames())
	}
	// Each column's decoder yields the Go type of the column's schema
	// (pgcommon.MapColumn and NewDecoder agree by construction) and NULLs
	// were checked above, so the struct needs no further validation.
	if len(cs.recs) == 0 {
		cs.recs, cs.structs = make([]plugin.SourceRecord, 256), make([]data.Struct, 2*256)
	}
	rec, val, key := &cs.recs[0], &cs.structs[0], &cs.structs[1]
	cs.recs, cs.structs = cs.recs[1:], cs.structs[2:]
	data.InitStructTrusted(val, st.valSchema, values)
	*rec = plugin.SourceRecord{SourcePartition: st.partition, Topic: st.topic, ValueSchema: st.valSchema, Value: val}
	if st.keySchema != nil {
		// The key's fields are value fields of the same schemas.
		kv := cs.slab[n : n+nk : n+nk]
		for j, i := range st.keyIdx {
			kv[j] = values[i]
		}
		data.InitStructTrusted(key, st.keySchema, kv)
		rec.KeySchema, rec.Key = st.keySchema, key
	}
	cs.slab = cs.slab[n+nk:]
	return rec, nil
}

func (t *Task) modeColumnNames() string {
	var names []string
	if t.s.usesTimestamp() {
		names = append(names, t.s.tsColumn)
	}
	if t.s.usesIncrementing() {
		names = append(names, t.s.incColumn)
	}
	return strings.Join(names, "/")
}

// closeStream ends the open query without reading its remaining rows.
func (t *Task) closeStream() {
	if t.cur == nil {
		return
	}
	t.cur.cancel() // a cancelled query is not drained by Close
	t.cur.rows.Close()
	t.cur = nil
}

// Stop closes the open query and the pool.
func (t *Task) Stop() error {
	t.closeStream()
	if t.pool != nil {
		t.pool.Close()
	}
	return nil
}
