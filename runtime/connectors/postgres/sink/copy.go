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
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
)

// The sink's own binary COPY encoding. pgx's CopyFrom asks the server for
// the columns' types first (a round trip per COPY) and finds an encode
// plan again for every value (a map look-up by type, a tenth of the
// sink's CPU); here each column gets its encoder once per COPY, from the
// column type the writer read from the catalog, and rows are encoded into
// one reused buffer as PostgreSQL reads them.
//
// The rule: a COPY whose columns all have a type in colEncoderFor's list
// is encoded here; any other column type sends the whole COPY through
// pgx's CopyFrom, as before. Within an encoded COPY, a value of a Go type
// that its column's encoder does not take (say a string for a timestamp
// column, from a schemaless record) is encoded by pgx's type map exactly
// as pgx's CopyFrom encodes it, so both ways store the same rows.

// colEncoder appends v (not nil) in its column type's binary form; ok is
// false for a value it does not take.
type colEncoder func(buf []byte, v any) (out []byte, ok bool)

// colEncoderFor returns the encoder of a column type, or nil for a type
// the sink leaves to pgx. The Go types taken are those pgcommon.SQLValue
// produces for the column's kind (see pgcommon.MapColumn).
func colEncoderFor(oid uint32) colEncoder {
	be := binary.BigEndian
	switch oid {
	case pgtype.Int2OID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(int16)
			return be.AppendUint16(b, uint16(x)), ok
		}
	case pgtype.Int4OID:
		return func(b []byte, v any) ([]byte, bool) {
			switch x := v.(type) {
			case int32:
				return be.AppendUint32(b, uint32(x)), true
			case int16:
				return be.AppendUint32(b, uint32(int32(x))), true
			}
			return b, false
		}
	case pgtype.Int8OID:
		return func(b []byte, v any) ([]byte, bool) {
			switch x := v.(type) {
			case int64:
				return be.AppendUint64(b, uint64(x)), true
			case int32:
				return be.AppendUint64(b, uint64(int64(x))), true
			case int16:
				return be.AppendUint64(b, uint64(int64(x))), true
			}
			return b, false
		}
	case pgtype.Float4OID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(float32)
			return be.AppendUint32(b, math.Float32bits(x)), ok
		}
	case pgtype.Float8OID:
		return func(b []byte, v any) ([]byte, bool) {
			switch x := v.(type) {
			case float64:
				return be.AppendUint64(b, math.Float64bits(x)), true
			case float32:
				return be.AppendUint64(b, math.Float64bits(float64(x))), true
			}
			return b, false
		}
	case pgtype.BoolOID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(bool)
			if x {
				return append(b, 1), ok
			}
			return append(b, 0), ok
		}
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.JSONOID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(string)
			return append(b, x...), ok
		}
	case pgtype.JSONBOID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(string)
			return append(append(b, 1), x...), ok // jsonb's binary form: version 1, then the text
		}
	case pgtype.UUIDOID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(string)
			if !ok {
				return b, false
			}
			// pgx's rule: 36 characters with the dashes at their places
			// dropped unchecked, or 32 hex digits; anything else goes to
			// pgx for its error.
			switch len(x) {
			case 36:
				var h [32]byte
				copy(h[0:8], x[0:8])
				copy(h[8:12], x[9:13])
				copy(h[12:16], x[14:18])
				copy(h[16:20], x[19:23])
				copy(h[20:32], x[24:36])
				return appendHex(b, h[:])
			case 32:
				return appendHex(b, []byte(x))
			}
			return b, false
		}
	case pgtype.ByteaOID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.([]byte)
			return append(b, x...), ok && x != nil // a nil slice is NULL for pgx
		}
	case pgtype.NumericOID:
		return func(b []byte, v any) ([]byte, bool) {
			switch x := v.(type) {
			case pgtype.Numeric:
				return appendSmallNumeric(b, x) // other numerics: pgx's own encoding
			case data.Decimal:
				if x.Unscaled == nil {
					return b, false
				}
				return appendSmallNumeric(b, pgtype.Numeric{Int: x.Unscaled, Exp: -x.Scale, Valid: true})
			}
			return b, false
		}
	case pgtype.DateOID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(pgtype.Date)
			if !ok || !x.Valid || x.InfinityModifier != pgtype.Finite {
				return b, false
			}
			// As pgx: the date's calendar day, in days since 2000-01-01.
			t := x.Time
			days := (time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix() - pgcommon.PGEpochMicros/1_000_000) / 86400
			return be.AppendUint32(b, uint32(int32(days))), true
		}
	case pgtype.TimeOID:
		return func(b []byte, v any) ([]byte, bool) {
			x, ok := v.(pgtype.Time)
			return be.AppendUint64(b, uint64(x.Microseconds)), ok && x.Valid
		}
	case pgtype.TimestampOID, pgtype.TimestamptzOID:
		wall := oid == pgtype.TimestampOID
		return func(b []byte, v any) ([]byte, bool) {
			t, ok := v.(time.Time)
			if !ok {
				return b, false
			}
			if wall && t.Location() != time.UTC {
				// timestamp without time zone takes the wall clock, as pgx does
				t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
			}
			us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - pgcommon.PGEpochMicros
			return be.AppendUint64(b, uint64(us)), true
		}
	}
	return nil
}

