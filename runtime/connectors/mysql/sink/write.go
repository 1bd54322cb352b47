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
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
)

// rowsPerStatement bounds the rows of one multi-row INSERT or DELETE.
const rowsPerStatement = 500

// Task buffers records and writes them in transactions on its own writer
// goroutine (sinkwriter, as the PostgreSQL sink): at most one write in
// flight, in put order, so upserts' last write wins; Flush returns only
// once every record put so far is committed.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter
	tc     plugin.SinkTaskContext
	db     *sql.DB
	// tables are the columns of the destination tables seen so far (by
	// table); the writes' own.
	tables map[mycommon.Table]map[string]bool

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
	db, err := mycommon.Open(ctx, config, 1)
	if err != nil {
		return err
	}
	t.db, t.tables = db, map[mycommon.Table]map[string]bool{}
	if s.exactlyOnce {
		if err := ensureOffsetsTable(ctx, db, s.offsetsTable); err != nil {
			_ = db.Close()
			return err
		}
	}
	t.Writer = sinkwriter.Start(sinkwriter.Config[*plugin.SinkRecord]{
		Name: "MySQL", Write: t.writeBatch,
		BatchSize: s.BatchSize, MaxQueued: s.BatchSize, Go: tc.Go,
	})
	return nil
}

// Stop cancels the write in flight, waits for the writer and closes the
// connection; unflushed records are delivered again.
func (t *Task) Stop() error {
	if t.Writer != nil {
		t.Writer.Stop()
	}
	if t.db != nil {
		return t.db.Close()
	}
	return nil
}

func (t *Task) writeBatch(ctx context.Context, batch []*plugin.SinkRecord) ([]*plugin.SinkRecord, error) {
	return jdbc.WriteBatch(ctx, batch, t.write, t.errant)
}

// row is one operation on a table.
type row struct {
	del     bool
	table   mycommon.Table
	cols    []string // primary key columns first
	npk     int
	vals    []any
	schemas []*data.Schema
	rec     *plugin.SinkRecord
}

// layoutKey groups rows that one statement can carry.
func (r *row) layoutKey() string {
	return fmt.Sprintf("%t|%s|%d|%s", r.del, r.table, r.npk, strings.Join(r.cols, "\x00"))
}

