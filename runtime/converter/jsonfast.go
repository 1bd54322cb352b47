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

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// The fast path of ToConnectData for the schema envelope. Records of a
// topic carry the same schema text again and again: the fast path finds
// the parsed schema by the raw bytes of the envelope's "schema" (no copy)
// and decodes the payload straight into Go values by the schema, without
// building a generic JSON tree first. It only takes input it is sure
// about (the keys "schema" then "payload", a schema parsed before, no
// duplicate or unknown keys, valid UTF-8, no string escapes it would
// have to interpret beyond encoding/json's own) and gives up on anything
// else, including every error: the general path then decodes the same
// bytes and returns its value or its precise error. So both paths agree
// by construction; the fast one is only faster.

// lastSchema is the schema text seen last with its parsed schema.
type lastSchema struct {
	text   string
	schema *data.Schema
}

// fastEnvelope decodes an envelope when it can; ok false means "use the
// general path".
func (c *JSON) fastEnvelope(b []byte) (*data.Schema, any, bool) {
	p := fastParser{b: b, replaceNull: c.replaceNullWithDefault}
	schema, ok := c.envelopeSchema(&p)
	if !ok {
		return nil, nil, false
	}
	v, ok := p.value(schema)
	if !ok || !p.envelopeEnd() {
		return nil, nil, false
	}
	return schema, v, true
}

// envelopeSchema consumes an envelope up to its payload (`{"schema":<a
// schema parsed before>,"payload":`) and returns the schema.
func (c *JSON) envelopeSchema(p *fastParser) (*data.Schema, bool) {
	b := p.b
	p.ws()
	if !p.lit("{") || !p.key("schema") {
		return nil, false
	}
	p.ws()
	var schema *data.Schema
	if l := c.last.Load(); l != nil && len(b)-p.i >= len(l.text) && string(b[p.i:p.i+len(l.text)]) == l.text {
		// The usual case, one compare: the same schema as the last record.
		// A JSON object ends where its text says, so a value that starts
		// with a complete schema text is that schema.
		schema = l.schema
		p.i += len(l.text)
	} else {
		start := p.i
		if !p.skip() {
			return nil, false
		}
		var ok bool
		if schema, ok = c.cachedSchema(b[start:p.i]); !ok {
			return nil, false
		}
	}
	p.ws()
	if !p.lit(",") || !p.key("payload") {
		return nil, false
	}
	return schema, true
}

// envelopeEnd consumes the envelope's closing brace, which must end the
// input.
func (p *fastParser) envelopeEnd() bool {
	p.ws()
	if !p.lit("}") {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

// cachedSchema finds a schema parsed before from exactly these bytes; a
// JSON null (schemaless payload) is left to the general path.
func (c *JSON) cachedSchema(text []byte) (*data.Schema, bool) {
	if l := c.last.Load(); l != nil && l.text == string(text) {
		return l.schema, true
	}
	c.mu.Lock()
	s, ok := c.schemas[string(text)]
	c.mu.Unlock()
	if !ok || s == nil {
		return nil, false
	}
	c.last.Store(&lastSchema{text: string(text), schema: s})
	return s, true
}

type fastParser struct {
	b           []byte
	i           int
	replaceNull bool
	// enc is the text path's (json_text.go): the sink's encoder.
	enc data.JSONEncoder
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// lit consumes the literal s.
func (p *fastParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// key consumes `"name"` and the colon, with the whitespace around them.
func (p *fastParser) key(name string) bool {
	p.ws()
	raw, ok := p.rawString()
	if !ok || string(raw) != name {
		return false
	}
	p.ws()
	return p.lit(":")
}

// rawString consumes a string without escapes and returns its bytes
// between the quotes; false on escapes, control characters or invalid
// UTF-8 (which encoding/json would replace).
func (p *fastParser) rawString() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for j := start + data.PlainJSONPrefix(p.b[start:]); j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// str consumes a string; one with escapes is handed to encoding/json.
func (p *fastParser) str() (string, bool) {
	start := p.i
	if raw, ok := p.rawString(); ok {
		return string(raw), true
	}
	p.i = start
	if !p.skipString() {
		return "", false
	}
	var s string
	if json.Unmarshal(p.b[start:p.i], &s) != nil {
		return "", false
	}
	return s, true
}

// skipString moves past a string, escapes included (not validated).
func (p *fastParser) skipString() bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch p.b[j] {
		case '\\':
			j++
		case '"':
			p.i = j + 1
			return true
		}
	}
	return false
}

// skip moves past one value by its brackets and strings without
// validating it: only used for the schema, whose bytes must then equal a
// schema text that the general path parsed (and so validated) before.
func (p *fastParser) skip() bool {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	depth := 0
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '"':
			if !p.skipString() {
				return false
			}
			if depth == 0 {
				return true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return false
			}
			if depth == 0 {
				p.i++
				return true
			}
		case ',', ':':
			if depth == 0 {
				return false
			}
		}
		p.i++
	}
	return false
}