// appendHex appends the 16 bytes that 32 hex digits spell; ok false on a
// character that is not a hex digit.
func appendHex(b []byte, h []byte) ([]byte, bool) {
	var out [16]byte
	if _, err := hex.Decode(out[:], h); err != nil {
		return b, false
	}
	return append(b, out[:]...), true
}

// binaryCopy is the data of one binary COPY (header, rows, trailer),
// encoded from src's rows as PostgreSQL reads them.
type binaryCopy struct {
	src  *rowSource
	cols []string
	oids []uint32
	encs []colEncoder
	m    *pgtype.Map
	buf  []byte // encoded and not yet read from off on
	off  int
	head bool // header written
	done bool // trailer written
}

// binaryCopyFor returns the COPY of src into cols of a table of w's
// columns, or nil when a column's type is not one the sink encodes.
func binaryCopyFor(w *writer, m *pgtype.Map, cols []string, src *rowSource) *binaryCopy {
	c := &binaryCopy{src: src, cols: cols, oids: make([]uint32, len(cols)), encs: make([]colEncoder, len(cols)), m: m, buf: w.copyBuf[:0]}
	for i, name := range cols {
		col, ok := w.columns[name]
		if !ok {
			return nil
		}
		if c.encs[i] = colEncoderFor(col.TypeOID); c.encs[i] == nil {
			return nil
		}
		c.oids[i] = col.TypeOID
	}
	return c
}

// copyChunk is how much is encoded ahead of PostgreSQL: pgconn sends
// what it reads in messages of up to 64 KiB.
const copyChunk = 64 << 10

func (c *binaryCopy) Read(p []byte) (int, error) {
	for c.off == len(c.buf) {
		if c.done {
			return 0, io.EOF
		}
		c.buf, c.off = c.buf[:0], 0
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.off:])
	c.off += n
	return n, nil
}

// fill encodes rows until about copyChunk bytes are waiting or the rows
// end (then the trailer too).
func (c *binaryCopy) fill() error {
	be := binary.BigEndian
	if !c.head {
		c.buf = append(c.buf, "PGCOPY\n\xff\r\n\x00"...)
		c.buf = be.AppendUint32(c.buf, 0) // flags
		c.buf = be.AppendUint32(c.buf, 0) // header extension length
		c.head = true
	}
	for len(c.buf) < copyChunk {
		if !c.src.Next() {
			if err := c.src.Err(); err != nil {
				return err
			}
			c.buf = be.AppendUint16(c.buf, 0xffff) // trailer: -1 fields
			c.done = true
			return nil
		}
		vals, r := c.src.values(), c.src.rows[c.src.next-1].rec
		if len(vals) != len(c.encs) { // a bug of the sink's, not of the record
			c.src.err = fatalf("record %s/%d: %d values for %d columns", r.TopicPartition(), r.Offset, len(vals), len(c.encs))
			return c.src.err
		}
		c.buf = be.AppendUint16(c.buf, uint16(len(vals)))
		for i, v := range vals {
			if v == nil {
				c.buf = be.AppendUint32(c.buf, math.MaxUint32) // -1: NULL
				continue
			}
			at := len(c.buf)
			c.buf = be.AppendUint32(c.buf, 0) // the length, set below
			b, ok := c.encs[i](c.buf, v)
			if !ok {
				var err error
				if b, err = c.pgxValue(c.buf, i, v); err != nil {
					c.src.err = fatalf("record %s/%d: column %s: %w", r.TopicPartition(), r.Offset, c.cols[i], err)
					return c.src.err
				}
				if b == nil { // pgx encoded the value as NULL
					c.buf = be.AppendUint32(c.buf[:at], math.MaxUint32)
					continue
				}
			}
			be.PutUint32(b[at:], uint32(len(b)-at-4))
			c.buf = b
		}
	}
	return nil
}

// pgxValue appends column i's value v as pgx's CopyFrom does (its
// encodeCopyValue): by the type map, or for a string that the type map
// cannot encode, by scanning its text form into the column type first.
// It returns nil for a value pgx writes as NULL.
func (c *binaryCopy) pgxValue(buf []byte, i int, v any) ([]byte, error) {
	if d, ok := v.(data.Decimal); ok { // as rowSource.Values gives it to pgx
		var err error
		if v, err = pgcommon.SQLValue(nil, d); err != nil {
			return nil, err
		}
	}
	out, err := c.m.Encode(c.oids[i], pgx.BinaryFormatCode, v, buf)
	if err == nil {
		return out, nil
	}
	s, isString := v.(string)
	if !isString {
		text, terr := c.m.Encode(c.oids[i], pgx.TextFormatCode, v, nil)
		if terr != nil {
			return nil, err
		}
		s = string(text)
	}
	var x any
	if serr := c.m.Scan(c.oids[i], pgx.TextFormatCode, []byte(s), &x); serr != nil {
		return nil, err
	}
	return c.m.Encode(c.oids[i], pgx.BinaryFormatCode, x, buf)
}

// copySQL is the COPY statement of a binary COPY into table's cols.
func copySQL(table pgx.Identifier, cols []string) string {
	return "COPY " + table.Sanitize() + " (" + quoteAll(cols) + ") FROM STDIN (FORMAT binary)"
}
