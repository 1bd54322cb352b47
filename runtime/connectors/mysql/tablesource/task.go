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
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// dialect is MySQL's SQL for the shared query builder. Sessions run in
// UTC (mycommon.Config), so NOW(6) compares with TIMESTAMP columns and
// with DATETIME columns taken as UTC.
type dialect struct{}

func (dialect) QuoteIdent(name string) string { return mycommon.QuoteIdent(name) }

func (dialect) Placeholder(int) string { return "?" }

func (dialect) OlderThan(col string, _ bool, param string) string {
	return fmt.Sprintf("%s < NOW(6) - INTERVAL ROUND(%s * 1000000) MICROSECOND", col, param)
}

// tableState is what a task knows about one of its tables.
type tableState struct {
	jdbc.SourceTable
	table     mycommon.Table
	topic     string
	cols      []mycommon.Mapped
	keyIdx    []int
	keySchema *data.Schema
	valSchema *data.Schema
}

// Task streams its tables into Kafka through the shared reader
// (jdbc.Reader); it adds the MySQL queries and the decoding of rows.
type Task struct {
	s      *settings
	log    *slog.Logger
	db     *sql.DB
	tables []*tableState
	jdbc.SourceTask
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
	db, err := mycommon.Open(ctx, config, s.poolMax)
	if err != nil {
		return err
	}
	t.db = db
	tables, err := jdbc.TablesOf(config, func(schema, name string) mycommon.Table { return mycommon.Table{Schema: schema, Name: name} },
		func() ([]mycommon.TableSize, error) { return mycommon.ListTables(ctx, db, s.whitelist, s.match()) },
		func(ts mycommon.TableSize) mycommon.Table { return ts.Table })
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
	return t.StartReader(ctx, dialect{}, s.SourceSettings, t.log, time.Now, readers, tc.OffsetReader())
}

// describe reads a table's columns and primary key and prepares its query.
func (t *Task) describe(ctx context.Context, tb mycommon.Table) (*tableState, error) {
	cols, err := mycommon.Columns(ctx, t.db, tb)
	if err != nil {
		return nil, fmt.Errorf("table source task: %w", err)
	}
	mapped, idx, err := mapColumns(t.s, tb, cols)
	if err != nil {
		return nil, fmt.Errorf("table source task: %w", err)
	}
	pk, err := mycommon.PrimaryKey(ctx, t.db, tb)
	if err != nil {
		return nil, fmt.Errorf("table source task: %w", err)
	}
	st := &tableState{table: tb, topic: t.s.TopicPrefix + tb.Name, cols: mapped}
	st.Name, st.IncIdx, st.TsIdx = tb.String(), idx[0], idx[1]
	st.Partition = map[string]any{jdbc.PartitionTable: st.Name} // one map per table, reused by every record
	if st.IncIdx >= 0 {
		st.Columns.Inc = cols[st.IncIdx].Name
	}
	if st.TsIdx >= 0 {
		st.Columns.Ts = cols[st.TsIdx].Name
		st.Columns.TsZoned = mapped[st.TsIdx].Kind == mycommon.KindTimestamp
	}
	exprs := make([]string, len(cols))
	fields := make([]data.Field, len(cols))
	for i, m := range mapped {
		exprs[i] = mycommon.QuoteIdent(m.Name)
		fields[i] = data.F(m.Name, m.Schema)
	}
	st.valSchema = data.StructOf(tb.Name, fields...)
	if len(pk) > 0 {
		var kf []data.Field
		for _, name := range pk {
			for i, m := range mapped {
				if m.Name == name {
					st.keyIdx = append(st.keyIdx, i)
					kf = append(kf, data.F(name, m.Schema))
				}
			}
		}
		st.keySchema = data.StructOf(tb.Name+".Key", kf...)
	}
	st.SelectSQL = "SELECT " + strings.Join(exprs, ", ") + " FROM " + tb.Quoted()
	st.Open = func(ctx context.Context, q string, args []any) (jdbc.Stream, error) { return t.open(st, q, args) }
	return st, nil
}

// stream is an open query over one table.
type stream struct {
	ts     *tableState
	rows   *sql.Rows
	cancel context.CancelFunc
	raw    []sql.RawBytes
	dest   []any
}

// open starts the ordered query of a table; it outlives the poll that
// opened it, so it runs on its own context.
func (t *Task) open(st *tableState, q string, args []any) (jdbc.Stream, error) {
	qctx, cancel := context.WithCancel(context.Background())
	rows, err := t.db.QueryContext(qctx, q, args...)
	if err != nil {
		cancel()
		return nil, err
	}
	cs := &stream{ts: st, rows: rows, cancel: cancel, raw: make([]sql.RawBytes, len(st.cols)), dest: make([]any, len(st.cols))}
	for i := range cs.raw {
		cs.dest[i] = &cs.raw[i]
	}
	return cs, nil
}

func (cs *stream) Next() bool { return cs.rows.Next() }

func (cs *stream) Err() error { return cs.rows.Err() }

// Close ends the query without reading its remaining rows.
func (cs *stream) Close() {
	cs.cancel()
	_ = cs.rows.Close()
}

// Record decodes the current row.
func (cs *stream) Record() (*plugin.SourceRecord, error) {
	st := cs.ts
	if err := cs.rows.Scan(cs.dest...); err != nil {
		return nil, err
	}
	values := make([]any, len(st.cols))
	for i, m := range st.cols {
		v, err := m.Decode(cs.raw[i])
		if err != nil {
			return nil, err
		}
		if v == nil && !m.Schema.Optional {
			return nil, fmt.Errorf("column %s is NULL but was NOT NULL when the task started; restart the task to read the table's new definition", m.Name)
		}
		values[i] = v
	}
	val := &data.Struct{}
	data.InitStructTrusted(val, st.valSchema, values)
	rec := &plugin.SourceRecord{SourcePartition: st.Partition, Topic: st.topic, ValueSchema: st.valSchema, Value: val}
	if st.keySchema != nil {
		kv := make([]any, len(st.keyIdx))
		for j, i := range st.keyIdx {
			kv[j] = values[i]
		}
		key := &data.Struct{}
		data.InitStructTrusted(key, st.keySchema, kv)
		rec.KeySchema, rec.Key = st.keySchema, key
	}
	return rec, nil
}

// Poll returns the next records of the task's tables (see jdbc.Reader).

// Stop closes the open query and the pool.
func (t *Task) Stop() error {
	t.Reader.Close()
	if t.db != nil {
		return t.db.Close()
	}
	return nil
}
