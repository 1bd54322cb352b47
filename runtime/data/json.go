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
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"
)

// JSONEncoder renders data values as JSON the way Kafka's JsonConverter
// writes payloads: structs as objects in field order, bytes as base64,
// maps with string keys as objects and others as [key, value] pairs,
// Timestamp/Date/Time as numbers (ms, days, ms), Decimal as base64 of the
// unscaled value (or a JSON number with NumericDecimal). Without a schema
// the value's Go type decides (time.Time as epoch ms, Decimal as a number).
type JSONEncoder struct {
	// NumericDecimal writes decimals as JSON numbers instead of base64.
	NumericDecimal bool
}

// JSONText is a value held as JSON text instead of Go values: the sink
// runner hands a record's value in this form, made straight from the
// bytes read from Kafka, to a sink task that only renders values as JSON
// (see plugin.SinkJSONValues), so that the value is never built.
// JSONEncoder writes Text, whatever the schema; the value converter that
// read Raw writes Raw back (for a dead letter queue, as Kafka Connect
// takes the original record there).
type JSONText struct {
	// Text is exactly the JSON that the task's JSONEncoder renders of the
	// value the converter would have returned.
	Text []byte
	// Raw is the value's bytes in Kafka.
	Raw []byte
}

// Write appends the JSON of value (following schema; nil = schemaless) to b.
func (enc JSONEncoder) Write(b *bytes.Buffer, schema *Schema, value any) error {
	out, err := enc.Append(b.AvailableBuffer(), schema, value)
	b.Write(out)
	return err
}

// Append appends the JSON of value (following schema; nil = schemaless) to
// dst and returns the extended slice. On an error, what it appended so far
// is undefined.
func (enc JSONEncoder) Append(dst []byte, schema *Schema, value any) ([]byte, error) {
	return enc.appendValue(dst, schema, value, "")
}

// Marshal returns the JSON of value following schema (nil = schemaless).
func (enc JSONEncoder) Marshal(schema *Schema, value any) ([]byte, error) {
	b, err := enc.appendValue(nil, schema, value, "")
	if err != nil {
		return nil, err
	}
	return b, nil
}

// MarshalJSON renders the struct with [JSONEncoder], so encoding/json and
// logs show structs as plain JSON objects.
func (s *Struct) MarshalJSON() ([]byte, error) {
	return JSONEncoder{}.Marshal(s.schema, s)
}

// MarshalJSON renders the decimal as a JSON number.
func (d Decimal) MarshalJSON() ([]byte, error) { return []byte(d.String()), nil }

// WriteJSONString writes s as a JSON string (see [AppendJSONString]).
func WriteJSONString(b *bytes.Buffer, s string) {
	b.Write(AppendJSONString(b.AvailableBuffer(), s))
}

// AppendJSONString appends s as a JSON string to b. Like Jackson it leaves
// '<', '>' and '&' unescaped; invalid UTF-8 becomes U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip plain ASCII eight bytes at a time.
		i += PlainJSONPrefix(s[i:])
		if i >= len(s) {
			break
		}
		c := s[i]
		if jsonPlain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, `\"`...)
			case '\\':
				b = append(b, `\\`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, `\u00`...)
				b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// jsonPlain marks the ASCII bytes a JSON string holds as they are.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// PlainJSONPrefix returns the length of the longest prefix of s made of
// bytes a JSON string holds as they are and that need no UTF-8 check:
// ASCII from 0x20 up, except '"' and '\\'. Scanners of JSON strings use
// it to skip the common case eight bytes at a time.
func PlainJSONPrefix[T ~string | ~[]byte](s T) int {
	i := 0
	for i+8 <= len(s) {
		w := s[i : i+8] // one bounds check for the eight loads (one load)
		if !plain8(uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56) {
			break
		}
		i += 8
	}
	for i < len(s) && jsonPlain[s[i]] {
		i++
	}
	return i
}

// plain8 reports whether all eight bytes of x are plain ASCII (jsonPlain):
// none has the high bit set, none is below 0x20, none is '"' or '\\'.
func plain8(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	below := (x - lo*0x20) & ^x & hi
	q := x ^ (lo * '"')
	bs := x ^ (lo * '\\')
	return (x&hi)|below|((q-lo) & ^q & hi)|((bs-lo) & ^bs & hi) == 0
}

func typeErr(path string, s *Schema, v any) error {
	return fmt.Errorf("%sinvalid Go type %T for schema %s", at(path), v, s)
}

// AppendJSONFloat appends a float of the given bits (32 or 64) as
// JSONEncoder writes it: the shortest decimal that reads back the same;
// NaN and infinities are an error.
func AppendJSONFloat(b []byte, f float64, bits int) ([]byte, error) { return appendFloat(b, f, bits) }

