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

package pgcommon

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Column is one column of a table as the catalog describes it.
type Column struct {
	Name    string
	TypeOID uint32
	TypMod  int32
	// TypeName is the formatted type, for example "numeric(10,2)".
	TypeName string
	NotNull  bool
}

// Kind is how a column's values are carried.
type Kind int

// Kinds of columns.
const (
	KindText        Kind = iota // any type without a closer mapping: its text form, as a string
	KindInt16                   // smallint
	KindInt32                   // integer
	KindInt64                   // bigint
	KindFloat32                 // real
	KindFloat64                 // double precision
	KindBool                    // boolean
	KindString                  // text, varchar, char, name, uuid, json, jsonb
	KindBytes                   // bytea
	KindDecimal                 // numeric(p,s): Decimal with scale s
	KindDate                    // date: Date
	KindTime                    // time: Time (milliseconds in the schema, microseconds in the value)
	KindTimestamp               // timestamp: Timestamp (wall clock taken as UTC)
	KindTimestamptz             // timestamptz: Timestamp
)

// Mapped is a column with its runtime/data schema.
type Mapped struct {
	Column
	Kind Kind
	// Schema is the field schema; optional unless the column is NOT NULL.
	Schema *data.Schema
	// Scale is the decimal scale of a KindDecimal column.
	Scale int32
}

// SelectExpr is the column's expression in a SELECT list: the quoted name,
// cast to text for KindText columns (so any type reads as its text form).
func (m Mapped) SelectExpr() string {
	if m.Kind == KindText {
		return QuoteIdent(m.Name) + "::text"
	}
	return QuoteIdent(m.Name)
}

// MapColumn maps a column type to a runtime/data schema. Types without a
// closer mapping (arrays, intervals, network addresses, enums, ranges,
// unconstrained numeric, ...) become strings holding their text form.
func MapColumn(c Column) Mapped {
	m := Mapped{Column: c}
	var s *data.Schema
	switch c.TypeOID {
	case pgtype.Int2OID:
		m.Kind, s = KindInt16, data.Int16Schema
	case pgtype.Int4OID:
		m.Kind, s = KindInt32, data.Int32Schema
	case pgtype.Int8OID:
		m.Kind, s = KindInt64, data.Int64Schema
	case pgtype.Float4OID:
		m.Kind, s = KindFloat32, data.Float32Schema
	case pgtype.Float8OID:
		m.Kind, s = KindFloat64, data.Float64Schema
	case pgtype.BoolOID:
		m.Kind, s = KindBool, data.BooleanSchema
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UUIDOID, pgtype.JSONOID, pgtype.JSONBOID:
		m.Kind, s = KindString, data.StringSchema
	case pgtype.ByteaOID:
		m.Kind, s = KindBytes, data.BytesSchema
	case pgtype.NumericOID:
		// typmod = ((precision << 16) | scale) + 4; -1 when unconstrained.
		if c.TypMod >= 4 {
			m.Kind, m.Scale = KindDecimal, int32((c.TypMod-4)&0xffff)
			s = data.DecimalSchema(m.Scale)
			s.Parameters["connect.decimal.precision"] = strconv.Itoa(int((c.TypMod - 4) >> 16))
		} else {
			m.Kind, s = KindText, data.StringSchema
		}
	case pgtype.DateOID:
		m.Kind, s = KindDate, data.DateSchema()
	case pgtype.TimeOID:
		m.Kind, s = KindTime, data.TimeSchema()
	case pgtype.TimestampOID:
		m.Kind, s = KindTimestamp, data.TimestampSchema()
	case pgtype.TimestamptzOID:
		m.Kind, s = KindTimestamptz, data.TimestampSchema()
	default:
		m.Kind, s = KindText, data.StringSchema
	}
	cp := *s // never hand out the package-level schemas
	cp.Optional = !c.NotNull
	m.Schema = &cp
	return m
}

// IsInteger reports whether the column is smallint, integer or bigint.
func (m Mapped) IsInteger() bool {
	return m.Kind == KindInt16 || m.Kind == KindInt32 || m.Kind == KindInt64
}

