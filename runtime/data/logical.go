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

package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Names of the logical types, the same as Kafka Connect's so that schemas
// interoperate.
const (
	// TimestampName marks an int64 schema holding milliseconds since the Unix
	// epoch; its Go value is a time.Time.
	TimestampName = "org.apache.kafka.connect.data.Timestamp"
	// DateName marks an int32 schema holding days since the Unix epoch; its
	// Go value is a time.Time at midnight UTC.
	DateName = "org.apache.kafka.connect.data.Date"
	// TimeName marks an int32 schema holding milliseconds since midnight; its
	// Go value is a time.Time on 1970-01-01 UTC.
	TimeName = "org.apache.kafka.connect.data.Time"
	// DecimalName marks a bytes schema holding the big-endian two's-complement
	// unscaled value of a decimal; the scale is the schema parameter
	// [DecimalScaleParam]. Its Go value is a [Decimal].
	DecimalName = "org.apache.kafka.connect.data.Decimal"
	// DecimalScaleParam is the schema parameter that holds a Decimal's scale.
	DecimalScaleParam = "scale"
)

var logicalTypes = map[string]Type{
	TimestampName: TypeInt64,
	DateName:      TypeInt32,
	TimeName:      TypeInt32,
	DecimalName:   TypeBytes,
}

// IsLogical reports whether the schema is one of the logical types.
func (s *Schema) IsLogical() bool {
	if s == nil {
		return false
	}
	// A switch, not a lookup in logicalTypes: encoders ask for every
	// value, and most names (structs') differ in length already.
	switch s.Name {
	case TimestampName, DateName, TimeName, DecimalName:
		return true
	}
	return false
}

// TimestampSchema returns a required Timestamp schema.
func TimestampSchema() *Schema {
	return &Schema{Type: TypeInt64, Name: TimestampName, Version: 1}
}

// DateSchema returns a required Date schema.
func DateSchema() *Schema { return &Schema{Type: TypeInt32, Name: DateName, Version: 1} }

// TimeSchema returns a required Time schema.
func TimeSchema() *Schema { return &Schema{Type: TypeInt32, Name: TimeName, Version: 1} }

// DecimalSchema returns a required Decimal schema with the given scale.
func DecimalSchema(scale int32) *Schema {
	return &Schema{Type: TypeBytes, Name: DecimalName, Version: 1,
		Parameters: map[string]string{DecimalScaleParam: strconv.Itoa(int(scale))}}
}

// DecimalScale reads the scale parameter of a Decimal schema.
func DecimalScale(s *Schema) (int32, error) {
	v, ok := s.Parameters[DecimalScaleParam]
	if !ok {
		return 0, errors.New("decimal schema lacks the \"scale\" parameter")
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("decimal schema has an invalid scale %q: %w", v, err)
	}
	return int32(n), nil
}

// Decimal is an arbitrary-precision decimal number: Unscaled * 10^-Scale.
type Decimal struct {
	// Unscaled is the unscaled integer value; nil means zero.
	Unscaled *big.Int
	// Scale is the number of digits after the decimal point.
	Scale int32
}

// NewDecimal returns the decimal unscaled * 10^-scale.
func NewDecimal(unscaled int64, scale int32) Decimal {
	return Decimal{Unscaled: big.NewInt(unscaled), Scale: scale}
}

// ParseDecimal parses a decimal literal such as "-12.345" keeping its scale.
func ParseDecimal(s string) (Decimal, error) {
	if d, ok := parsePlainDecimal(s); ok {
		return d, nil
	}
	return parseDecimalRat(s)
}

// parsePlainDecimal parses the form databases print, [+-]digits[.digits],
// without big.Rat: the unscaled value is the digits without the point. It
// reports false for any other form (parseDecimalRat decides on those).
func parsePlainDecimal(s string) (Decimal, bool) {
	body := s
	if len(body) > 0 && (body[0] == '-' || body[0] == '+') {
		body = body[1:]
	}
	digits, scale, point := 0, int32(0), false
	var v int64
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			if point {
				scale++
			}
			v = v*10 + int64(c-'0')
		case c == '.' && !point:
			point = true
		default:
			return Decimal{}, false
		}
	}
	if digits == 0 {
		return Decimal{}, false
	}
	var n *big.Int
	if digits <= 18 { // fits an int64
		n = big.NewInt(v)
	} else {
		var ok bool
		if n, ok = new(big.Int).SetString(strings.Replace(body, ".", "", 1), 10); !ok {
			return Decimal{}, false
		}
	}
	if s[0] == '-' {
		n.Neg(n)
	}
	return Decimal{Unscaled: n, Scale: scale}, true
}

func parseDecimalRat(s string) (Decimal, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Decimal{}, fmt.Errorf("invalid decimal %q", s)
	}
	scale := int32(0)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			scale = int32(len(s) - 1 - i)
			break
		}
		if s[i] == 'e' || s[i] == 'E' {
			return Decimal{}, fmt.Errorf("invalid decimal %q: exponents are not supported", s)
		}
	}
	n := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	n.Quo(n, r.Denom())
	return Decimal{Unscaled: n, Scale: scale}, nil
}