// write writes a batch in one transaction.
func (t *Task) write(ctx context.Context, recs []*plugin.SinkRecord) error {
	rows := make([]row, 0, len(recs))
	for _, r := range recs {
		rw, ok, err := t.row(r)
		if err != nil {
			return err
		}
		if ok {
			rw.rec = r
			rows = append(rows, rw)
		}
	}
	if len(rows) == 0 && !t.s.exactlyOnce {
		return nil
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	// DDL commits implicitly in MySQL: tables and columns are made before
	// the transaction.
	for i := range rows {
		if err := t.ensure(ctx, conn, &rows[i]); err != nil {
			return err
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	defer func() { _ = tx.Rollback() }()
	var next map[plugin.TopicPartition]int64
	if t.s.exactlyOnce {
		keep, n, err := t.claim(ctx, tx, recs)
		if err != nil {
			return err
		}
		next = n
		kept := rows[:0]
		for _, r := range rows {
			if keep[r.rec] {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	for start := 0; start < len(rows); {
		end := start + 1
		k := rows[start].layoutKey()
		for end < len(rows) && end-start < rowsPerStatement && rows[end].layoutKey() == k {
			end++
		}
		if err := t.exec(ctx, tx, rows[start:end]); err != nil {
			return err
		}
		start = end
	}
	if next != nil {
		if err := t.storeOffsets(ctx, tx, next); err != nil {
			return err
		}
	}
	return classify(tx.Commit())
}

// exec runs one statement for rows of one layout.
func (t *Task) exec(ctx context.Context, tx *sql.Tx, rows []row) error {
	r0 := rows[0]
	var b strings.Builder
	args := make([]any, 0, len(rows)*len(r0.cols))
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(r0.cols)), ", ") + ")"
	if r0.del {
		keys := make([]string, r0.npk)
		for i, c := range r0.cols[:r0.npk] {
			keys[i] = mycommon.QuoteIdent(c)
		}
		fmt.Fprintf(&b, "DELETE FROM %s WHERE (%s) IN (", r0.table.Quoted(), strings.Join(keys, ", "))
		for i, r := range rows {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tuple)
			for j, v := range r.vals {
				args = append(args, mycommon.SQLValue(r.schemas[j], v))
			}
		}
		b.WriteString(")")
	} else {
		quoted := make([]string, len(r0.cols))
		for i, c := range r0.cols {
			quoted[i] = mycommon.QuoteIdent(c)
		}
		fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", r0.table.Quoted(), strings.Join(quoted, ", "))
		for i, r := range rows {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tuple)
			for j, v := range r.vals {
				args = append(args, mycommon.SQLValue(r.schemas[j], v))
			}
		}
		if t.s.InsertMode == jdbc.InsertModeUpsert {
			b.WriteString(" ON DUPLICATE KEY UPDATE ")
			set := quoted[r0.npk:]
			if len(set) == 0 { // every column is key: nothing to update
				set = quoted[:1]
			}
			for i, c := range set {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s = VALUES(%s)", c, c)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
		return classify(fmt.Errorf("writing %d rows into %s: %w", len(rows), r0.table, err))
	}
	return nil
}

// classify marks errors worth retrying as retriable.
func classify(err error) error {
	if err == nil || plugin.IsRetriable(err) {
		return err
	}
	if mycommon.Retriable(err) {
		return plugin.Retriable(err)
	}
	return err
}

// ensure creates the row's table (auto.create) or adds its missing
// columns (auto.evolve), or fails naming what is missing.
func (t *Task) ensure(ctx context.Context, conn *sql.Conn, r *row) error {
	cols, ok := t.tables[r.table]
	if !ok {
		rt, err := mycommon.Resolve(ctx, conn, r.table)
		switch {
		case errors.Is(err, mycommon.ErrNoTable):
			if !t.s.AutoCreate || r.del {
				return fmt.Errorf("table %s does not exist: create it, or set auto.create=true", r.table)
			}
			if err := t.create(ctx, conn, r); err != nil {
				return err
			}
			rt = r.table
		case err != nil:
			return classify(err)
		}
		list, err := mycommon.Columns(ctx, conn, rt)
		if err != nil {
			return classify(err)
		}
		cols = map[string]bool{}
		for _, c := range list {
			cols[strings.ToLower(c.Name)] = true
		}
		t.tables[r.table] = cols
	}
	for i, c := range r.cols {
		if cols[strings.ToLower(c)] {
			continue
		}
		if !t.s.AutoEvolve {
			return fmt.Errorf("table %s has no column %s: add it, or set auto.evolve=true", r.table, mycommon.QuoteIdent(c))
		}
		typ, err := mycommon.SQLType(c, r.schemas[i])
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s NULL", r.table.Quoted(), mycommon.QuoteIdent(c), typ)); err != nil {
			return classify(fmt.Errorf("auto.evolve: adding column %s to %s: %w", c, r.table, err))
		}
		t.log.Info("added a column (auto.evolve)", "table", r.table.String(), "column", c, "type", typ)
		cols[strings.ToLower(c)] = true
	}
	return nil
}

// create makes a table from a row's columns and schemas.
func (t *Task) create(ctx context.Context, conn *sql.Conn, r *row) error {
	defs := make([]string, len(r.cols))
	for i, c := range r.cols {
		typ, err := mycommon.SQLType(c, r.schemas[i])
		if i < r.npk {
			typ, err = mycommon.KeySQLType(c, r.schemas[i])
		}
		if err != nil {
			return err
		}
		null := " NULL"
		if i < r.npk || !r.schemas[i].Optional {
			null = " NOT NULL"
		}
		defs[i] = mycommon.QuoteIdent(c) + " " + typ + null
	}
	if r.npk > 0 {
		keys := make([]string, r.npk)
		for i, c := range r.cols[:r.npk] {
			keys[i] = mycommon.QuoteIdent(c)
		}
		defs = append(defs, "PRIMARY KEY ("+strings.Join(keys, ", ")+")")
	}
	stmt := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s)", r.table.Quoted(), strings.Join(defs, ", "))
	if _, err := conn.ExecContext(ctx, stmt); err != nil {
		return classify(fmt.Errorf("auto.create: creating table %s: %w", r.table, err))
	}
	t.log.Info("created a table (auto.create)", "table", r.table.String())
	return nil
}

// row turns a record into an operation; ok is false for a skipped
// tombstone.
func (t *Task) row(r *plugin.SinkRecord) (row, bool, error) {
	tbl, err := t.s.table(r.Topic)
	if err != nil {
		return row{}, false, err
	}
	out := row{table: tbl}
	if r.Value == nil {
		if !t.s.DeleteEnabled {
			return row{}, false, nil
		}
		out.del = true
	}
	// The key part.
	switch t.s.PKMode {
	case jdbc.PKModeKafka:
		out.cols = []string{jdbc.TopicColumn, jdbc.PartitionColumn, jdbc.OffsetColumn}
		out.vals = []any{r.Topic, r.Partition, r.Offset}
		out.schemas = []*data.Schema{data.StringSchema, data.Int32Schema, data.Int64Schema}
	case jdbc.PKModeRecordKey:
		if r.Key == nil {
			return row{}, false, fmt.Errorf("record %s/%d@%d has no key; pk.mode=record_key needs one", r.Topic, r.Partition, r.Offset)
		}
		if ks, ok := r.Key.(*data.Struct); ok {
			names, vals, schemas, err := structFields(ks, "key", r)
			if err != nil {
				return row{}, false, err
			}
			for i, n := range names {
				if len(t.s.PKFields) == 0 || slices.Contains(t.s.PKFields, n) {
					out.cols, out.vals, out.schemas = append(out.cols, n), append(out.vals, vals[i]), append(out.schemas, schemas[i])
				}
			}
		} else {
			if r.KeySchema == nil || !r.KeySchema.Type.IsPrimitive() {
				return row{}, false, fmt.Errorf("record %s/%d@%d: pk.mode=record_key needs a struct key or a primitive key with a schema (use a converter with schemas)", r.Topic, r.Partition, r.Offset)
			}
			out.cols, out.vals, out.schemas = []string{t.s.KeyColumn()}, []any{r.Key}, []*data.Schema{r.KeySchema}
		}
	}
	if out.del {
		out.npk = len(out.cols)
		return out, true, nil
	}
	vs, ok := r.Value.(*data.Struct)
	if !ok {
		return row{}, false, fmt.Errorf("record %s/%d@%d: the value is %T, not a struct with a schema; use a converter with schemas (JSON with schemas.enable=true, Avro)", r.Topic, r.Partition, r.Offset, r.Value)
	}
	names, vals, schemas, err := structFields(vs, "value", r)
	if err != nil {
		return row{}, false, err
	}
	if t.s.PKMode == jdbc.PKModeRecordValue {
		for i, n := range names {
			if len(t.s.PKFields) == 0 || slices.Contains(t.s.PKFields, n) {
				out.cols, out.vals, out.schemas = append(out.cols, n), append(out.vals, vals[i]), append(out.schemas, schemas[i])
			}
		}
		for _, f := range t.s.PKFields {
			if !slices.Contains(names, f) {
				return row{}, false, fmt.Errorf("record %s/%d@%d: pk.fields names %q, which the value lacks", r.Topic, r.Partition, r.Offset, f)
			}
		}
	}
	out.npk = len(out.cols)
	for i, n := range names {
		if !slices.Contains(out.cols[:out.npk], n) {
			out.cols, out.vals, out.schemas = append(out.cols, n), append(out.vals, vals[i]), append(out.schemas, schemas[i])
		}
	}
	return out, true, nil
}

// structFields lists a struct's field names, values and schemas.
func structFields(s *data.Struct, what string, r *plugin.SinkRecord) ([]string, []any, []*data.Schema, error) {
	sc := s.Schema()
	if sc == nil {
		return nil, nil, nil, fmt.Errorf("record %s/%d@%d: the %s struct has no schema", r.Topic, r.Partition, r.Offset, what)
	}
	names := make([]string, len(sc.Fields))
	vals := make([]any, len(sc.Fields))
	schemas := make([]*data.Schema, len(sc.Fields))
	for i, f := range sc.Fields {
		names[i], vals[i], schemas[i] = f.Name, s.GetIndex(i), f.Schema
	}
	return names, vals, schemas, nil
}