// IsTemporal reports whether the column is a timestamp, timestamptz or date.
func (m Mapped) IsTemporal() bool {
	return m.Kind == KindTimestamp || m.Kind == KindTimestamptz || m.Kind == KindDate
}

// Querier runs queries: a *pgx.Conn, *pgxpool.Pool or pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrNoTable means a table does not exist (or is not visible to the user).
var ErrNoTable = errors.New("table does not exist")

// Resolve finds a table through the catalog (following the search_path
// for unqualified names) and returns it schema-qualified. It wraps
// ErrNoTable when there is no such table.
func Resolve(ctx context.Context, q Querier, t Table) (Table, error) {
	var schema, name string
	err := q.QueryRow(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1)`, t.Quoted()).Scan(&schema, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Table{}, fmt.Errorf("table %s: %w", t, ErrNoTable)
	}
	if err != nil {
		return Table{}, fmt.Errorf("looking up table %s: %w", t, err)
	}
	return Table{Schema: schema, Name: name}, nil
}

// Columns reads a table's columns in order.
func Columns(ctx context.Context, q Querier, t Table) ([]Column, error) {
	rows, err := q.Query(ctx, `SELECT a.attname, a.atttypid, a.atttypmod, format_type(a.atttypid, a.atttypmod), a.attnotnull
		FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t.Quoted())
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", t, err)
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Column, error) {
		var c Column
		err := r.Scan(&c.Name, &c.TypeOID, &c.TypMod, &c.TypeName, &c.NotNull)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", t, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("table %s: %w", t, ErrNoTable)
	}
	return cols, nil
}

// PrimaryKey returns the primary key columns of a table in key order
// (empty when it has none).
func PrimaryKey(ctx context.Context, q Querier, t Table) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = to_regclass($1) AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, t.Quoted())
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of %s: %w", t, err)
	}
	pk, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of %s: %w", t, err)
	}
	return pk, nil
}

// Decoder turns the raw wire value of one column (nil for NULL) into its
// runtime/data value. A Decoder is not safe for concurrent use.
type Decoder func(raw []byte) (any, error)

// NewDecoder returns the decoder of a mapped column for values in the given
// wire format (pgx.TextFormatCode or pgx.BinaryFormatCode) of type oid (the
// column's type, or text for KindText columns read through SelectExpr or
// from a logical replication stream in text mode).
func NewDecoder(tm *pgtype.Map, m Mapped, oid uint32, format int16) Decoder {
	if m.Kind == KindText || ((m.Kind == KindString) && (format == pgx.TextFormatCode || oid == pgtype.TextOID || oid == pgtype.VarcharOID)) {
		return func(raw []byte) (any, error) {
			if raw == nil {
				return nil, nil
			}
			return string(raw), nil
		}
	}
	if format == pgx.BinaryFormatCode {
		if dec := binaryDecoder(m, oid); dec != nil {
			return dec
		}
	}
	return genericDecoder(tm, m, oid, format)
}

