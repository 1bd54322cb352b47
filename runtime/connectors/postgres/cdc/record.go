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
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/connectors/cdcevent"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Operation codes of the envelope's op field and the envelope's field
// names: the shared ones (package cdcevent).
const (
	OpCreate   = cdcevent.OpCreate
	OpUpdate   = cdcevent.OpUpdate
	OpDelete   = cdcevent.OpDelete
	OpRead     = cdcevent.OpRead
	OpTruncate = cdcevent.OpTruncate

	FieldBefore = cdcevent.FieldBefore
	FieldAfter  = cdcevent.FieldAfter
	FieldSource = cdcevent.FieldSource
	FieldOp     = cdcevent.FieldOp
	FieldTsMs   = cdcevent.FieldTsMs
)

// SourceSchema describes where a change came from.
var SourceSchema = data.StructOf("dev.conveyor.connect.postgres.Source",
	data.F("connector", data.StringSchema),
	data.F("name", data.StringSchema),               // topic.prefix
	data.F("db", data.StringSchema),                 // database
	data.F("schema", data.StringSchema),             // table schema
	data.F("table", data.StringSchema),              // table name
	data.F("snapshot", data.StringSchema),           // "true" for snapshot rows, "false" for streamed changes
	data.F("txId", data.OptionalInt64Schema),        // transaction id (xid); absent for snapshot rows
	data.F("lsn", data.OptionalInt64Schema),         // WAL position of the change (of the consistent point for snapshot rows)
	data.F("commit_lsn", data.OptionalStringSchema), // commit LSN of the transaction, as PostgreSQL prints it
	data.F("ts_ms", data.OptionalInt64Schema),       // commit time, ms since the epoch
)

// column is one column of a captured table.
type column struct {
	name   string
	mapped pgcommon.Mapped
	decode pgcommon.Decoder
}

// newColumn maps a column type (shared with the other PostgreSQL
// connectors) and makes the decoder of its text form, the form of both
// pgoutput tuples and the snapshot's rows.
func newColumn(tm *pgtype.Map, name string, oid uint32, typmod int32) column {
	typeName := fmt.Sprintf("type %d", oid)
	if t, ok := tm.TypeForOID(oid); ok {
		typeName = t.Name
	}
	m := pgcommon.MapColumn(pgcommon.Column{Name: name, TypeOID: oid, TypMod: typmod, TypeName: typeName})
	return column{name: name, mapped: m, decode: pgcommon.NewDecoder(tm, m, oid, pgx.TextFormatCode)}
}

// relation is what the task knows about one captured table: its columns,
// key columns and the schemas of its records.
type relation struct {
	oid           uint32
	schema, table string
	columns       []column
	keyIdx        []int // indices into columns of the primary key
	schemas       cdcevent.Schemas
	topic         string
	unavailable   string // unavailable.value.placeholder
}

// newRelation builds the record schemas of a table. keyNames lists the
// primary key columns in key order (none for a table without one).
func newRelation(s settings, oid uint32, schema, table string, cols []column, keyNames []string) (*relation, error) {
	r := &relation{oid: oid, schema: schema, table: table, columns: cols, topic: s.topic(schema, table), unavailable: s.unavailable}
	base := r.topic // record schemas are named after the topic
	fields := make([]data.Field, len(cols))
	index := map[string]int{}
	for i, c := range cols {
		// Every column is optional: pgoutput does not say which ones are
		// NOT NULL, a key-only before image leaves the others empty and an
		// unchanged TOAST value is not sent.
		fields[i] = data.F(c.name, c.mapped.Schema.AsOptional())
		index[c.name] = i
	}
	for _, k := range keyNames {
		i, ok := index[k]
		if !ok {
			return nil, fmt.Errorf("table %s.%s: primary key column %q is not among the replicated columns", schema, table, k)
		}
		r.keyIdx = append(r.keyIdx, i)
	}
	sc, err := cdcevent.NewSchemas(base, fields, keyNames, SourceSchema)
	if err != nil {
		return nil, fmt.Errorf("table %s.%s: %w", schema, table, err)
	}
	r.schemas = sc
	return r, nil
}

