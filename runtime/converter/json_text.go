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

package converter

// The JSON pass-through: a sink that writes values as JSON (the S3 sink's
// format.class=json, Elasticsearch documents) would have JsonConverter
// parse each value into maps and structs, and then render them again. The
// text path goes from the bytes in Kafka to the JSON the sink's encoder
// would render, in one pass that builds no value: what is already in the
// rendered form (compact, object keys sorted, numbers and strings written
// as the encoder writes them) is copied, and the rest is rewritten token
// by token (object members sorted, numbers and escaped strings rendered
// again with the same functions the general path uses). Like the fast
// envelope reader, it gives up on anything it is not sure about (invalid
// JSON, duplicate keys, escaped keys, a null value, deep nesting, maps,
// out-of-order struct fields, ...): the caller then converts the bytes with
// ToConnectData, which returns the value or its precise error. So both
// paths give the same bytes by construction; tests check it on generated
// input.

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strconv"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// JSONTexter is implemented by converters that can turn the bytes they
// read straight into the JSON text that a [data.JSONEncoder] renders of the
// value ToConnectData returns, without building that value.
type JSONTexter interface {
	// AppendJSONText appends to dst the JSON that enc renders of the value
	// ToConnectData(topic, b) returns, and returns the value's schema. ok
	// false means it cannot tell cheaply (a null value among others): the
	// caller then converts b with ToConnectData, which also reports any
	// error; dst's content beyond its length is undefined.
	AppendJSONText(dst []byte, enc data.JSONEncoder, topic string, b []byte) (out []byte, schema *data.Schema, ok bool)
}

var (
	_ JSONTexter = (*JSON)(nil)
	_ JSONTexter = (*JSONSchema)(nil)
)

// maxTextDepth bounds the nesting the text path follows; deeper values go
// to the general path (encoding/json allows 10000 levels).
const maxTextDepth = 256

// AppendJSONText implements [JSONTexter].
func (c *JSON) AppendJSONText(dst []byte, enc data.JSONEncoder, _ string, b []byte) ([]byte, *data.Schema, bool) {
	p := fastParser{b: b, replaceNull: c.replaceNullWithDefault}
	if !c.schemasEnable {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] == 'n' {
			return dst, nil, false // null: a tombstone
		}
		out, ok := p.anyText(dst, 0)
		p.ws()
		return out, nil, ok && p.i == len(p.b)
	}
	schema, ok := c.envelopeSchema(&p)
	if !ok {
		return dst, nil, false
	}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] == 'n' {
		return dst, nil, false // a null payload: a tombstone or the schema's default
	}
	p.enc = enc
	out, ok := p.text(dst, schema, 0)
	if !ok || !p.envelopeEnd() {
		return dst, nil, false
	}
	return out, schema, true
}

// anyText appends a schemaless value as decodeJSON, schemaless and the
// encoder make it: objects with their keys sorted, integers that fit
// int64 as integers, other numbers as float64.
func (p *fastParser) anyText(dst []byte, depth int) ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) || depth > maxTextDepth {
		return dst, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.objectText(dst, depth)
	case c == '[':
		p.i++
		dst = append(dst, '[')
		p.ws()
		if p.lit("]") {
			return append(dst, ']'), true
		}
		for {
			var ok bool
			if dst, ok = p.anyText(dst, depth+1); !ok {
				return dst, false
			}
			p.ws()
			if p.lit("]") {
				return append(dst, ']'), true
			}
			if !p.lit(",") {
				return dst, false
			}
			dst = append(dst, ',')
		}
	case c == '"':
		return p.strText(dst)
	case c == 't':
		return append(dst, "true"...), p.lit("true")
	case c == 'f':
		return append(dst, "false"...), p.lit("false")
	case c == 'n':
		return append(dst, "null"...), p.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.numberText(dst)
	}
	return dst, false
}

