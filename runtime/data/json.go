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

// Write appends the JSON of value (following schema; nil = schemaless) to b.
func (enc JSONEncoder) Write(b *bytes.Buffer, schema *Schema, value any) error {
	return enc.writeValue(b, schema, value, "")
}

// Marshal returns the JSON of value following schema (nil = schemaless).
func (enc JSONEncoder) Marshal(schema *Schema, value any) ([]byte, error) {
	var b bytes.Buffer
	if err := enc.writeValue(&b, schema, value, ""); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MarshalJSON renders the struct with [JSONEncoder], so encoding/json and
// logs show structs as plain JSON objects.
func (s *Struct) MarshalJSON() ([]byte, error) {
	return JSONEncoder{}.Marshal(s.schema, s)
}

// MarshalJSON renders the decimal as a JSON number.
func (d Decimal) MarshalJSON() ([]byte, error) { return []byte(d.String()), nil }

// WriteJSONString writes s as a JSON string. Like Jackson it leaves '<', '>'
// and '&' unescaped; invalid UTF-8 becomes U+FFFD.
func WriteJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
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
			b.WriteString(s[start:i])
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
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
	for i+8 <= len(s) && plain8(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
		uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
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

// writeInt writes x in decimal without allocating.
func writeInt(b *bytes.Buffer, x int64) {
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], x, 10))
}

func typeErr(path string, s *Schema, v any) error {
	return fmt.Errorf("%sinvalid Go type %T for schema %s", at(path), v, s)
}

func writeFloat(b *bytes.Buffer, f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("cannot encode %v as JSON", f)
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
	return nil
}

