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

package mycommon

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Column is one column of a table as information_schema describes it.
type Column struct {
	Name string
	// DataType is the bare type (int, varchar, datetime, ...), ColumnType
	// the full one (int(10) unsigned, enum('a','b'), ...), both lower case.
	DataType, ColumnType string
	NotNull              bool
	// Precision and Scale of numeric columns; FracDigits of temporal ones.
	Precision, Scale, FracDigits int
}

// Unsigned reports whether an integer or decimal column is unsigned.
func (c Column) Unsigned() bool { return strings.Contains(c.ColumnType, "unsigned") }

// Kind is how a column's values are carried.
type Kind int

// Kinds of columns.
const (
	KindInt8      Kind = iota // tinyint
	KindInt16                 // smallint, tinyint unsigned
	KindInt32                 // mediumint (signed or not), int, smallint unsigned, year
	KindInt64                 // bigint, int unsigned
	KindUint64                // bigint unsigned: Decimal with scale 0 (it exceeds int64)
	KindFloat32               // float
	KindFloat64               // double
	KindDecimal               // decimal(p,s): Decimal with scale s
	KindBool                  // bit(1)
	KindBits                  // bit(n), n > 1: the bytes, most significant first
	KindString                // char, varchar, *text, enum, set, json, uuid, inet4, inet6
	KindBytes                 // binary, varbinary, *blob
	KindDate                  // date: Date
	KindTime                  // time: Time of day (00:00:00 to 23:59:59.999999)
	KindDatetime              // datetime(p): Timestamp, the wall-clock time taken as UTC
	KindTimestamp             // timestamp(p): Timestamp, an instant
)

// Mapped is a column with its runtime/data schema.
type Mapped struct {
	Column
	Kind Kind
	// Schema is the field schema; optional unless the column is NOT NULL.
	Schema *data.Schema
}

// IsInteger reports whether the column holds integers that fit int64.
func (m Mapped) IsInteger() bool {
	switch m.Kind {
	case KindInt8, KindInt16, KindInt32, KindInt64:
		return true
	}
	return false
}

// IsTimestamp reports whether the column is datetime or timestamp.
func (m Mapped) IsTimestamp() bool { return m.Kind == KindDatetime || m.Kind == KindTimestamp }

// MapColumn maps a column type to a runtime/data schema. A type without a
// faithful mapping (the spatial types, for instance) is an error naming
// the column, never a silent string.
func MapColumn(c Column) (Mapped, error) {
	m := Mapped{Column: c}
	var s *data.Schema
	unsigned := c.Unsigned()
	switch c.DataType {
	case "tinyint":
		m.Kind, s = KindInt8, data.Int8Schema
		if unsigned {
			m.Kind, s = KindInt16, data.Int16Schema
		}
	case "smallint":
		m.Kind, s = KindInt16, data.Int16Schema
		if unsigned {
			m.Kind, s = KindInt32, data.Int32Schema
		}
	case "mediumint":
		m.Kind, s = KindInt32, data.Int32Schema
	case "int", "integer":
		m.Kind, s = KindInt32, data.Int32Schema
		if unsigned {
			m.Kind, s = KindInt64, data.Int64Schema
		}
	case "bigint":
		m.Kind, s = KindInt64, data.Int64Schema
		if unsigned {
			m.Kind, s = KindUint64, data.DecimalSchema(0)
			s.Parameters["connect.decimal.precision"] = "20"
		}
	case "year":
		m.Kind, s = KindInt32, data.Int32Schema
	case "float":
		m.Kind, s = KindFloat32, data.Float32Schema
	case "double", "real", "double precision":
		m.Kind, s = KindFloat64, data.Float64Schema
	case "decimal", "numeric":
		m.Kind, s = KindDecimal, data.DecimalSchema(int32(c.Scale))
		s.Parameters["connect.decimal.precision"] = strconv.Itoa(c.Precision)
	case "bit":
		if c.Precision <= 1 {
			m.Kind, s = KindBool, data.BooleanSchema
		} else {
			m.Kind, s = KindBits, data.BytesSchema
		}
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json", "enum", "set", "uuid", "inet4", "inet6":
		m.Kind, s = KindString, data.StringSchema
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		m.Kind, s = KindBytes, data.BytesSchema
	case "date":
		m.Kind, s = KindDate, data.DateSchema()
	case "time":
		m.Kind, s = KindTime, data.TimeSchema()
	case "datetime":
		m.Kind, s = KindDatetime, data.TimestampSchema()
	case "timestamp":
		m.Kind, s = KindTimestamp, data.TimestampSchema()
	default:
		return Mapped{}, fmt.Errorf("column %s has type %s, which the MySQL connectors cannot map to a Connect type; leave the column out (a view without it) or convert it (CAST in a view)", QuoteIdent(c.Name), c.ColumnType)
	}
	cp := *s // never hand out the package-level schemas
	if s.Parameters != nil {
		cp.Parameters = make(map[string]string, len(s.Parameters))
		for k, v := range s.Parameters {
			cp.Parameters[k] = v
		}
	}
	cp.Optional = !c.NotNull
	m.Schema = &cp
	return m, nil
}

