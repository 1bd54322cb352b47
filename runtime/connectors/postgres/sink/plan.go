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
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// layout says how records of one key/value schema pair become columns.
type layout struct {
	cols    []string // every column written, primary key columns first
	npk     int      // how many of cols form the key
	colsKey string   // cols joined, to group rows
	// plan, when set, fills a row of this layout straight from records
	// whose value (and struct key) have the schemas planned for.
	plan *rowPlan
}

// rowPlan says where each column of a layout comes from, so that records
// of the planned struct schemas skip listing their fields by name.
type rowPlan struct {
	value, key *data.Schema // the planned structs' schemas (key nil: no struct key)
	wholeKey   bool         // a column holds the record key itself
	npk        int          // the leading key columns
	cols       []planCol
}

type planCol struct {
	src    int // one of the src constants
	idx    int // field index for srcValue and srcKeyField
	schema *data.Schema
}

const (
	srcValue = iota
	srcKeyField
	srcKey
	srcTopic
	srcPartition
	srcOffset
)

// row is one operation on a table.
type row struct {
	del bool
	lay *layout
	// vals are the row's SQL values (pgcommon.SQLValue's, but Decimals of
	// columns outside the key as they are); nil for a record that lay's plan
	// fills only as COPY streams it (see rowSource), so that PostgreSQL
	// already works on the first rows while the later ones are filled.
	vals []any
	rec  *plugin.SinkRecord // the record the row comes from
	key  string             // encoded primary key values, for deduplication
}

func keyColumn(s *settings) string {
	if len(s.pkFields) > 0 {
		return s.pkFields[0]
	}
	return DefaultKeyColumn
}

// row turns a record into an operation; ok is false for skipped tombstones.
func (t *Task) row(w *writer, r *plugin.SinkRecord) (row, bool, error) {
	if r.Value == nil {
		if !t.s.deleteEnabled {
			return row{}, false, nil
		}
		lay, vals, err := t.keyPart(w, r)
		if err != nil {
			return row{}, false, err
		}
		return row{del: true, lay: lay, vals: vals, rec: r, key: encodeKey(vals)}, true, nil
	}
	if lay := w.layouts[[2]*data.Schema{r.KeySchema, r.ValueSchema}]; lay != nil && lay.plan != nil {
		// A planned record: its key now (for deduplication), the other
		// values as COPY streams it (rowSource).
		if key, ok, err := lay.plan.values(r, lay.npk); ok || err != nil {
			if err != nil {
				return row{}, false, err
			}
			return row{lay: lay, rec: r, key: encodeKey(key)}, true, nil
		}
	}
	lay, vals, err := t.layoutAndValues(w, r)
	if err != nil {
		return row{}, false, err
	}
	return row{lay: lay, vals: vals, rec: r, key: encodeKey(vals[:lay.npk])}, true, nil
}

// fields lists a struct's or a map's field names, values and schemas.
func fields(s *data.Schema, v any, what string, r *plugin.SinkRecord) ([]string, []any, []*data.Schema, error) {
	switch x := v.(type) {
	case *data.Struct:
		sch := x.Schema()
		names := make([]string, len(sch.Fields))
		vals := make([]any, len(sch.Fields))
		schemas := make([]*data.Schema, len(sch.Fields))
		for i, f := range sch.Fields {
			names[i], schemas[i] = f.Name, f.Schema
			vals[i] = x.GetIndex(f.Index)
			if vals[i] == nil {
				vals[i] = f.Schema.Default
			}
		}
		return names, vals, schemas, nil
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		vals := make([]any, len(names))
		for i, k := range names {
			vals[i] = x[k]
		}
		return names, vals, make([]*data.Schema, len(names)), nil
	}
	return nil, nil, nil, fatalf("record %s/%d: the %s is %T; want a struct (with a schema) or a JSON object", r.TopicPartition(), r.Offset, what, v)
}

// keyPart returns the primary key columns and values of a tombstone.
func (t *Task) keyPart(w *writer, r *plugin.SinkRecord) (*layout, []any, error) {
	names, vals, schemas, err := t.keyFields(r)
	if err != nil {
		return nil, nil, err
	}
	lk := [2]*data.Schema{r.KeySchema, nil}
	lay := w.layouts[lk]
	if lay == nil || r.KeySchema == nil {
		lay = &layout{cols: names, npk: len(names), colsKey: "del:" + strings.Join(names, "\x00")}
		if err := w.check(lay.cols, r); err != nil {
			return nil, nil, err
		}
		if r.KeySchema != nil {
			w.layouts[lk] = lay
		}
	}
	for i := range vals {
		v, err := pgcommon.SQLValue(schemas[i], vals[i])
		if err != nil {
			return nil, nil, fatalf("record %s/%d: key field %s: %w", r.TopicPartition(), r.Offset, names[i], err)
		}
		vals[i] = v
	}
	return lay, vals, nil
}