// genericDecoder decodes with pgx's scan plans (any format).
func genericDecoder(tm *pgtype.Map, m Mapped, oid uint32, format int16) Decoder {
	p := decodePlan{tm: tm, oid: oid, format: format, column: m.Name, typ: m.TypeName}
	switch m.Kind {
	case KindInt16:
		return decoder(p, same[int16])
	case KindInt32:
		return decoder(p, same[int32])
	case KindInt64:
		return decoder(p, same[int64])
	case KindFloat32:
		return decoder(p, same[float32])
	case KindFloat64:
		return decoder(p, same[float64])
	case KindBool:
		return decoder(p, same[bool])
	case KindString:
		return decoder(p, same[string])
	case KindBytes:
		if format == pgx.BinaryFormatCode {
			return func(raw []byte) (any, error) {
				if raw == nil {
					return nil, nil
				}
				return append([]byte(nil), raw...), nil
			}
		}
		return decoder(p, same[[]byte])
	case KindDecimal:
		scale := m.Scale
		general := decoder(p, func(v pgtype.Numeric) (any, error) { return NumericToDecimal(v, scale) })
		if oid != pgtype.NumericOID || format != pgx.BinaryFormatCode || strconv.IntSize < 64 {
			return general
		}
		// Values whose unscaled integer fits in 64 bits (every numeric of
		// precision 18 or less) are decoded straight from the wire into
		// integers from a slab; the rest take the general path.
		var slab decimalSlab
		return func(raw []byte) (any, error) {
			if raw == nil {
				return nil, nil
			}
			if u, ok := numericBinaryToInt64(raw, scale); ok {
				return data.Decimal{Unscaled: slab.int(u), Scale: scale}, nil
			}
			return general(raw)
		}
	case KindDate:
		return decoder(p, func(v pgtype.Date) (any, error) {
			if v.InfinityModifier != pgtype.Finite {
				return nil, errors.New("infinite dates have no Date value")
			}
			return v.Time, nil
		})
	case KindTime:
		return decoder(p, func(v pgtype.Time) (any, error) { return time.UnixMicro(v.Microseconds).UTC(), nil })
	case KindTimestamp:
		return decoder(p, func(v pgtype.Timestamp) (any, error) {
			if v.InfinityModifier != pgtype.Finite {
				return nil, errors.New("infinite timestamps have no Timestamp value")
			}
			return v.Time, nil
		})
	case KindTimestamptz:
		return decoder(p, func(v pgtype.Timestamptz) (any, error) {
			if v.InfinityModifier != pgtype.Finite {
				return nil, errors.New("infinite timestamps have no Timestamp value")
			}
			return v.Time.UTC(), nil
		})
	}
	return func([]byte) (any, error) { return nil, p.wrap(fmt.Errorf("no decoder for kind %d", m.Kind)) }
}

// PGEpochMicros is 2000-01-01 00:00:00 UTC, PostgreSQL's epoch, in
// microseconds since the Unix epoch.
const PGEpochMicros = 946684800 * 1_000_000

// binaryDecoder returns a decoder that reads the binary wire format of the
// fixed-size types directly (the generic scan plans cost several times
// more per value), or nil when the kind and type are not such a pair.
// Values the generic path rejects (infinite timestamps and dates) and
// malformed lengths are errors here too.
func binaryDecoder(m Mapped, oid uint32) Decoder {
	p := decodePlan{column: m.Name, typ: m.TypeName}
	fixed := func(size int, conv func(b []byte) (any, error)) Decoder {
		return func(raw []byte) (any, error) {
			if raw == nil {
				return nil, nil
			}
			if len(raw) != size {
				return nil, p.wrap(fmt.Errorf("binary value of %d bytes, want %d", len(raw), size))
			}
			v, err := conv(raw)
			if err != nil {
				return nil, p.wrap(err)
			}
			return v, nil
		}
	}
	kind := m.Kind
	be := binary.BigEndian
	switch {
	case kind == KindInt16 && oid == pgtype.Int2OID:
		return fixed(2, func(b []byte) (any, error) { return int16(be.Uint16(b)), nil })
	case kind == KindInt32 && oid == pgtype.Int4OID:
		return fixed(4, func(b []byte) (any, error) { return int32(be.Uint32(b)), nil })
	case kind == KindInt64 && oid == pgtype.Int8OID:
		return fixed(8, func(b []byte) (any, error) { return int64(be.Uint64(b)), nil })
	case kind == KindFloat32 && oid == pgtype.Float4OID:
		return fixed(4, func(b []byte) (any, error) { return math.Float32frombits(be.Uint32(b)), nil })
	case kind == KindFloat64 && oid == pgtype.Float8OID:
		return fixed(8, func(b []byte) (any, error) { return math.Float64frombits(be.Uint64(b)), nil })
	case kind == KindBool && oid == pgtype.BoolOID:
		return fixed(1, func(b []byte) (any, error) { return b[0] != 0, nil })
	case (kind == KindTimestamptz && oid == pgtype.TimestamptzOID) || (kind == KindTimestamp && oid == pgtype.TimestampOID):
		return fixed(8, func(b []byte) (any, error) {
			us := int64(be.Uint64(b))
			if us == math.MaxInt64 || us == math.MinInt64 {
				return nil, errors.New("infinite timestamps have no Timestamp value")
			}
			return time.UnixMicro(us + PGEpochMicros).UTC(), nil
		})
	case kind == KindDate && oid == pgtype.DateOID:
		return fixed(4, func(b []byte) (any, error) {
			days := int32(be.Uint32(b))
			if days == math.MaxInt32 || days == math.MinInt32 {
				return nil, errors.New("infinite dates have no Date value")
			}
			return time.Date(2000, 1, 1+int(days), 0, 0, 0, 0, time.UTC), nil
		})
	}
	return nil
}