// Decode converts a column's value in MySQL's text protocol form into the
// Go value of its schema (nil for NULL).
func (m Mapped) Decode(b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	v, err := m.decode(b)
	if err != nil {
		return nil, fmt.Errorf("column %s (%s): %w", QuoteIdent(m.Name), m.ColumnType, err)
	}
	return v, nil
}

func (m Mapped) decode(b []byte) (any, error) {
	s := string(b)
	switch m.Kind {
	case KindInt8:
		n, err := strconv.ParseInt(s, 10, 8)
		return int8(n), err
	case KindInt16:
		n, err := strconv.ParseInt(s, 10, 16)
		return int16(n), err
	case KindInt32:
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case KindInt64:
		return strconv.ParseInt(s, 10, 64)
	case KindUint64:
		return data.ParseDecimal(s)
	case KindFloat32:
		f, err := strconv.ParseFloat(s, 32)
		return float32(f), err
	case KindFloat64:
		return strconv.ParseFloat(s, 64)
	case KindDecimal:
		d, err := data.ParseDecimal(s)
		if err == nil && d.Scale != int32(m.Scale) {
			err = fmt.Errorf("value %s has scale %d, the column %d", s, d.Scale, m.Scale)
		}
		return d, err
	case KindBool:
		return len(bytes.Trim(b, "\x00")) > 0, nil
	case KindBits:
		return bytes.Clone(b), nil
	case KindString:
		return s, nil
	case KindBytes:
		return bytes.Clone(b), nil
	case KindDate:
		if strings.HasPrefix(s, "0000") || strings.Contains(s, "-00") {
			return nil, fmt.Errorf("zero date %q has no Connect value; fix the row or read the table with a NO_ZERO_DATE sql_mode", s)
		}
		return time.ParseInLocation("2006-01-02", s, time.UTC)
	case KindTime:
		if strings.HasPrefix(s, "-") {
			return nil, fmt.Errorf("time %s is negative; a Connect Time is a time of day (00:00:00 to 23:59:59)", s)
		}
		t, err := time.ParseInLocation("15:04:05.999999999", s, time.UTC)
		if err != nil {
			return nil, fmt.Errorf("time %s is not a time of day (00:00:00 to 23:59:59), as a Connect Time must be", s)
		}
		return time.Date(1970, 1, 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), nil
	case KindDatetime, KindTimestamp:
		if strings.HasPrefix(s, "0000-00-00") {
			return nil, fmt.Errorf("zero date %q has no Connect value; fix the row or read the table with a NO_ZERO_DATE sql_mode", s)
		}
		return time.ParseInLocation("2006-01-02 15:04:05.999999999", s, time.UTC)
	}
	return nil, fmt.Errorf("unknown kind %d", m.Kind)
}

// SQLType is the column type auto.create and auto.evolve give a field of
// the schema; an error names the field when its schema has no MySQL type.
func SQLType(field string, s *data.Schema) (string, error) {
	switch s.Name {
	case data.DecimalName:
		scale, err := data.DecimalScale(s)
		if err != nil {
			return "", fmt.Errorf("field %s: %w", field, err)
		}
		prec := 65
		if p, err := strconv.Atoi(s.Parameters["connect.decimal.precision"]); err == nil && p > 0 && p <= 65 && p >= int(scale) {
			prec = p
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", prec, scale), nil
	case data.DateName:
		return "DATE", nil
	case data.TimeName:
		return "TIME(3)", nil
	case data.TimestampName:
		return "DATETIME(6)", nil
	}
	switch s.Type {
	case data.TypeInt8:
		return "TINYINT", nil
	case data.TypeInt16:
		return "SMALLINT", nil
	case data.TypeInt32:
		return "INT", nil
	case data.TypeInt64:
		return "BIGINT", nil
	case data.TypeFloat32:
		return "FLOAT", nil
	case data.TypeFloat64:
		return "DOUBLE", nil
	case data.TypeBoolean:
		return "BOOLEAN", nil
	case data.TypeString:
		return "LONGTEXT", nil
	case data.TypeBytes:
		return "LONGBLOB", nil
	}
	return "", fmt.Errorf("field %s has schema type %s, which has no MySQL column type; flatten it first (the Flatten transform) or leave it out", field, s.Type)
}

// KeySQLType is SQLType for a primary key column: MySQL indexes text and
// blobs only by a prefix, so keys use VARCHAR(255) and VARBINARY(255).
func KeySQLType(field string, s *data.Schema) (string, error) {
	if s.Name == "" {
		switch s.Type {
		case data.TypeString:
			return "VARCHAR(255)", nil
		case data.TypeBytes:
			return "VARBINARY(255)", nil
		}
	}
	return SQLType(field, s)
}

// SQLValue converts a field value to a statement argument.
func SQLValue(s *data.Schema, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case data.Decimal:
		return x.String()
	case time.Time:
		if s != nil && s.Name == data.TimeName {
			return x.UTC().Format("15:04:05.000000")
		}
		if s != nil && s.Name == data.DateName {
			return x.UTC().Format("2006-01-02")
		}
		return x.UTC().Format("2006-01-02 15:04:05.999999")
	}
	return v
}
