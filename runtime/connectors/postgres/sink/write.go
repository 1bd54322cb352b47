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
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// writer writes the records of one topic into its table.
type writer struct {
	table   pgcommon.Table
	columns map[string]pgcommon.Column
	pk      []string // the table's primary key
	stage   string   // temporary staging table on the current connection
	layouts map[[2]*data.Schema]*layout
	// evolved holds the value schemas auto.evolve has checked
	evolved map[*data.Schema]bool
	// insertNew's backoff after key conflicts: batches left to skip, and
	// how many the next conflict skips
	copySkip, copyBackoff int
	copyBuf               []byte // the binary COPYs' buffer (copy.go)
}

// rowSource streams rows to COPY, filling each row's values by its
// layout's plan when they were left for later (and keeping them, for a
// second COPY of the same rows after a conflict).
type rowSource struct {
	rows []row
	cols int // the leading values streamed (0: all)
	next int
	err  error
}

func (s *rowSource) Next() bool {
	if s.err != nil || s.next >= len(s.rows) {
		return false
	}
	rw := &s.rows[s.next]
	s.next++
	if rw.vals == nil {
		vals, ok, err := rw.lay.plan.fill(rw.rec)
		if err == nil && !ok {
			err = fmt.Errorf("record %s/%d no longer has the shape its row was planned for", rw.rec.TopicPartition(), rw.rec.Offset)
		}
		if err != nil {
			s.err = err
			return false
		}
		rw.vals = vals
	}
	return true
}

// values returns the current row's values (sliced to cols), Decimals
// as plans leave them (see rowPlan.values).
func (s *rowSource) values() []any {
	v := s.rows[s.next-1].vals
	if s.cols > 0 {
		v = v[:s.cols]
	}
	return v
}

// Values returns the current row's values for pgx: Decimals as numerics
// (in a copy: the row keeps its values for a second COPY).
func (s *rowSource) Values() ([]any, error) {
	v := s.values()
	var out []any
	for i, x := range v {
		if d, ok := x.(data.Decimal); ok {
			if out == nil {
				out = slices.Clone(v)
			}
			if out[i], s.err = pgcommon.SQLValue(nil, d); s.err != nil {
				return nil, s.err
			}
		}
	}
	if out == nil {
		return v, nil
	}
	return out, nil
}

func (s *rowSource) Err() error { return s.err }

// copyIn copies src's rows into table. It returns the failure that ended
// the stream itself (a record that could not be filled, a value pgx cannot
// encode for its column) as such, and non-retriable: PostgreSQL reports a
// COPY ended by its client as cancelled, which would read as retriable
// and be retried forever.
//
// The rows go in the sink's own binary encoding (copy.go) when every
// column has a type it encodes, else through pgx's CopyFrom.
func (t *Task) copyIn(ctx context.Context, tx pgx.Tx, w *writer, table pgx.Identifier, cols []string, src *rowSource) (int64, error) {
	var n int64
	var err error
	if bc := binaryCopyFor(w, tx.Conn().TypeMap(), cols, src); bc != nil && !t.pgxCopy {
		var tag pgconn.CommandTag
		tag, err = tx.Conn().PgConn().CopyFrom(ctx, bc, copySQL(table, cols))
		n = tag.RowsAffected()
		w.copyBuf = bc.buf[:0] // reused by the next COPY
	} else {
		n, err = tx.CopyFrom(ctx, table, cols, src)
	}
	if serr := src.Err(); serr != nil {
		return n, serr
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57014" && strings.HasPrefix(pgErr.Message, "COPY from stdin failed") {
		// The encoding stopped at the row it was encoding: the last one handed out.
		at := ""
		if src.next > 0 {
			if r := src.rows[src.next-1].rec; r != nil {
				at = fmt.Sprintf("record %s/%d: ", r.TopicPartition(), r.Offset)
			}
		}
		return n, fatalf("%s%s", at, pgErr.Message)
	}
	return n, err
}