// decodePlan is what a column's decoder needs to scan its wire values.
type decodePlan struct {
	tm          *pgtype.Map
	oid         uint32
	format      int16
	column, typ string
}

func (p decodePlan) wrap(err error) error {
	return fmt.Errorf("column %s (%s): %w", p.column, p.typ, err)
}

func same[T any](v T) (any, error) { return v, nil }

// decoder scans each raw value into one reused T with a scan plan made
// once, then converts it with conv.
func decoder[T any](p decodePlan, conv func(T) (any, error)) Decoder {
	var v T
	plan := p.tm.PlanScan(p.oid, p.format, &v)
	return func(raw []byte) (any, error) {
		if raw == nil {
			return nil, nil
		}
		if err := plan.Scan(raw, &v); err != nil {
			return nil, p.wrap(err)
		}
		out, err := conv(v)
		if err != nil {
			return nil, p.wrap(err)
		}
		return out, nil
	}
}

var bigTen = big.NewInt(10)

// pow10 holds 10^0 .. 10^18, the powers of ten an int64 holds.
var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// numericBinaryToInt64 decodes a numeric in PostgreSQL's binary format
// (int16 digit count, int16 weight, uint16 sign, int16 display scale, then
// base-10000 digits, the first worth 10000^weight) into its unscaled
// integer at the given scale. ok is false when the value is NaN or
// infinite, has more decimal places than scale, does not fit in an int64,
// or is malformed: the general decoder then reports or handles it.
func numericBinaryToInt64(raw []byte, scale int32) (int64, bool) {
	if len(raw) < 8 || scale < 0 {
		return 0, false
	}
	ndigits := int(int16(binary.BigEndian.Uint16(raw)))
	weight := int(int16(binary.BigEndian.Uint16(raw[2:])))
	sign := binary.BigEndian.Uint16(raw[4:])
	if ndigits < 0 || len(raw) != 8+2*ndigits || (sign != 0 && sign != 0x4000) {
		return 0, false
	}
	if ndigits == 0 {
		return 0, true
	}
	// u accumulates the digits; the last one is worth 10000^(weight-ndigits+1).
	var u uint64
	const limit = uint64(math.MaxInt64)
	for i := 0; i < ndigits; i++ {
		d := uint64(binary.BigEndian.Uint16(raw[8+2*i:]))
		if d >= 10000 || u > (limit-d)/10000 {
			return 0, false
		}
		u = u*10000 + d
	}
	shift := 4*(weight-ndigits+1) + int(scale) // unscaled = u * 10^shift
	switch {
	case shift > 0:
		if shift >= len(pow10) || u > limit/uint64(pow10[shift]) {
			return 0, false
		}
		u *= uint64(pow10[shift])
	case shift < 0:
		if -shift >= len(pow10) {
			// u < 10^18 here, so dividing by 10^19 or more leaves no
			// integer part: only zero has no decimal places to lose.
			return 0, u == 0
		}
		p := uint64(pow10[-shift])
		if u%p != 0 {
			return 0, false
		}
		u /= p
	}
	if sign == 0x4000 {
		return -int64(u), true
	}
	return int64(u), true
}