// member is one member of an object written to dst: its key as in the
// input (no escapes: raw bytes order as the decoded key) and its span in
// dst, `"key":value`.
type member struct {
	key      []byte
	from, to int
}

// objectText appends an object with its members in key order, as a Go
// map renders; duplicate or escaped keys go to the general path.
func (p *fastParser) objectText(dst []byte, depth int) ([]byte, bool) {
	p.i++ // '{'
	open := len(dst)
	dst = append(dst, '{')
	p.ws()
	if p.lit("}") {
		return append(dst, '}'), true
	}
	var local [16]member
	ms := local[:0]
	sorted := true
	for {
		p.ws()
		key, ok := p.rawString()
		if !ok {
			return dst, false
		}
		if n := len(ms); n > 0 {
			switch bytes.Compare(ms[n-1].key, key) {
			case 0:
				return dst, false
			case 1:
				sorted = false
			}
			dst = append(dst, ',')
		}
		p.ws()
		if !p.lit(":") {
			return dst, false
		}
		m := member{key: key, from: len(dst)}
		dst = append(append(append(dst, '"'), key...), '"', ':')
		if dst, ok = p.anyText(dst, depth+1); !ok {
			return dst, false
		}
		m.to = len(dst)
		ms = append(ms, m)
		p.ws()
		if p.lit("}") {
			break
		}
		if !p.lit(",") {
			return dst, false
		}
	}
	if !sorted {
		slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		for i := 1; i < len(ms); i++ {
			if bytes.Equal(ms[i-1].key, ms[i].key) {
				return dst, false // a Go map keeps the last: the general path
			}
		}
		// Copy the members past the end, then back in key order.
		end := len(dst)
		dst = append(dst, dst[open+1:end]...)
		shift := end - open - 1
		w := open + 1
		for i, m := range ms {
			if i > 0 {
				dst[w] = ','
				w++
			}
			w += copy(dst[w:], dst[m.from+shift:m.to+shift])
		}
		dst = dst[:end]
	}
	return append(dst, '}'), true
}

// strText appends a string as AppendJSONString writes it: one without
// escapes, control characters or invalid UTF-8 is written so already;
// another is decoded as encoding/json decodes it and written again.
func (p *fastParser) strText(dst []byte) ([]byte, bool) {
	start := p.i
	if raw, ok := p.rawString(); ok {
		return append(append(append(dst, '"'), raw...), '"'), true
	}
	p.i = start
	s, ok := p.str()
	if !ok {
		return dst, false
	}
	return data.AppendJSONString(dst, s), true
}

// numberText appends a schemaless number as schemaless() reads it (an
// int64 when strconv.ParseInt takes it, else a float64) and the encoder
// writes it.
func (p *fastParser) numberText(dst []byte) ([]byte, bool) {
	raw, ok := p.numberBytes()
	if !ok {
		return dst, false
	}
	if integer(raw) {
		if len(raw) == 2 && raw[0] == '-' && raw[1] == '0' {
			return append(dst, '0'), true
		}
		return append(dst, raw...), true
	}
	if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return strconv.AppendInt(dst, i, 10), true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return dst, false
	}
	out, err := data.AppendJSONFloat(dst, f, 64)
	return out, err == nil
}