// write writes recs in one transaction.
func (t *Task) write(ctx context.Context, recs []*plugin.SinkRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if t.conn == nil || t.conn.IsClosed() {
		conn, err := connect(ctx, t.s.raw)
		if err != nil {
			return plugin.Retriable(err)
		}
		t.conn, t.writers = conn, map[string]*writer{}
	}
	err := pgx.BeginFunc(ctx, t.conn, func(tx pgx.Tx) error {
		var next map[plugin.TopicPartition]int64
		if t.s.exactlyOnce {
			var err error
			if recs, next, err = t.claim(ctx, tx, recs); err != nil {
				return err
			}
		}
		// Topics in order of first appearance; records keep their order.
		var topics []string
		byTopic := map[string][]*plugin.SinkRecord{}
		for _, r := range recs {
			if _, ok := byTopic[r.Topic]; !ok {
				topics = append(topics, r.Topic)
			}
			byTopic[r.Topic] = append(byTopic[r.Topic], r)
		}
		for _, topic := range topics {
			if err := t.writeTopic(ctx, tx, topic, byTopic[topic]); err != nil {
				return err
			}
		}
		if next != nil {
			return t.storeOffsets(ctx, tx, next)
		}
		return nil
	})
	if err != nil {
		// Staging tables and created tables went with the transaction.
		t.writers = map[string]*writer{}
		return classify(err)
	}
	return nil
}

// connect opens a connection for the writes.
func connect(ctx context.Context, config map[string]string) (*pgx.Conn, error) {
	conn, err := pgcommon.Connect(ctx, config)
	if err != nil {
		return nil, err
	}
	registerNumeric(conn.TypeMap())
	return conn, nil
}

// classify marks errors that a retry may cure (lost connections, conflicts
// between transactions, resource limits) as retriable.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "40", "53", "57", "58":
			return plugin.Retriable(err)
		}
		return err
	}
	var fatal *fatalError
	if errors.As(err, &fatal) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return plugin.Retriable(err)
	}
	// Network errors and the like.
	return plugin.Retriable(err)
}

// fatalError is a problem with the records or the table that retrying
// cannot fix.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

func (e *fatalError) Unwrap() error { return e.err }

func fatalf(format string, args ...any) error { return &fatalError{fmt.Errorf(format, args...)} }

// writeTopic writes the records of one topic.
func (t *Task) writeTopic(ctx context.Context, tx pgx.Tx, topic string, recs []*plugin.SinkRecord) error {
	w, err := t.writer(ctx, tx, topic, recs)
	if err != nil {
		return err
	}
	if err := t.evolve(ctx, tx, w, recs); err != nil {
		return err
	}
	rows := make([]row, 0, len(recs))
	for _, r := range recs {
		rw, ok, err := t.row(w, r)
		if err != nil {
			return err
		}
		if ok {
			rows = append(rows, rw)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	upsert := t.s.insertMode == InsertModeUpsert
	if upsert {
		// One operation per key, the last one: a batch's records then
		// commute, and ON CONFLICT never meets a key twice.
		last := make(map[string]int, len(rows))
		for i, rw := range rows {
			// With the version guard the highest offset wins, not the
			// last put: in share mode records come out of order.
			if j, ok := last[rw.key]; ok && t.s.versionColumn != "" && rows[j].rec.Offset > rw.rec.Offset {
				continue
			}
			last[rw.key] = i
		}
		kept := rows[:0]
		for i, rw := range rows {
			if last[rw.key] == i {
				kept = append(kept, rw)
			}
		}
		rows = kept
	}
	// Runs of rows with the same operation and columns, applied in order.
	// After deduplication (upsert) the order does not matter, so rows are
	// grouped first to make few runs.
	if upsert {
		sort.SliceStable(rows, func(i, j int) bool {
			if rows[i].del != rows[j].del {
				return !rows[i].del
			}
			return rows[i].lay.colsKey < rows[j].lay.colsKey
		})
	}
	staged := false
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && rows[end].del == rows[start].del && rows[end].lay == rows[start].lay {
			end++
		}
		run := rows[start:end]
		start = end
		lay := run[0].lay
		switch {
		case run[0].del:
			if err := t.stageRows(ctx, tx, w, &staged, lay.cols[:lay.npk], &rowSource{rows: run, cols: lay.npk}); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, deleteSQL(w, lay)); err != nil {
				return fmt.Errorf("deleting %d rows from %s: %w", len(run), w.table, err)
			}
		case upsert:
			if done, err := t.insertNew(ctx, tx, w, lay, &rowSource{rows: run}); done || err != nil {
				if err != nil {
					return fmt.Errorf("inserting %d rows into %s: %w", len(run), w.table, err)
				}
				continue
			}
			if err := t.stageRows(ctx, tx, w, &staged, lay.cols, &rowSource{rows: run}); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, upsertSQL(w, lay, t.s.versionColumn)); err != nil {
				return fmt.Errorf("upserting %d rows into %s: %w", len(run), w.table, err)
			}
		default:
			if _, err := t.copyIn(ctx, tx, w, identifier(w.table), lay.cols, &rowSource{rows: run}); err != nil {
				return fmt.Errorf("inserting %d rows into %s: %w", len(run), w.table, err)
			}
		}
	}
	return nil
}