// decimalSlab hands out big.Ints of one word each, allocated many at a
// time: a decoded Decimal then costs no allocation of its own. The ints
// are never changed after they were handed out; one that grows (in
// arithmetic on a copy) gets fresh memory, since each has capacity one.
type decimalSlab struct {
	ints  []big.Int
	words []big.Word
}

func (s *decimalSlab) int(v int64) *big.Int {
	if len(s.ints) == 0 {
		s.ints, s.words = make([]big.Int, 256), make([]big.Word, 256)
	}
	z := &s.ints[0]
	abs := uint64(v)
	if v < 0 {
		abs = uint64(-v) // also right for math.MinInt64
	}
	s.words[0] = big.Word(abs)
	z.SetBits(s.words[:1:1])
	if v < 0 {
		z.Neg(z)
	}
	s.ints, s.words = s.ints[1:], s.words[1:]
	return z
}

// NumericToDecimal converts a numeric to a Decimal of the given scale.
func NumericToDecimal(n pgtype.Numeric, scale int32) (data.Decimal, error) {
	if n.NaN || n.InfinityModifier != pgtype.Finite {
		return data.Decimal{}, errors.New("NaN and infinite numerics have no Decimal value")
	}
	u := new(big.Int)
	if n.Int != nil {
		u.Set(n.Int)
	}
	shift := n.Exp + scale // value = Int * 10^Exp = unscaled * 10^-scale
	switch {
	case shift > 0:
		u.Mul(u, new(big.Int).Exp(bigTen, big.NewInt(int64(shift)), nil))
	case shift < 0:
		q, r := new(big.Int).QuoRem(u, new(big.Int).Exp(bigTen, big.NewInt(int64(-shift)), nil), new(big.Int))
		if r.Sign() != 0 {
			return data.Decimal{}, fmt.Errorf("numeric has more than %d decimal places", scale)
		}
		u = q
	}
	return data.Decimal{Unscaled: u, Scale: scale}, nil
}

// SQLType returns the PostgreSQL column type for a runtime/data schema,
// for creating tables from record schemas.
func SQLType(s *data.Schema) (string, error) {
	switch s.Name {
	case data.DecimalName:
		return "numeric", nil
	case data.DateName:
		return "date", nil
	case data.TimeName:
		return "time", nil
	case data.TimestampName:
		return "timestamp", nil
	}
	switch s.Type {
	case data.TypeInt8, data.TypeInt16:
		return "smallint", nil
	case data.TypeInt32:
		return "integer", nil
	case data.TypeInt64:
		return "bigint", nil
	case data.TypeFloat32:
		return "real", nil
	case data.TypeFloat64:
		return "double precision", nil
	case data.TypeBoolean:
		return "boolean", nil
	case data.TypeString:
		return "text", nil
	case data.TypeBytes:
		return "bytea", nil
	case data.TypeArray, data.TypeMap, data.TypeStruct:
		return "jsonb", nil
	}
	return "", fmt.Errorf("no PostgreSQL type for schema %s", s)
}

// SQLValue converts a runtime/data value into a value pgx can write to a
// column: Decimals as numerics, Date and Time values as dates and times,
// int8 as int16, and arrays, maps and structs as JSON text.
func SQLValue(s *data.Schema, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case data.Decimal:
		u := x.Unscaled
		if u == nil {
			u = new(big.Int)
		}
		return pgtype.Numeric{Int: u, Exp: -x.Scale, Valid: true}, nil
	case time.Time:
		if s != nil {
			switch s.Name {
			case data.TimeName:
				ms := x.UTC().Sub(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC))
				return pgtype.Time{Microseconds: ms.Microseconds(), Valid: true}, nil
			case data.DateName:
				return pgtype.Date{Time: x.UTC(), Valid: true}, nil
			}
		}
		if x.Location() == time.UTC {
			return v, nil // as it is: a new time.Time in v would cost an allocation
		}
		return x.UTC(), nil
	case int8:
		return int16(x), nil
	case *data.Struct, []any, map[string]any, map[any]any:
		b, err := (data.JSONEncoder{}).Marshal(s, v)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	case json.Number:
		return x.String(), nil
	}
	return v, nil
}