// integer reports whether a JSON number is an integer of at most 18
// digits, which int64 holds and AppendInt writes back the same (but for
// "-0").
func integer(raw []byte) bool {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// text appends a value of schema s as value() reads it and p.enc writes
// it.
func (p *fastParser) text(dst []byte, s *data.Schema, depth int) ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) || depth > maxTextDepth {
		return dst, false
	}
	if p.b[p.i] == 'n' || s.IsLogical() {
		// A null (the default or nothing) or a logical value: read as
		// value() reads it, written by the encoder.
		v, ok := p.value(s)
		if !ok {
			return dst, false
		}
		out, err := p.enc.Append(dst, s, v)
		return out, err == nil
	}
	switch s.Type {
	case data.TypeInt8, data.TypeInt16, data.TypeInt32, data.TypeInt64:
		i, ok := p.int(intBits[s.Type])
		return strconv.AppendInt(dst, i, 10), ok
	case data.TypeFloat32, data.TypeFloat64:
		raw, ok := p.numberBytes()
		if !ok {
			return dst, false
		}
		bits := 64
		if s.Type == data.TypeFloat32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(string(raw), bits)
		if err != nil {
			return dst, false
		}
		out, err := data.AppendJSONFloat(dst, f, bits)
		return out, err == nil
	case data.TypeBoolean:
		if p.lit("true") {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), p.lit("false")
	case data.TypeString:
		return p.strText(dst)
	case data.TypeBytes:
		str, ok := p.str()
		if !ok {
			return dst, false
		}
		raw, err := base64.StdEncoding.DecodeString(str)
		if err != nil {
			return dst, false
		}
		dst = append(dst, '"')
		return append(base64.StdEncoding.AppendEncode(dst, raw), '"'), true
	case data.TypeArray:
		if !p.lit("[") {
			return dst, false
		}
		dst = append(dst, '[')
		p.ws()
		if p.lit("]") {
			return append(dst, ']'), true
		}
		for {
			var ok bool
			if dst, ok = p.text(dst, s.Elem, depth+1); !ok {
				return dst, false
			}
			p.ws()
			if p.lit("]") {
				return append(dst, ']'), true
			}
			if !p.lit(",") {
				return dst, false
			}
			dst = append(dst, ',')
		}
	case data.TypeStruct:
		return p.structText(dst, s, depth)
	}
	return dst, false // maps: the general path
}

var intBits = map[data.Type]int{data.TypeInt8: 8, data.TypeInt16: 16, data.TypeInt32: 32, data.TypeInt64: 64}

// structText appends a struct as the encoder writes it: every field in
// the schema's order, a missing one as a null (its default or null). It
// takes the fields in the schema's order only, as writers keep it; others
// go to the general path.
func (p *fastParser) structText(dst []byte, s *data.Schema, depth int) ([]byte, bool) {
	if len(s.Fields) > 64 || !p.lit("{") {
		return dst, false
	}
	if len(s.Fields) == 0 {
		p.ws()
		return append(dst, "{}"...), p.lit("}")
	}
	next := 0 // the field written next
	// field writes field j's name, after a comma unless it is the first.
	field := func(j int) {
		if j == 0 {
			dst = append(dst, '{')
		} else {
			dst = append(dst, ',')
		}
		dst = append(data.AppendJSONString(dst, s.Fields[j].Name), ':')
	}
	// missing writes the fields before j that the input left out.
	missing := func(j int) bool {
		for ; next < j; next++ {
			v, ok := p.null(s.Fields[next].Schema)
			if !ok {
				return false
			}
			field(next)
			var err error
			if dst, err = p.enc.Append(dst, s.Fields[next].Schema, v); err != nil {
				return false
			}
		}
		return true
	}
	p.ws()
	if !p.lit("}") {
		for {
			p.ws()
			name, ok := p.rawString()
			if !ok {
				return dst, false
			}
			idx := -1
			for j := next; j < len(s.Fields); j++ {
				if s.Fields[j].Name == string(name) {
					idx = j
					break
				}
			}
			if idx < 0 || !missing(idx) {
				return dst, false
			}
			p.ws()
			if !p.lit(":") {
				return dst, false
			}
			field(idx)
			if dst, ok = p.text(dst, s.Fields[idx].Schema, depth+1); !ok {
				return dst, false
			}
			next = idx + 1
			p.ws()
			if p.lit("}") {
				break
			}
			if !p.lit(",") {
				return dst, false
			}
		}
	}
	if !missing(len(s.Fields)) {
		return dst, false
	}
	return append(dst, '}'), true
}