// insertNew copies upserted rows straight into the table when none of
// their keys exists yet (a first load, append-mostly topics): COPY inserts
// rows in batches, INSERT ... ON CONFLICT one by one, and costs PostgreSQL
// more than twice the CPU. It runs in a savepoint; when a key exists (a
// unique violation) the savepoint is rolled back, done is false and the
// caller upserts the rows. After such a conflict the next batches skip
// the attempt, 1, 2, 4 ... up to 64 of them while conflicts go on.
// Triggers and constraints apply as for the upsert's inserts (COPY does
// not apply rules).
func (t *Task) insertNew(ctx context.Context, tx pgx.Tx, w *writer, lay *layout, src *rowSource) (done bool, err error) {
	if w.copySkip > 0 {
		w.copySkip--
		return false, nil
	}
	sp, err := tx.Begin(ctx) // a savepoint
	if err != nil {
		return false, err
	}
	if _, err := t.copyIn(ctx, sp, w, identifier(w.table), lay.cols, src); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" { // unique_violation
			return false, err
		}
		if err := sp.Rollback(ctx); err != nil {
			return false, err
		}
		w.copyBackoff = min(max(2*w.copyBackoff, 1), 64)
		w.copySkip = w.copyBackoff
		return false, nil
	}
	w.copyBackoff = 0
	return true, sp.Commit(ctx)
}

// stageRows copies rows into the writer's staging table, emptying it first
// when an earlier run of this transaction used it.
func (t *Task) stageRows(ctx context.Context, tx pgx.Tx, w *writer, staged *bool, cols []string, src *rowSource) error {
	if w.stage == "" {
		t.stages++
		name := fmt.Sprintf("conveyor_stage_%d", t.stages)
		// A temporary table without constraints, emptied at every commit.
		if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DELETE ROWS AS SELECT * FROM %s WITH NO DATA",
			pgcommon.QuoteIdent(name), w.table.Quoted())); err != nil {
			return fmt.Errorf("creating a staging table for %s: %w", w.table, err)
		}
		w.stage = name
	}
	if *staged {
		if _, err := tx.Exec(ctx, "TRUNCATE "+pgcommon.QuoteIdent(w.stage)); err != nil {
			return fmt.Errorf("emptying the staging table of %s: %w", w.table, err)
		}
	}
	*staged = true
	if _, err := t.copyIn(ctx, tx, w, pgx.Identifier{w.stage}, cols, src); err != nil {
		return fmt.Errorf("staging %d rows for %s: %w", len(src.rows), w.table, err)
	}
	return nil
}

func identifier(t pgcommon.Table) pgx.Identifier {
	if t.Schema == "" {
		return pgx.Identifier{t.Name}
	}
	return pgx.Identifier{t.Schema, t.Name}
}

func quoteAll(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pgcommon.QuoteIdent(c)
	}
	return strings.Join(q, ", ")
}

// upsertSQL upserts the staged rows; with a version column a row changes
// only when the staged version is higher than the stored one.
func upsertSQL(w *writer, lay *layout, versionColumn string) string {
	cols := quoteAll(lay.cols)
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s AS conveyor_target (%s) SELECT %s FROM %s ON CONFLICT (%s) DO ", w.table.Quoted(), cols, cols, pgcommon.QuoteIdent(w.stage), quoteAll(w.pk))
	var sets []string
	for _, c := range lay.cols {
		if !slices.Contains(w.pk, c) {
			q := pgcommon.QuoteIdent(c)
			sets = append(sets, q+" = EXCLUDED."+q)
		}
	}
	if len(sets) == 0 {
		b.WriteString("NOTHING")
	} else {
		b.WriteString("UPDATE SET " + strings.Join(sets, ", "))
		if versionColumn != "" {
			q := pgcommon.QuoteIdent(versionColumn)
			b.WriteString(" WHERE conveyor_target." + q + " < EXCLUDED." + q)
		}
	}
	return b.String()
}