// String renders the decimal in plain notation, for example "-12.345".
func (d Decimal) String() string {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	if d.Scale <= 0 {
		return new(big.Int).Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-d.Scale)), nil)).String()
	}
	neg := u.Sign() < 0
	digits := new(big.Int).Abs(u).String()
	for len(digits) <= int(d.Scale) {
		digits = "0" + digits
	}
	cut := len(digits) - int(d.Scale)
	out := digits[:cut] + "." + digits[cut:]
	if neg {
		out = "-" + out
	}
	return out
}

// Equal reports whether two decimals have the same unscaled value and scale.
func (d Decimal) Equal(o Decimal) bool {
	a, b := d.Unscaled, o.Unscaled
	if a == nil {
		a = new(big.Int)
	}
	if b == nil {
		b = new(big.Int)
	}
	return d.Scale == o.Scale && a.Cmp(b) == 0
}

// DecimalToBytes encodes the unscaled value as Kafka does (big-endian
// two's complement, minimal length).
func DecimalToBytes(d Decimal) []byte {
	return AppendDecimalBytes(nil, d)
}

// AppendDecimalBytes appends DecimalToBytes(d) to dst; unscaled values
// that fit in an int64 take no allocation beyond dst's growth.
func AppendDecimalBytes(dst []byte, d Decimal) []byte {
	u := d.Unscaled
	if u == nil {
		return append(dst, 0)
	}
	if u.IsInt64() {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(u.Int64()))
		i := 0
		// Drop leading bytes that only repeat the sign of the next one.
		for i < 7 && ((b[i] == 0 && b[i+1]&0x80 == 0) || (b[i] == 0xff && b[i+1]&0x80 != 0)) {
			i++
		}
		return append(dst, b[i:]...)
	}
	return append(dst, bigDecimalBytes(u)...)
}

func bigDecimalBytes(u *big.Int) []byte {
	switch u.Sign() {
	case 0:
		return []byte{0}
	case 1:
		b := u.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// Negative: two's complement of |u| in the minimal number of bytes.
	n := len(u.Bytes()) + 1
	mod := new(big.Int).Lsh(big.NewInt(1), uint(n*8))
	b := new(big.Int).Add(mod, u).Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	// Trim redundant leading 0xff bytes.
	for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}

// DecimalFromBytes decodes Kafka's Decimal encoding with the given scale.
func DecimalFromBytes(b []byte, scale int32) Decimal {
	if len(b) > 0 && len(b) <= 8 {
		// Sign-extend the big-endian two's complement into an int64.
		v := int64(int8(b[0]))
		for _, c := range b[1:] {
			v = v<<8 | int64(c)
		}
		return Decimal{Unscaled: big.NewInt(v), Scale: scale}
	}
	u := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return Decimal{Unscaled: u, Scale: scale}
}

const msPerDay = 24 * 60 * 60 * 1000

// TimestampToMillis converts a Timestamp value to its encoded int64.
func TimestampToMillis(t time.Time) int64 { return t.UnixMilli() }

// TimestampFromMillis converts an encoded Timestamp to its Go value (UTC).
func TimestampFromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// DateToDays converts a Date value to days since the epoch. The time must
// be midnight UTC, as in Kafka.
func DateToDays(t time.Time) (int32, error) {
	ms := t.UnixMilli()
	if ms%msPerDay != 0 {
		return 0, fmt.Errorf("date %s is not at midnight UTC", t.Format(time.RFC3339Nano))
	}
	return int32(ms / msPerDay), nil
}

// DateFromDays converts an encoded Date to its Go value.
func DateFromDays(days int32) time.Time { return time.UnixMilli(int64(days) * msPerDay).UTC() }

// TimeToMillis converts a Time value to milliseconds since midnight. The
// date part must be 1970-01-01 UTC, as in Kafka.
func TimeToMillis(t time.Time) (int32, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms >= msPerDay {
		return 0, fmt.Errorf("time %s has a date part other than 1970-01-01 UTC", t.Format(time.RFC3339Nano))
	}
	return int32(ms), nil
}

// TimeFromMillis converts an encoded Time to its Go value.
func TimeFromMillis(ms int32) time.Time { return time.UnixMilli(int64(ms)).UTC() }

func (s *Schema) validateLogical(path string, value any) error {
	switch s.Name {
	case TimestampName:
		if _, ok := value.(time.Time); !ok {
			return fmt.Errorf("%sinvalid Go type %T for Timestamp (want time.Time)", at(path), value)
		}
	case DateName:
		t, ok := value.(time.Time)
		if !ok {
			return fmt.Errorf("%sinvalid Go type %T for Date (want time.Time)", at(path), value)
		}
		if _, err := DateToDays(t); err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
	case TimeName:
		t, ok := value.(time.Time)
		if !ok {
			return fmt.Errorf("%sinvalid Go type %T for Time (want time.Time)", at(path), value)
		}
		if _, err := TimeToMillis(t); err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
	case DecimalName:
		d, ok := value.(Decimal)
		if !ok {
			return fmt.Errorf("%sinvalid Go type %T for Decimal (want data.Decimal)", at(path), value)
		}
		scale, err := DecimalScale(s)
		if err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
		if d.Scale != scale {
			return fmt.Errorf("%sdecimal has scale %d, schema wants %d", at(path), d.Scale, scale)
		}
	}
	return nil
}