// rowFromText builds a row from text values (nil = NULL), as a snapshot
// query returns them.
func (r *relation) rowFromText(vals [][]byte) (*data.Struct, error) {
	if len(vals) != len(r.columns) {
		return nil, fmt.Errorf("table %s.%s: %d values for %d columns", r.schema, r.table, len(vals), len(r.columns))
	}
	st := data.NewStruct(r.schemas.Row)
	for i, v := range vals {
		if v == nil {
			continue
		}
		if err := r.set(st, i, v); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// rowFromTuple builds a row from a pgoutput tuple. An unchanged TOAST
// value ('u') is taken from old when that tuple carries it (REPLICA
// IDENTITY FULL), else it is the unavailable.value.placeholder for
// text-like and bytea columns and NULL for the others.
func (r *relation) rowFromTuple(t, old *pglogrepl.TupleData) (*data.Struct, error) {
	if t == nil {
		return nil, nil
	}
	if len(t.Columns) != len(r.columns) {
		return nil, fmt.Errorf("table %s.%s: tuple has %d columns, the relation %d (schema change without a Relation message)",
			r.schema, r.table, len(t.Columns), len(r.columns))
	}
	st := data.NewStruct(r.schemas.Row)
	for i, c := range t.Columns {
		switch c.DataType {
		case pglogrepl.TupleDataTypeText:
			if err := r.set(st, i, c.Data); err != nil {
				return nil, err
			}
		case pglogrepl.TupleDataTypeToast:
			if old != nil && i < len(old.Columns) && old.Columns[i].DataType == pglogrepl.TupleDataTypeText {
				if err := r.set(st, i, old.Columns[i].Data); err != nil {
					return nil, err
				}
				continue
			}
			var v any
			switch r.columns[i].mapped.Kind {
			case pgcommon.KindString, pgcommon.KindText:
				v = r.unavailable
			case pgcommon.KindBytes:
				v = []byte(r.unavailable)
			default:
				continue
			}
			if err := st.Set(r.columns[i].name, v); err != nil {
				return nil, fmt.Errorf("table %s.%s: %w", r.schema, r.table, err)
			}
		case pglogrepl.TupleDataTypeBinary:
			return nil, fmt.Errorf("table %s.%s column %s: binary tuple data (the task asks for text)", r.schema, r.table, r.columns[i].name)
		}
	}
	return st, nil
}

func (r *relation) set(st *data.Struct, i int, text []byte) error {
	c := r.columns[i]
	v, err := c.decode(text)
	if err != nil {
		return fmt.Errorf("table %s.%s column %s: decoding %q: %w", r.schema, r.table, c.name, truncate(text), err)
	}
	if err := st.Set(c.name, v); err != nil {
		return fmt.Errorf("table %s.%s: %w", r.schema, r.table, err)
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// keyChanged reports whether an update moved its row to another primary
// key. The before image has the key columns when the server sent the old
// key ('K', only sent when the replica identity changed) or the old row
// ('O', REPLICA IDENTITY FULL); primary key columns are never NULL, so a
// missing one (another replica identity index) means "cannot tell" and
// the update stays one.
func (r *relation) keyChanged(before, after *data.Struct) bool {
	return r.schemas.KeyChanged(before, after)
}

// change is one event to turn into a record.
type change struct {
	op         string
	before     *data.Struct
	after      *data.Struct
	snapshot   bool
	xid        uint32
	lsn        pglogrepl.LSN // WAL position of the change
	commitLSN  pglogrepl.LSN
	commitTime time.Time
}

// record builds the source record of a change, without its source
// offset (the caller sets it).
func (r *relation) record(s settings, db string, partition map[string]any, ch change) *plugin.SourceRecord {
	src := data.NewStruct(SourceSchema).
		Put("connector", "postgresql").
		Put("name", s.topicPrefix).
		Put("db", db).
		Put("schema", r.schema).
		Put("table", r.table).
		Put("snapshot", fmt.Sprint(ch.snapshot))
	if !ch.snapshot {
		src.Put("txId", int64(ch.xid))
	}
	if ch.lsn != 0 {
		src.Put("lsn", int64(ch.lsn))
	}
	if ch.commitLSN != 0 {
		src.Put("commit_lsn", ch.commitLSN.String())
	}
	if !ch.commitTime.IsZero() {
		src.Put("ts_ms", ch.commitTime.UnixMilli())
	}
	rec := r.schemas.Record(r.topic, cdcevent.Change{Op: ch.op, Before: ch.before, After: ch.after, Source: src, Commit: ch.commitTime})
	rec.SourcePartition = partition
	return rec
}

// tombstone returns the tombstone that follows a delete event.
func tombstone(del *plugin.SourceRecord) *plugin.SourceRecord { return cdcevent.Tombstone(del) }
