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
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/cdcevent"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
)

// SourceSchema describes where a change came from (Debezium's MySQL
// source block).
var SourceSchema = data.StructOf("dev.conveyor.connect.mysql.Source",
	data.F("connector", data.StringSchema),
	data.F("name", data.StringSchema),             // topic.prefix
	data.F("db", data.StringSchema),               // database
	data.F("table", data.StringSchema),            // table name
	data.F("snapshot", data.StringSchema),         // "true" for snapshot rows, "false" for streamed changes
	data.F("server_id", data.OptionalInt64Schema), // server id of the change's origin; absent for snapshot rows
	data.F("gtid", data.OptionalStringSchema),     // GTID of the transaction; absent without GTIDs and for snapshot rows
	data.F("file", data.StringSchema),             // binlog file of the transaction (of the snapshot's position for snapshot rows)
	data.F("pos", data.Int64Schema),               // binlog position where the transaction starts
	data.F("row", data.OptionalInt32Schema),       // the change's number within its transaction, from 1
	data.F("ts_ms", data.OptionalInt64Schema),     // commit time, ms since the epoch
)

// table is what the task knows about one captured table.
type table struct {
	id      mycommon.Table
	columns []mycommon.Mapped
	labels  [][]string // enum and set labels per column (nil for others)
	schemas cdcevent.Schemas
	topic   string
}

// loadTable reads a table's columns and primary key from the catalog and
// builds its record schemas.
func loadTable(ctx context.Context, s settings, q mycommon.Querier, id mycommon.Table) (*table, error) {
	cols, err := mycommon.Columns(ctx, q, id)
	if err != nil {
		return nil, err
	}
	keys, err := mycommon.PrimaryKey(ctx, q, id)
	if err != nil {
		return nil, err
	}
	t := &table{id: id, topic: s.topic(id), labels: make([][]string, len(cols))}
	fields := make([]data.Field, len(cols))
	for i, c := range cols {
		m, err := mycommon.MapColumn(c)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", id, err)
		}
		t.columns = append(t.columns, m)
		// Every column is optional: a before image of binlog_row_image
		// MINIMAL holds the key columns only.
		fields[i] = data.F(c.Name, m.Schema.AsOptional())
		if c.DataType == "enum" || c.DataType == "set" {
			if t.labels[i], err = enumLabels(ctx, q, id, c.Name); err != nil {
				return nil, err
			}
		}
	}
	if t.schemas, err = cdcevent.NewSchemas(t.topic, fields, keys, SourceSchema); err != nil {
		return nil, fmt.Errorf("table %s: %w", id, err)
	}
	return t, nil
}

// pick returns the table with only the named columns, in that order.
func (t *table) pick(names []string) (*table, error) {
	if len(names) == len(t.columns) {
		same := true
		for i, n := range names {
			same = same && t.columns[i].Name == n
		}
		if same {
			return t, nil
		}
	}
	out := &table{id: t.id, topic: t.topic}
	fields := make([]data.Field, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(t.columns, func(m mycommon.Mapped) bool { return m.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("table %s: the binlog's column %s is no longer in the table", t.id, mycommon.QuoteIdent(n))
		}
		out.columns = append(out.columns, t.columns[i])
		out.labels = append(out.labels, t.labels[i])
		fields = append(fields, data.F(n, t.columns[i].Schema.AsOptional()))
	}
	var keys []string
	for _, k := range t.schemas.KeyNames() {
		if slices.Contains(names, k) {
			keys = append(keys, k)
		}
	}
	var err error
	if out.schemas, err = cdcevent.NewSchemas(t.topic, fields, keys, SourceSchema); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.id, err)
	}
	return out, nil
}

