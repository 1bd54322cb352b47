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
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// tableState is what a task knows about one of its tables.
type tableState struct {
	jdbc.SourceTable
	table     pgcommon.Table
	topic     string
	cols      []pgcommon.Mapped
	keyIdx    []int // primary key columns
	keySchema *data.Schema
	valSchema *data.Schema
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
}

// Task streams its tables into Kafka through the shared reader
// (jdbc.Reader: scheduling, positions and offsets); it adds the
// PostgreSQL queries and the decoding of rows.
type Task struct {
	s      *settings
	log    *slog.Logger
	pool   *pgxpool.Pool
	tables []*tableState
	jdbc.SourceTask
	now func() time.Time
}

var (
	_ plugin.SourceTask          = (*Task)(nil)
	_ plugin.RecordCommitSkipper = (*Task)(nil)
)

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
	tables, err := jdbc.TablesOf(config, func(schema, name string) pgcommon.Table { return pgcommon.Table{Schema: schema, Name: name} },
		func() ([]TableInfo, error) { return ListTables(ctx, pool, s.Whitelist, s.Pattern) },
		func(ti TableInfo) pgcommon.Table { return ti.Table })
	if err != nil {
		return err
	}
	readers := make([]*jdbc.SourceTable, 0, len(tables))
	for _, tb := range tables {
		st, err := t.describe(ctx, tb)
		if err != nil {
			return err
		}
		t.tables = append(t.tables, st)
		readers = append(readers, &st.SourceTable)
	}
	return t.StartReader(ctx, dialect{}, s.SourceSettings, t.log, t.now, readers, tc.OffsetReader())
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
	st := &tableState{table: tb, topic: t.s.TopicPrefix + tb.Name}
	st.Name, st.IncIdx, st.TsIdx = tb.String(), idx[0], idx[1]
	st.Partition = map[string]any{jdbc.PartitionTable: st.Name} // one map per table, reused by every record
	if st.IncIdx >= 0 {
		st.Columns.Inc = cols[st.IncIdx].Name
	}
	if st.TsIdx >= 0 {
		st.Columns.Ts = cols[st.TsIdx].Name
		st.Columns.TsZoned = pgcommon.MapColumn(cols[st.TsIdx]).Kind == pgcommon.KindTimestamptz
	}
	st.Open = func(ctx context.Context, sql string, args []any) (jdbc.Stream, error) { return t.open(st, sql, args) }
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
	st.SelectSQL = "SELECT " + strings.Join(exprs, ", ") + " FROM " + tb.Quoted()
	return st, nil
}

// dialect is PostgreSQL's SQL for the shared query builder.
type dialect struct{}

func (dialect) QuoteIdent(name string) string { return pgcommon.QuoteIdent(name) }

func (dialect) Placeholder(n int) string { return fmt.Sprintf("$%d", n) }

func (dialect) OlderThan(col string, zoned bool, param string) string {
	now := "LOCALTIMESTAMP"
	if zoned {
		now = "CURRENT_TIMESTAMP"
	}
	return fmt.Sprintf("%s < %s - make_interval(secs => %s)", col, now, param)
}

// Poll returns the next records of the task's tables (see jdbc.Reader).

// open starts the ordered query of a table.
func (t *Task) open(st *tableState, sql string, args []any) (jdbc.Stream, error) {
	qctx, cancel := context.WithCancel(context.Background())
	rows, err := t.pool.Query(qctx, sql, args...)
	if err != nil {
		cancel()
		return nil, err
	}
	fds := rows.FieldDescriptions()
	tm := rows.Conn().TypeMap()
	decs := make([]pgcommon.Decoder, len(st.cols))
	for i, m := range st.cols {
		decs[i] = pgcommon.NewDecoder(tm, m, fds[i].DataTypeOID, fds[i].Format)
	}
	return &stream{ts: st, rows: rows, cancel: cancel, decs: decs}, nil
}

func (cs *stream) Next() bool { return cs.rows.Next() }

func (cs *stream) Err() error { return cs.rows.Err() }

// Close ends the query without reading its remaining rows.
func (cs *stream) Close() {
	cs.cancel() // a cancelled query is not drained by Close
	cs.rows.Close()
}

// Record decodes the current row.
func (cs *stream) Record() (*plugin.SourceRecord, error) {
	st := cs.ts
	raw := cs.rows.RawValues()
	n := len(st.valSchema.Fields)
	if len(raw) != n {
		return nil, fmt.Errorf("a row has %d columns, want %d", len(raw), n)
	}
	nk := len(st.keyIdx)
	if len(cs.slab) < n+nk {
		cs.slab = make([]any, (n+nk)*256)
	}
	values := cs.slab[:n:n]
	for i, b := range raw {
		v, err := cs.decs[i](b)
		if err != nil {
			return nil, err
		}
		if v == nil && !st.valSchema.Fields[i].Schema.Optional {
			return nil, fmt.Errorf("column %s is NULL but was NOT NULL when the task started; restart the task to read the table's new definition",
				st.valSchema.Fields[i].Name)
		}
		values[i] = v
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
	*rec = plugin.SourceRecord{SourcePartition: st.Partition, Topic: st.topic, ValueSchema: st.valSchema, Value: val}
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

// Stop closes the open query and the pool.
func (t *Task) Stop() error {
	t.Reader.Close()
	if t.pool != nil {
		t.pool.Close()
	}
	return nil
}