func deleteSQL(w *writer, lay *layout) string {
	conds := make([]string, lay.npk)
	for i, c := range lay.cols[:lay.npk] {
		q := pgcommon.QuoteIdent(c)
		conds[i] = "t." + q + " = s." + q
	}
	return fmt.Sprintf("DELETE FROM %s t USING %s s WHERE %s", w.table.Quoted(), pgcommon.QuoteIdent(w.stage), strings.Join(conds, " AND "))
}

// writer returns the topic's writer, finding (or creating) its table.
func (t *Task) writer(ctx context.Context, tx pgx.Tx, topic string, recs []*plugin.SinkRecord) (*writer, error) {
	if w, ok := t.writers[topic]; ok {
		return w, nil
	}
	tbl, err := t.s.table(topic)
	if err != nil {
		return nil, fatalf("%s for topic %s: %w", KeyTableNameFormat, topic, err)
	}
	rt, err := pgcommon.Resolve(ctx, tx, tbl)
	if errors.Is(err, pgcommon.ErrNoTable) {
		if !t.s.autoCreate {
			return nil, fatalf("table %s for topic %s does not exist: create it, or set auto.create=true", tbl, topic)
		}
		if err := t.create(ctx, tx, tbl, recs); err != nil {
			return nil, err
		}
		rt, err = pgcommon.Resolve(ctx, tx, tbl)
	}
	if err != nil {
		return nil, err
	}
	cols, err := pgcommon.Columns(ctx, tx, rt)
	if err != nil {
		return nil, err
	}
	pk, err := pgcommon.PrimaryKey(ctx, tx, rt)
	if err != nil {
		return nil, err
	}
	if t.s.insertMode == InsertModeUpsert && len(pk) == 0 {
		return nil, fatalf("insert.mode=upsert needs a primary key on table %s: add one (ALTER TABLE %s ADD PRIMARY KEY (...))", rt, rt.Quoted())
	}
	w := &writer{table: rt, columns: map[string]pgcommon.Column{}, pk: pk, layouts: map[[2]*data.Schema]*layout{}}
	for _, c := range cols {
		w.columns[c.Name] = c
	}
	t.writers[topic] = w
	return w, nil
}