// enumLabels reads the labels of an enum or set column in their own case
// (mycommon.Columns lower-cases the column type).
func enumLabels(ctx context.Context, q mycommon.Querier, id mycommon.Table, column string) ([]string, error) {
	var ct string
	if err := q.QueryRowContext(ctx, `SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
		id.Schema, id.Name, column).Scan(&ct); err != nil {
		return nil, fmt.Errorf("reading the labels of column %s of %s: %w", mycommon.QuoteIdent(column), id, err)
	}
	if !strings.Contains(ct, "(") {
		return nil, fmt.Errorf("column %s of %s: cannot read the labels of %s", mycommon.QuoteIdent(column), id, ct)
	}
	return parseLabels(ct), nil
}

// parseLabels reads the quoted labels of enum('a','b”c') or set(...).
func parseLabels(ct string) []string {
	open, close := strings.IndexByte(ct, '('), strings.LastIndexByte(ct, ')')
	if open < 0 || close < open {
		return nil
	}
	var out []string
	body := ct[open+1 : close]
	for i := 0; i < len(body); {
		if body[i] != '\'' {
			i++
			continue
		}
		var b strings.Builder
		j := i + 1
		for j < len(body) {
			if body[j] == '\'' && j+1 < len(body) && body[j+1] == '\'' {
				b.WriteByte('\'')
				j += 2
				continue
			}
			if body[j] == '\'' {
				break
			}
			b.WriteByte(body[j])
			j++
		}
		out = append(out, b.String())
		i = j + 1
	}
	return out
}

// rowFromText builds a row from the text protocol's values (nil = NULL),
// as the snapshot reads them.
func (t *table) rowFromText(vals [][]byte) (*data.Struct, error) {
	if len(vals) != len(t.columns) {
		return nil, fmt.Errorf("table %s: %d values for %d columns", t.id, len(vals), len(t.columns))
	}
	st := data.NewStruct(t.schemas.Row)
	for i, v := range vals {
		x, err := t.columns[i].Decode(v)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.id, err)
		}
		if x != nil {
			if err := st.Set(t.columns[i].Name, x); err != nil {
				return nil, fmt.Errorf("table %s: %w", t.id, err)
			}
		}
	}
	return st, nil
}

// rowFromBinlog builds a row from a binlog row image as go-mysql decodes
// it. present says which columns the image holds (nil: all).
func (t *table) rowFromBinlog(vals []any, present func(int) bool) (*data.Struct, error) {
	if len(vals) != len(t.columns) {
		return nil, fmt.Errorf("table %s: the binlog row has %d columns, the table %d", t.id, len(vals), len(t.columns))
	}
	st := data.NewStruct(t.schemas.Row)
	for i, v := range vals {
		if v == nil || present != nil && !present(i) {
			continue
		}
		text, err := binlogText(t.columns[i], t.labels[i], v)
		if err != nil {
			return nil, fmt.Errorf("table %s column %s: %w", t.id, mycommon.QuoteIdent(t.columns[i].Name), err)
		}
		x, err := t.columns[i].Decode(text)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.id, err)
		}
		if x != nil {
			if err := st.Set(t.columns[i].Name, x); err != nil {
				return nil, fmt.Errorf("table %s: %w", t.id, err)
			}
		}
	}
	return st, nil
}

// intBits is the width of each integer type, for unsigned values that
// go-mysql decodes as signed.
var intBits = map[string]uint{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}

// binlogText turns a value decoded by go-mysql into the text protocol's
// form of the column, so that the snapshot and the stream decode through
// the same mapping (mycommon.Mapped.Decode).
func binlogText(m mycommon.Mapped, labels []string, v any) ([]byte, error) {
	switch m.DataType {
	case "enum":
		n, ok := toInt64(v)
		if !ok {
			break
		}
		if n < 1 || int(n) > len(labels) {
			return []byte{}, nil // the empty string of an invalid value
		}
		return []byte(labels[n-1]), nil
	case "set":
		n, ok := toInt64(v)
		if !ok {
			break
		}
		var parts []string
		for i, l := range labels {
			if n&(1<<uint(i)) != 0 {
				parts = append(parts, l)
			}
		}
		return []byte(strings.Join(parts, ",")), nil
	case "bit":
		n, ok := toInt64(v)
		if !ok {
			break
		}
		width := max((m.Precision+7)/8, 1)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n))
		return b[8-width:], nil
	}
	switch x := v.(type) {
	case int8, int16, int32, int64, int:
		n, _ := toInt64(x)
		if bits, ok := intBits[m.DataType]; ok && m.Unsigned() && n < 0 {
			if bits == 64 {
				return []byte(strconv.FormatUint(uint64(n), 10)), nil
			}
			n += 1 << bits
		}
		return []byte(strconv.FormatInt(n, 10)), nil
	case uint64:
		return []byte(strconv.FormatUint(x, 10)), nil
	case float32:
		return []byte(strconv.FormatFloat(float64(x), 'g', -1, 32)), nil
	case float64:
		return []byte(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	case fmt.Stringer:
		return []byte(x.String()), nil
	}
	return nil, fmt.Errorf("unexpected binlog value %T for type %s", v, m.ColumnType)
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case uint64:
		return int64(x), true
	}
	return 0, false
}