func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("cannot encode %v as JSON", f)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits), nil
}

// appendValue appends value following schema; a nil schema writes schemaless.
func (enc JSONEncoder) appendValue(b []byte, s *Schema, v any, path string) ([]byte, error) {
	if t, ok := v.(JSONText); ok {
		return append(b, t.Text...), nil
	}
	if s == nil {
		return enc.appendSchemaless(b, v, path)
	}
	if v == nil {
		if s.Default != nil {
			return enc.appendValue(b, s, s.Default, path)
		}
		if !s.Optional {
			return b, fmt.Errorf("%snull value for required %s schema", at(path), s.Type)
		}
		return append(b, "null"...), nil
	}
	if s.IsLogical() {
		return enc.appendLogical(b, s, v, path)
	}
	switch s.Type {
	case TypeInt8:
		x, ok := v.(int8)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case TypeInt16:
		x, ok := v.(int16)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case TypeInt32:
		x, ok := v.(int32)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case TypeInt64:
		x, ok := v.(int64)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return strconv.AppendInt(b, x, 10), nil
	case TypeFloat32:
		x, ok := v.(float32)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return appendFloat(b, float64(x), 32)
	case TypeFloat64:
		x, ok := v.(float64)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return appendFloat(b, x, 64)
	case TypeBoolean:
		x, ok := v.(bool)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return strconv.AppendBool(b, x), nil
	case TypeString:
		x, ok := v.(string)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return AppendJSONString(b, x), nil
	case TypeBytes:
		x, ok := v.([]byte)
		if !ok {
			return b, typeErr(path, s, v)
		}
		return appendBase64(b, x), nil
	case TypeArray:
		x, ok := v.([]any)
		if !ok {
			return b, typeErr(path, s, v)
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = enc.appendValue(b, s.Elem, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case TypeMap:
		entries, err := mapEntries(v)
		if err != nil {
			return b, fmt.Errorf("%s%w", at(path), err)
		}
		return appendEntries(b, entries, path, s.Key != nil && s.Key.Type == TypeString,
			func(b []byte, k any, path string) ([]byte, error) { return enc.appendValue(b, s.Key, k, path) },
			func(b []byte, v any, path string) ([]byte, error) { return enc.appendValue(b, s.Elem, v, path) })
	case TypeStruct:
		return enc.appendStruct(b, s, v, path, nil)
	}
	return b, fmt.Errorf("%sunknown schema type %q", at(path), s.Type)
}

// JSONFieldPrefixes returns what [JSONEncoder.AppendStruct] writes before
// each field of a struct schema: `{"name":` for the first field and
// `,"name":` for the others.
func JSONFieldPrefixes(s *Schema) []string {
	out := make([]string, len(s.Fields))
	var b []byte
	for i, f := range s.Fields {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		b = append(AppendJSONString(append(b[:0], sep), f.Name), ':')
		out[i] = string(b)
	}
	return out
}

// WriteStruct is [JSONEncoder.AppendStruct] into b.
func (enc JSONEncoder) WriteStruct(b *bytes.Buffer, schema *Schema, value any, prefixes []string) error {
	out, err := enc.AppendStruct(b.AvailableBuffer(), schema, value, prefixes)
	b.Write(out)
	return err
}

// AppendStruct is Append for a struct schema with its field prefixes
// (JSONFieldPrefixes(schema), computed once per schema by the caller).
// Other schemas, and a nil value, are written as Append writes them.
func (enc JSONEncoder) AppendStruct(dst []byte, schema *Schema, value any, prefixes []string) ([]byte, error) {
	if _, text := value.(JSONText); text || schema == nil || schema.Type != TypeStruct || value == nil || len(prefixes) != len(schema.Fields) {
		return enc.appendValue(dst, schema, value, "")
	}
	return enc.appendStruct(dst, schema, value, "", prefixes)
}

// appendStruct appends a struct value; prefixes, when not nil, are the
// fields' JSONFieldPrefixes.
func (enc JSONEncoder) appendStruct(b []byte, s *Schema, v any, path string, prefixes []string) ([]byte, error) {
	st, ok := v.(*Struct)
	if !ok || st == nil {
		return b, typeErr(path, s, v)
	}
	if st.Schema() != s && !st.Schema().Equal(s) {
		return b, fmt.Errorf("%sstruct schema %s does not match %s", at(path), st.Schema(), s)
	}
	if len(s.Fields) == 0 {
		return append(b, "{}"...), nil
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		if prefixes != nil {
			b = append(b, prefixes[i]...)
		} else {
			if i == 0 {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			b = AppendJSONString(b, f.Name)
			b = append(b, ':')
		}
		var err error
		if b, err = enc.appendValue(b, f.Schema, st.GetIndex(f.Index), join(path, f.Name)); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func (enc JSONEncoder) appendLogical(b []byte, s *Schema, v any, path string) ([]byte, error) {
	switch s.Name {
	case DecimalName:
		d, ok := v.(Decimal)
		if !ok {
			return b, typeErr(path, s, v)
		}
		if enc.NumericDecimal {
			return append(b, d.String()...), nil
		}
		var raw [16]byte
		return appendBase64(b, AppendDecimalBytes(raw[:0], d)), nil
	}
	t, ok := v.(time.Time)
	if !ok {
		return b, typeErr(path, s, v)
	}
	switch s.Name {
	case TimestampName:
		b = strconv.AppendInt(b, TimestampToMillis(t), 10)
	case DateName:
		d, err := DateToDays(t)
		if err != nil {
			return b, fmt.Errorf("%s%w", at(path), err)
		}
		b = strconv.AppendInt(b, int64(d), 10)
	case TimeName:
		ms, err := TimeToMillis(t)
		if err != nil {
			return b, fmt.Errorf("%s%w", at(path), err)
		}
		b = strconv.AppendInt(b, int64(ms), 10)
	}
	return b, nil
}

// appendBase64 appends raw as a JSON string of its standard base64 (whose
// characters need no escaping).
func appendBase64(b, raw []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}

// appendEntries appends a map's entries: as a JSON object when object (the
// keys must be strings), else as an array of [key, value] pairs; key and
// val append one key or value at the given path.
func appendEntries(b []byte, entries []entry, path string, object bool, key, val func([]byte, any, string) ([]byte, error)) ([]byte, error) {
	var err error
	if object {
		b = append(b, '{')
		for i, e := range entries {
			k, ok := e.k.(string)
			if !ok {
				return b, fmt.Errorf("%smap key %v is %T, schema wants string", at(path), e.k, e.k)
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, k)
			b = append(b, ':')
			if b, err = val(b, e.v, path+"["+k+"]"); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	b = append(b, '[')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		if b, err = key(b, e.k, path+"<key>"); err != nil {
			return b, err
		}
		b = append(b, ',')
		if b, err = val(b, e.v, path+"["+fmt.Sprint(e.k)+"]"); err != nil {
			return b, err
		}
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

type entry struct{ k, v any }

// mapEntries returns a map's entries sorted by key, for stable output.
func mapEntries(v any) ([]entry, error) {
	var out []entry
	switch m := v.(type) {
	case map[string]any:
		for k, x := range m {
			out = append(out, entry{k, x})
		}
	case map[any]any:
		for k, x := range m {
			out = append(out, entry{k, x})
		}
	default:
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Map {
			return nil, fmt.Errorf("invalid Go type %T for a map", v)
		}
		it := rv.MapRange()
		for it.Next() {
			out = append(out, entry{it.Key().Interface(), it.Value().Interface()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessKey(out[i].k, out[j].k) })
	return out, nil
}

func lessKey(a, b any) bool {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x < y
		}
	case int64:
		if y, ok := b.(int64); ok {
			return x < y
		}
	case int32:
		if y, ok := b.(int32); ok {
			return x < y
		}
	}
	return fmt.Sprint(a) < fmt.Sprint(b)
}

// appendSchemaless appends a Go value without a schema.
func (enc JSONEncoder) appendSchemaless(b []byte, v any, path string) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return AppendJSONString(b, x), nil
	case []byte:
		return appendBase64(b, x), nil
	case JSONText:
		return append(b, x.Text...), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float32:
		return appendFloat(b, float64(x), 32)
	case float64:
		return appendFloat(b, x, 64)
	case json.Number:
		return append(b, x.String()...), nil
	case time.Time:
		return strconv.AppendInt(b, TimestampToMillis(x), 10), nil
	case Decimal:
		return append(b, x.String()...), nil
	case *big.Int:
		return x.Append(b, 10), nil
	case *Struct:
		if x == nil {
			return append(b, "null"...), nil
		}
		return enc.appendValue(b, x.Schema(), x, path)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = enc.appendSchemaless(b, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, e)
		}
		return append(b, ']'), nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return b, fmt.Errorf("%sschemaless JSON cannot encode Go type %T", at(path), v)
	}
	entries, err := mapEntries(v)
	if err != nil {
		return b, fmt.Errorf("%s%w", at(path), err)
	}
	allStrings := true
	for _, e := range entries {
		if _, ok := e.k.(string); !ok {
			allStrings = false
			break
		}
	}
	return appendEntries(b, entries, path, allStrings, enc.appendSchemaless, enc.appendSchemaless)
}