// create creates a table from the first record with a value schema.
func (t *Task) create(ctx context.Context, tx pgx.Tx, tbl pgcommon.Table, recs []*plugin.SinkRecord) error {
	var first *plugin.SinkRecord
	for _, r := range recs {
		if r.ValueSchema != nil && r.Value != nil {
			first = r
			break
		}
	}
	if first == nil {
		return fatalf("auto.create of table %s needs records with a value schema (use a converter with schemas, e.g. JsonConverter with schemas.enable=true)", tbl)
	}
	type col struct {
		name string
		s    *data.Schema
	}
	var cols []col
	var pk []string
	add := func(name string, s *data.Schema, isPK bool) {
		for _, c := range cols {
			if c.name == name {
				return
			}
		}
		cols = append(cols, col{name, s})
		if isPK {
			pk = append(pk, name)
		}
	}
	switch t.s.pkMode {
	case PKModeKafka:
		add(TopicColumn, data.StringSchema, true)
		add(PartitionColumn, data.Int32Schema, true)
		add(OffsetColumn, data.Int64Schema, true)
	case PKModeRecordKey:
		ks := first.KeySchema
		if ks == nil {
			return fatalf("auto.create of table %s with pk.mode=record_key needs records with a key schema", tbl)
		}
		if ks.Type == data.TypeStruct {
			for _, f := range ks.Fields {
				if len(t.s.pkFields) == 0 || slices.Contains(t.s.pkFields, f.Name) {
					add(f.Name, f.Schema, true)
				}
			}
		} else {
			add(keyColumn(t.s), ks, true)
		}
	}
	vs := first.ValueSchema
	if vs.Type != data.TypeStruct {
		return fatalf("auto.create of table %s needs struct values, not %s", tbl, vs.Type)
	}
	for _, f := range vs.Fields {
		add(f.Name, f.Schema, t.s.pkMode == PKModeRecordValue && (len(t.s.pkFields) == 0 || slices.Contains(t.s.pkFields, f.Name)))
	}
	if t.s.versionColumn != "" {
		add(t.s.versionColumn, data.Int64Schema, false)
	}
	defs := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		typ, err := pgcommon.SQLType(c.s)
		if err != nil {
			return fatalf("auto.create of table %s: field %s: %w", tbl, c.name, err)
		}
		def := pgcommon.QuoteIdent(c.name) + " " + typ
		if !c.s.Optional || slices.Contains(pk, c.name) {
			def += " NOT NULL"
		}
		defs = append(defs, def)
	}
	if len(pk) > 0 {
		defs = append(defs, "PRIMARY KEY ("+quoteAll(pk)+")")
	}
	sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s)", tbl.Quoted(), strings.Join(defs, ", "))
	// Tasks of one connector start together and each creates the table
	// its first batch needs. The statement runs under a savepoint, so the
	// task that loses the race rolls back just the statement and writes
	// its batch into the table the other task created.
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("auto.create of table %s: %w", tbl, err)
	}
	if _, err := sp.Exec(ctx, sql); err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil || !lostCreateRace(err) {
			return fmt.Errorf("auto.create: %s: %w", sql, err)
		}
		t.log.Info("table created meanwhile by another task", "table", tbl.String())
		return nil
	}
	if err := sp.Commit(ctx); err != nil {
		return fmt.Errorf("auto.create of table %s: %w", tbl, err)
	}
	t.log.Info("created table", "table", tbl.String())
	return nil
}

// evolve adds to the table, with auto.evolve, the value fields of the
// records that it has no column for (as Kafka Connect's JDBC sink does):
// as columns that allow NULL, in one ALTER TABLE. A required field without
// a default cannot be added to a table that has rows, and is refused.
func (t *Task) evolve(ctx context.Context, tx pgx.Tx, w *writer, recs []*plugin.SinkRecord) error {
	if !t.s.autoEvolve {
		return nil
	}
	var adds, names []string
	for _, r := range recs {
		vs := r.ValueSchema
		if vs == nil || vs.Type != data.TypeStruct || w.evolved[vs] {
			continue
		}
		for _, f := range vs.Fields {
			if _, ok := w.columns[f.Name]; ok || slices.Contains(names, f.Name) {
				continue
			}
			if !f.Schema.Optional && f.Schema.Default == nil {
				return fatalf("auto.evolve of table %s: record %s/%d has the required field %q without a default, which a table with rows cannot gain: make it optional or give it a default, or add the column yourself",
					w.table, r.TopicPartition(), r.Offset, f.Name)
			}
			typ, err := pgcommon.SQLType(f.Schema)
			if err != nil {
				return fatalf("auto.evolve of table %s: field %s: %w", w.table, f.Name, err)
			}
			names = append(names, f.Name)
			adds = append(adds, "ADD COLUMN IF NOT EXISTS "+pgcommon.QuoteIdent(f.Name)+" "+typ)
		}
		if w.evolved == nil {
			w.evolved = map[*data.Schema]bool{}
		}
		w.evolved[vs] = true
	}
	if len(adds) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, "ALTER TABLE "+w.table.Quoted()+" "+strings.Join(adds, ", ")); err != nil {
		return fmt.Errorf("auto.evolve of table %s: %w", w.table, err)
	}
	cols, err := pgcommon.Columns(ctx, tx, w.table)
	if err != nil {
		return err
	}
	for _, c := range cols {
		w.columns[c.Name] = c
	}
	if w.stage != "" { // made from the table's old columns
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgcommon.QuoteIdent(w.stage)); err != nil {
			return fmt.Errorf("auto.evolve of table %s: dropping the staging table: %w", w.table, err)
		}
		w.stage = ""
	}
	t.log.Info("added columns to table", "table", w.table.String(), "columns", names)
	return nil
}