// keyFields returns the key's columns for pk.mode=record_key.
func (t *Task) keyFields(r *plugin.SinkRecord) ([]string, []any, []*data.Schema, error) {
	if r.Key == nil {
		return nil, nil, nil, fatalf("record %s/%d has no key, but pk.mode=record_key", r.TopicPartition(), r.Offset)
	}
	switch r.Key.(type) {
	case *data.Struct, map[string]any:
		names, vals, schemas, err := fields(r.KeySchema, r.Key, "key", r)
		if err != nil || len(t.s.pkFields) == 0 {
			return names, vals, schemas, err
		}
		var n []string
		var v []any
		var s []*data.Schema
		for _, want := range t.s.pkFields {
			i := slices.Index(names, want)
			if i < 0 {
				return nil, nil, nil, fatalf("record %s/%d: the key has no field %q named in pk.fields", r.TopicPartition(), r.Offset, want)
			}
			n, v, s = append(n, names[i]), append(v, vals[i]), append(s, schemas[i])
		}
		return n, v, s, nil
	}
	return []string{keyColumn(t.s)}, []any{r.Key}, []*data.Schema{r.KeySchema}, nil
}

// layoutAndValues returns the columns and values of a record (primary key
// columns first).
func (t *Task) layoutAndValues(w *writer, r *plugin.SinkRecord) (*layout, []any, error) {
	if lay := w.layouts[[2]*data.Schema{r.KeySchema, r.ValueSchema}]; lay != nil && lay.plan != nil {
		if out, ok, err := lay.plan.fill(r); ok || err != nil {
			return lay, out, err
		}
	}
	names, vals, schemas, err := fields(r.ValueSchema, r.Value, "value", r)
	if err != nil {
		return nil, nil, err
	}
	var pkNames []string
	var pkVals []any
	var pkSchemas []*data.Schema
	switch t.s.pkMode {
	case PKModeKafka:
		pkNames = []string{TopicColumn, PartitionColumn, OffsetColumn}
		pkVals = []any{r.Topic, r.Partition, r.Offset}
		pkSchemas = make([]*data.Schema, 3)
	case PKModeRecordKey:
		if pkNames, pkVals, pkSchemas, err = t.keyFields(r); err != nil {
			return nil, nil, err
		}
	case PKModeRecordValue:
		want := t.s.pkFields
		if len(want) == 0 {
			want = names
		}
		for _, n := range want {
			i := slices.Index(names, n)
			if i < 0 {
				return nil, nil, fatalf("record %s/%d: the value has no field %q named in pk.fields", r.TopicPartition(), r.Offset, n)
			}
			pkNames, pkVals, pkSchemas = append(pkNames, n), append(pkVals, vals[i]), append(pkSchemas, schemas[i])
		}
	}
	// Value fields that are not key columns.
	out := make([]any, 0, len(pkVals)+len(vals))
	out = append(out, pkVals...)
	var rest []int
	for i, n := range names {
		if !slices.Contains(pkNames, n) {
			rest = append(rest, i)
		}
	}
	for _, i := range rest {
		out = append(out, vals[i])
	}
	allSchemas := append(append([]*data.Schema{}, pkSchemas...), make([]*data.Schema, 0, len(rest))...)
	for _, i := range rest {
		allSchemas = append(allSchemas, schemas[i])
	}
	if vc := t.s.versionColumn; vc != "" {
		if slices.Contains(names, vc) || slices.Contains(pkNames, vc) {
			return nil, nil, fatalf("record %s/%d has a field %q, the name of upsert.version.column: choose another column for the version", r.TopicPartition(), r.Offset, vc)
		}
		out = append(out, r.Offset)
		allSchemas = append(allSchemas, nil)
	}
	for i := range out {
		if _, ok := out[i].(data.Decimal); ok && i >= len(pkVals) {
			continue // as rowPlan.values leaves it
		}
		v, err := pgcommon.SQLValue(allSchemas[i], out[i])
		if err != nil {
			return nil, nil, fatalf("record %s/%d: %w", r.TopicPartition(), r.Offset, err)
		}
		out[i] = v
	}
	lk := [2]*data.Schema{r.KeySchema, r.ValueSchema}
	cacheable := r.ValueSchema != nil && (t.s.pkMode != PKModeRecordKey || r.KeySchema != nil)
	if lay := w.layouts[lk]; cacheable && lay != nil {
		return lay, out, nil
	}
	cols := append(append([]string{}, pkNames...), make([]string, 0, len(rest))...)
	for _, i := range rest {
		cols = append(cols, names[i])
	}
	if vc := t.s.versionColumn; vc != "" {
		cols = append(cols, vc)
	}
	lay := &layout{cols: cols, npk: len(pkNames), colsKey: strings.Join(cols, "\x00")}
	if err := w.check(cols, r); err != nil {
		return nil, nil, err
	}
	if cacheable {
		lay.plan = t.planRow(r, lay, allSchemas)
		w.layouts[lk] = lay
	} else {
		// Schemaless records: one layout per distinct column set.
		if prev := w.layouts[[2]*data.Schema{}]; prev != nil && prev.colsKey == lay.colsKey {
			return prev, out, nil
		}
		w.layouts[[2]*data.Schema{}] = lay
	}
	return lay, out, nil
}