// number consumes a JSON number and returns its text.
func (p *fastParser) number() (string, bool) {
	raw, ok := p.numberBytes()
	return string(raw), ok
}

func (p *fastParser) numberBytes() ([]byte, bool) {
	b, start := p.b, p.i
	j := start
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case !digits():
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return nil, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return nil, false
		}
	}
	p.i = j
	return b[start:j], true
}

// int consumes an integer of the given bits as strconv.ParseInt reads
// it: plain digits up to 18 of them here, anything else by ParseInt.
func (p *fastParser) int(bits int) (int64, bool) {
	raw, ok := p.numberBytes()
	if !ok {
		return 0, false
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		i, err := strconv.ParseInt(string(raw), 10, bits)
		return i, err == nil
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false // a fraction or an exponent: not an integer
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(raw) {
		n = -n
	}
	if bits == 64 {
		return n, true // 18 digits fit
	}
	lim := int64(1) << (bits - 1)
	return n, n >= -lim && n < lim
}

// null applies the general path's rules to a JSON null.
func (p *fastParser) null(s *data.Schema) (any, bool) {
	if s.Default != nil && p.replaceNull {
		return s.Default, true
	}
	return nil, s.Optional
}

// value decodes one value of schema s, as readValue does.
func (p *fastParser) value(s *data.Schema) (any, bool) {
	p.ws()
	if p.i >= len(p.b) {
		return nil, false
	}
	if p.b[p.i] == 'n' {
		if !p.lit("null") {
			return nil, false
		}
		return p.null(s)
	}
	if s.IsLogical() {
		return p.logical(s)
	}
	switch s.Type {
	case data.TypeInt8:
		i, ok := p.int(8)
		return int8(i), ok
	case data.TypeInt16:
		i, ok := p.int(16)
		return int16(i), ok
	case data.TypeInt32:
		i, ok := p.int(32)
		return int32(i), ok
	case data.TypeInt64:
		return p.int(64)
	case data.TypeFloat32, data.TypeFloat64:
		n, ok := p.number()
		if !ok {
			return nil, false
		}
		if s.Type == data.TypeFloat32 {
			f, err := strconv.ParseFloat(n, 32)
			return float32(f), err == nil
		}
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	case data.TypeBoolean:
		if p.lit("true") {
			return true, true
		}
		return false, p.lit("false")
	case data.TypeString:
		return p.str()
	case data.TypeBytes:
		str, ok := p.str()
		if !ok {
			return nil, false
		}
		out, err := base64.StdEncoding.DecodeString(str)
		return out, err == nil
	case data.TypeArray:
		return p.array(s)
	case data.TypeStruct:
		return p.structValue(s)
	}
	return nil, false // maps: the general path
}

func (p *fastParser) logical(s *data.Schema) (any, bool) {
	switch s.Name {
	case data.DecimalName:
		scale, err := data.DecimalScale(s)
		if err != nil || p.b[p.i] != '"' {
			return nil, false // numeric decimals: the general path
		}
		start := p.i
		text, ok := p.rawString()
		if !ok {
			p.i = start
			str, ok := p.str()
			if !ok {
				return nil, false
			}
			text = []byte(str)
		}
		// Decimals of up to 18 digits take at most 8 bytes, 12 in base64.
		var buf [48]byte
		var raw []byte
		if n := base64.StdEncoding.DecodedLen(len(text)); n <= len(buf) {
			m, err := base64.StdEncoding.Decode(buf[:n], text)
			if err != nil {
				return nil, false
			}
			raw = buf[:m]
		} else {
			var err error
			if raw, err = base64.StdEncoding.DecodeString(string(text)); err != nil {
				return nil, false
			}
		}
		return data.DecimalFromBytes(raw, scale), true
	case data.TimestampName:
		ms, ok := p.int(64)
		return data.TimestampFromMillis(ms), ok
	case data.DateName:
		d, ok := p.int(32)
		return data.DateFromDays(int32(d)), ok
	case data.TimeName:
		ms, ok := p.int(32)
		return data.TimeFromMillis(int32(ms)), ok
	}
	return nil, false
}

func (p *fastParser) array(s *data.Schema) (any, bool) {
	if !p.lit("[") {
		return nil, false
	}
	out := []any{}
	p.ws()
	if p.lit("]") {
		return out, true
	}
	for {
		v, ok := p.value(s.Elem)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		p.ws()
		if p.lit("]") {
			return out, true
		}
		if !p.lit(",") {
			return nil, false
		}
	}
}

// structValue decodes an object into a struct by field index; unknown,
// duplicate or more than 64 fields go to the general path.
func (p *fastParser) structValue(s *data.Schema) (any, bool) {
	if len(s.Fields) > 64 || !p.lit("{") {
		return nil, false
	}
	values, st := structValues(len(s.Fields))
	var seen uint64
	p.ws()
	if !p.lit("}") {
		for next := 0; ; next++ {
			p.ws()
			name, ok := p.rawString()
			if !ok {
				return nil, false
			}
			// Writers keep the schema's order: try the next field first.
			idx := -1
			if next < len(s.Fields) && s.Fields[next].Name == string(name) {
				idx = next
			} else {
				for j := range s.Fields {
					if s.Fields[j].Name == string(name) {
						idx = j
						break
					}
				}
			}
			if idx < 0 || seen&(1<<idx) != 0 {
				return nil, false
			}
			seen |= 1 << idx
			p.ws()
			if !p.lit(":") {
				return nil, false
			}
			if values[idx], ok = p.value(s.Fields[idx].Schema); !ok {
				return nil, false
			}
			p.ws()
			if p.lit("}") {
				break
			}
			if !p.lit(",") {
				return nil, false
			}
		}
	}
	for j := range s.Fields {
		if seen&(1<<j) == 0 {
			v, ok := p.null(s.Fields[j].Schema)
			if !ok {
				return nil, false
			}
			values[j] = v
		}
	}
	data.InitStructTrusted(st, s, values)
	return st, true
}

// structValues returns a struct and a values slice of n entries for it,
// from one allocation when n is small (most rows).
func structValues(n int) ([]any, *data.Struct) {
	switch {
	case n <= 4:
		b := new(struct {
			st   data.Struct
			vals [4]any
		})
		return b.vals[:n:n], &b.st
	case n <= 8:
		b := new(struct {
			st   data.Struct
			vals [8]any
		})
		return b.vals[:n:n], &b.st
	case n <= 16:
		b := new(struct {
			st   data.Struct
			vals [16]any
		})
		return b.vals[:n:n], &b.st
	}
	return make([]any, n), new(data.Struct)
}