// writeValue writes value following schema; a nil schema writes schemaless.
func (enc JSONEncoder) writeValue(b *bytes.Buffer, s *Schema, v any, path string) error {
	if s == nil {
		return enc.writeSchemaless(b, v, path)
	}
	if v == nil {
		if s.Default != nil {
			return enc.writeValue(b, s, s.Default, path)
		}
		if !s.Optional {
			return fmt.Errorf("%snull value for required %s schema", at(path), s.Type)
		}
		b.WriteString("null")
		return nil
	}
	if s.IsLogical() {
		return enc.writeLogical(b, s, v, path)
	}
	switch s.Type {
	case TypeInt8:
		x, ok := v.(int8)
		if !ok {
			return typeErr(path, s, v)
		}
		writeInt(b, int64(x))
	case TypeInt16:
		x, ok := v.(int16)
		if !ok {
			return typeErr(path, s, v)
		}
		writeInt(b, int64(x))
	case TypeInt32:
		x, ok := v.(int32)
		if !ok {
			return typeErr(path, s, v)
		}
		writeInt(b, int64(x))
	case TypeInt64:
		x, ok := v.(int64)
		if !ok {
			return typeErr(path, s, v)
		}
		writeInt(b, x)
	case TypeFloat32:
		x, ok := v.(float32)
		if !ok {
			return typeErr(path, s, v)
		}
		return writeFloat(b, float64(x), 32)
	case TypeFloat64:
		x, ok := v.(float64)
		if !ok {
			return typeErr(path, s, v)
		}
		return writeFloat(b, x, 64)
	case TypeBoolean:
		x, ok := v.(bool)
		if !ok {
			return typeErr(path, s, v)
		}
		b.WriteString(strconv.FormatBool(x))
	case TypeString:
		x, ok := v.(string)
		if !ok {
			return typeErr(path, s, v)
		}
		WriteJSONString(b, x)
	case TypeBytes:
		x, ok := v.([]byte)
		if !ok {
			return typeErr(path, s, v)
		}
		writeBase64(b, x)
	case TypeArray:
		x, ok := v.([]any)
		if !ok {
			return typeErr(path, s, v)
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := enc.writeValue(b, s.Elem, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case TypeMap:
		entries, err := mapEntries(v)
		if err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
		if s.Key != nil && s.Key.Type == TypeString {
			b.WriteByte('{')
			for i, e := range entries {
				k, ok := e.k.(string)
				if !ok {
					return fmt.Errorf("%smap key %v is %T, schema wants string", at(path), e.k, e.k)
				}
				if i > 0 {
					b.WriteByte(',')
				}
				WriteJSONString(b, k)
				b.WriteByte(':')
				if err := enc.writeValue(b, s.Elem, e.v, path+"["+k+"]"); err != nil {
					return err
				}
			}
			b.WriteByte('}')
			return nil
		}
		b.WriteByte('[')
		for i, e := range entries {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			if err := enc.writeValue(b, s.Key, e.k, path+"<key>"); err != nil {
				return err
			}
			b.WriteByte(',')
			if err := enc.writeValue(b, s.Elem, e.v, path+"["+fmt.Sprint(e.k)+"]"); err != nil {
				return err
			}
			b.WriteByte(']')
		}
		b.WriteByte(']')
	case TypeStruct:
		return enc.writeStruct(b, s, v, path, nil)
	default:
		return fmt.Errorf("%sunknown schema type %q", at(path), s.Type)
	}
	return nil
}

// JSONFieldPrefixes returns what [JSONEncoder.WriteStruct] writes before
// each field of a struct schema: `{"name":` for the first field and
// `,"name":` for the others.
func JSONFieldPrefixes(s *Schema) []string {
	out := make([]string, len(s.Fields))
	var b bytes.Buffer
	for i, f := range s.Fields {
		b.Reset()
		if i == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		WriteJSONString(&b, f.Name)
		b.WriteByte(':')
		out[i] = b.String()
	}
	return out
}

// WriteStruct is Write for a struct schema with its field prefixes
// (JSONFieldPrefixes(schema), computed once per schema by the caller).
// Other schemas, and a nil value, are written as Write writes them.
func (enc JSONEncoder) WriteStruct(b *bytes.Buffer, schema *Schema, value any, prefixes []string) error {
	if schema == nil || schema.Type != TypeStruct || value == nil || len(prefixes) != len(schema.Fields) {
		return enc.writeValue(b, schema, value, "")
	}
	return enc.writeStruct(b, schema, value, "", prefixes)
}

// writeStruct writes a struct value; prefixes, when not nil, are the
// fields' JSONFieldPrefixes.
func (enc JSONEncoder) writeStruct(b *bytes.Buffer, s *Schema, v any, path string, prefixes []string) error {
	st, ok := v.(*Struct)
	if !ok || st == nil {
		return typeErr(path, s, v)
	}
	if st.Schema() != s && !st.Schema().Equal(s) {
		return fmt.Errorf("%sstruct schema %s does not match %s", at(path), st.Schema(), s)
	}
	if len(s.Fields) == 0 {
		b.WriteString("{}")
		return nil
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		if prefixes != nil {
			b.WriteString(prefixes[i])
		} else {
			if i == 0 {
				b.WriteByte('{')
			} else {
				b.WriteByte(',')
			}
			WriteJSONString(b, f.Name)
			b.WriteByte(':')
		}
		if err := enc.writeValue(b, f.Schema, st.GetIndex(f.Index), join(path, f.Name)); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func (enc JSONEncoder) writeLogical(b *bytes.Buffer, s *Schema, v any, path string) error {
	switch s.Name {
	case DecimalName:
		d, ok := v.(Decimal)
		if !ok {
			return typeErr(path, s, v)
		}
		if enc.NumericDecimal {
			b.WriteString(d.String())
			return nil
		}
		var raw [16]byte
		writeBase64(b, AppendDecimalBytes(raw[:0], d))
		return nil
	}
	t, ok := v.(time.Time)
	if !ok {
		return typeErr(path, s, v)
	}
	switch s.Name {
	case TimestampName:
		writeInt(b, TimestampToMillis(t))
	case DateName:
		d, err := DateToDays(t)
		if err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
		writeInt(b, int64(d))
	case TimeName:
		ms, err := TimeToMillis(t)
		if err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
		writeInt(b, int64(ms))
	}
	return nil
}

// writeBase64 writes raw as a JSON string of its standard base64 (whose
// characters need no escaping), without allocating for short values.
func writeBase64(b *bytes.Buffer, raw []byte) {
	var enc [64]byte
	b.WriteByte('"')
	if n := base64.StdEncoding.EncodedLen(len(raw)); n <= len(enc) {
		base64.StdEncoding.Encode(enc[:n], raw)
		b.Write(enc[:n])
	} else {
		b.WriteString(base64.StdEncoding.EncodeToString(raw))
	}
	b.WriteByte('"')
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

// writeSchemaless writes a Go value without a schema.
func (enc JSONEncoder) writeSchemaless(b *bytes.Buffer, v any, path string) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		WriteJSONString(b, x)
	case []byte:
		WriteJSONString(b, base64.StdEncoding.EncodeToString(x))
	case int:
		writeInt(b, int64(x))
	case int8:
		writeInt(b, int64(x))
	case int16:
		writeInt(b, int64(x))
	case int32:
		writeInt(b, int64(x))
	case int64:
		writeInt(b, x)
	case uint:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint8:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint16:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint32:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case float32:
		return writeFloat(b, float64(x), 32)
	case float64:
		return writeFloat(b, x, 64)
	case json.Number:
		b.WriteString(x.String())
	case time.Time:
		b.WriteString(strconv.FormatInt(TimestampToMillis(x), 10))
	case Decimal:
		b.WriteString(x.String())
	case *big.Int:
		b.WriteString(x.String())
	case *Struct:
		if x == nil {
			b.WriteString("null")
			return nil
		}
		return enc.writeValue(b, x.Schema(), x, path)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := enc.writeSchemaless(b, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			WriteJSONString(b, e)
		}
		b.WriteByte(']')
	default:
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Map {
			return fmt.Errorf("%sschemaless JSON cannot encode Go type %T", at(path), v)
		}
		entries, err := mapEntries(v)
		if err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
		allStrings := true
		for _, e := range entries {
			if _, ok := e.k.(string); !ok {
				allStrings = false
				break
			}
		}
		if allStrings {
			b.WriteByte('{')
			for i, e := range entries {
				if i > 0 {
					b.WriteByte(',')
				}
				WriteJSONString(b, e.k.(string))
				b.WriteByte(':')
				if err := enc.writeSchemaless(b, e.v, path+"["+e.k.(string)+"]"); err != nil {
					return err
				}
			}
			b.WriteByte('}')
			return nil
		}
		b.WriteByte('[')
		for i, e := range entries {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			if err := enc.writeSchemaless(b, e.k, path+"<key>"); err != nil {
				return err
			}
			b.WriteByte(',')
			if err := enc.writeSchemaless(b, e.v, path+"["+fmt.Sprint(e.k)+"]"); err != nil {
				return err
			}
			b.WriteByte(']')
		}
		b.WriteByte(']')
	}
	return nil
}