// planRow plans where each column of lay comes from for records like r
// (struct values, struct or primitive keys); nil when it cannot.
func (t *Task) planRow(r *plugin.SinkRecord, lay *layout, schemas []*data.Schema) *rowPlan {
	v, ok := r.Value.(*data.Struct)
	if !ok {
		return nil
	}
	p := &rowPlan{value: v.Schema(), npk: lay.npk, cols: make([]planCol, len(lay.cols))}
	field := func(s *data.Schema, name string) int {
		if f := s.Field(name); f != nil {
			return f.Index
		}
		return -1
	}
	for i, name := range lay.cols {
		c := planCol{src: srcValue, schema: schemas[i]}
		if i < lay.npk {
			switch t.s.pkMode {
			case PKModeKafka:
				c.src = srcTopic + i
			case PKModeRecordKey:
				switch k := r.Key.(type) {
				case *data.Struct:
					p.key, c.src, c.idx = k.Schema(), srcKeyField, field(k.Schema(), name)
				case map[string]any, nil:
					return nil
				default:
					p.wholeKey, c.src = true, srcKey
				}
			}
		}
		if i == len(lay.cols)-1 && t.s.versionColumn != "" {
			c.src = srcOffset // the version guard's column, the last
		}
		if c.src == srcValue {
			c.idx = field(p.value, name)
		}
		if (c.src == srcValue || c.src == srcKeyField) && c.idx < 0 {
			return nil
		}
		p.cols[i] = c
	}
	return p
}

// fill returns the SQL values of a record by the plan; ok is false when
// the record does not have the planned shape (the general path then
// handles it).
func (p *rowPlan) fill(r *plugin.SinkRecord) ([]any, bool, error) {
	return p.values(r, len(p.cols))
}

// values returns the SQL values of the first n columns of a record by the
// plan, or ok false (see fill).
func (p *rowPlan) values(r *plugin.SinkRecord, n int) ([]any, bool, error) {
	v, ok := r.Value.(*data.Struct)
	if !ok || v.Schema() != p.value {
		return nil, false, nil
	}
	var k *data.Struct
	if p.key != nil {
		if k, ok = r.Key.(*data.Struct); !ok || k.Schema() != p.key {
			return nil, false, nil
		}
	}
	if p.wholeKey {
		switch r.Key.(type) {
		case *data.Struct, map[string]any, nil:
			return nil, false, nil
		}
	}
	out := make([]any, n)
	for i, c := range p.cols[:n] {
		var x any
		switch c.src {
		case srcValue:
			if x = v.GetIndex(c.idx); x == nil {
				x = c.schema.Default
			}
		case srcKeyField:
			if x = k.GetIndex(c.idx); x == nil {
				x = c.schema.Default
			}
		case srcKey:
			x = r.Key
		case srcTopic:
			x = r.Topic
		case srcPartition:
			x = r.Partition
		case srcOffset:
			x = r.Offset
		}
		if _, ok := x.(data.Decimal); ok && i >= p.npk {
			// Kept as it is (a pgtype.Numeric would be a new allocation):
			// the COPY encodes it, rowSource.Values converts it for pgx.
			// Key columns convert, in both paths, so that encodeKey sees
			// one form.
			out[i] = x
			continue
		}
		sv, err := pgcommon.SQLValue(c.schema, x)
		if err != nil {
			return nil, false, fatalf("record %s/%d: %w", r.TopicPartition(), r.Offset, err)
		}
		out[i] = sv
	}
	return out, true, nil
}

// check verifies that the table has every column and, for upserts, that
// the record's key columns are the table's primary key.
func (w *writer) check(cols []string, r *plugin.SinkRecord) error {
	for _, c := range cols {
		if _, ok := w.columns[c]; !ok {
			return fatalf("record %s/%d has field %q but table %s has no such column: add it (ALTER TABLE %s ADD COLUMN %s ...)",
				r.TopicPartition(), r.Offset, c, w.table, w.table.Quoted(), pgcommon.QuoteIdent(c))
		}
	}
	return nil
}

// encodeKey renders primary key values as one string for deduplication.
func encodeKey(vals []any) string {
	var b []byte
	for i, v := range vals {
		if i > 0 {
			b = append(b, 0)
		}
		switch x := v.(type) {
		case string:
			b = append(b, x...)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case int32:
			b = strconv.AppendInt(b, int64(x), 10)
		case int16:
			b = strconv.AppendInt(b, int64(x), 10)
		case []byte:
			b = append(b, x...)
		default:
			b = fmt.Append(b, x)
		}
	}
	return string(b)
}
