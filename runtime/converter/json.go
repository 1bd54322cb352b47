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
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// JSON type names in the schema envelope (Kafka's JsonSchema).
const (
	jsonInt8    = "int8"
	jsonInt16   = "int16"
	jsonInt32   = "int32"
	jsonInt64   = "int64"
	jsonFloat   = "float"
	jsonDouble  = "double"
	jsonBoolean = "boolean"
	jsonString  = "string"
	jsonBytes   = "bytes"
	jsonArray   = "array"
	jsonMap     = "map"
	jsonStruct  = "struct"
)

var typeToJSON = map[data.Type]string{
	data.TypeInt8: jsonInt8, data.TypeInt16: jsonInt16, data.TypeInt32: jsonInt32, data.TypeInt64: jsonInt64,
	data.TypeFloat32: jsonFloat, data.TypeFloat64: jsonDouble, data.TypeBoolean: jsonBoolean,
	data.TypeString: jsonString, data.TypeBytes: jsonBytes, data.TypeArray: jsonArray,
	data.TypeMap: jsonMap, data.TypeStruct: jsonStruct,
}

var jsonToType = func() map[string]data.Type {
	m := map[string]data.Type{}
	for k, v := range typeToJSON {
		m[v] = k
	}
	return m
}()

// JSON is Kafka's JsonConverter. With schemas enabled (the default) it
// writes the envelope {"schema": {...}, "payload": ...} and reads it back
// with full types; without, it writes plain JSON and reads schemaless
// values (integers as int64, other numbers as float64, objects as
// map[string]any, arrays as []any). Bytes are base64; Timestamp, Date and
// Time are numbers (ms, days, ms); Decimal is base64 of the unscaled value
// or, with decimal.format=NUMERIC, a JSON number.
type JSON struct {
	mu                     sync.Mutex
	schemas                map[string]*data.Schema    // parsed envelope schemas by JSON text
	schemaJSON             map[*data.Schema]*rendered // rendered envelope schemas and field names
	last                   atomic.Pointer[lastSchema]
	lastRendered           atomic.Pointer[rendered] // the rendering render returned last
	enc                    data.JSONEncoder
	schemasEnable          bool
	replaceNullWithDefault bool
	// sizeHint is the length of the last serialised value: records of a
	// topic are usually alike, so the next buffer starts at about the
	// right size instead of a fixed 512 bytes (less to allocate and clear).
	sizeHint atomic.Int32
}

// NewJSON returns a JSON converter configured from unprefixed keys
// (schemas.enable, decimal.format, replace.null.with.default).
func NewJSON(config map[string]string) (*JSON, error) {
	c := &JSON{schemasEnable: true, replaceNullWithDefault: true}
	var err error
	if c.schemasEnable, err = boolKey(config, KeySchemasEnable, true); err != nil {
		return nil, err
	}
	if c.replaceNullWithDefault, err = boolKey(config, KeyReplaceNullWithDefault, true); err != nil {
		return nil, err
	}
	switch f := strings.ToUpper(strings.TrimSpace(config[KeyDecimalFormat])); f {
	case "", "BASE64":
	case "NUMERIC":
		c.enc.NumericDecimal = true
	default:
		return nil, fmt.Errorf("%s=%q: use BASE64 or NUMERIC", KeyDecimalFormat, config[KeyDecimalFormat])
	}
	return c, nil
}

func boolKey(config map[string]string, key string, def bool) (bool, error) {
	v, ok := config[key]
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: expected true or false", key, v)
}

// SchemasEnabled reports whether the converter uses the schema envelope.
func (c *JSON) SchemasEnabled() bool { return c.schemasEnable }

// FromConnectData serialises value (with schema, or schemaless when nil).
func (c *JSON) FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error) {
	hint := int(c.sizeHint.Load())
	if hint <= 0 {
		hint = 512
	}
	b, null, err := c.AppendConnectData(make([]byte, 0, hint+hint/8+8), topic, schema, value)
	if null || err != nil {
		return nil, err
	}
	// Decay slowly so that one converter serving small and large values
	// (keys and values, say) sizes for the large ones.
	c.sizeHint.Store(int32(min(max(len(b), hint-hint/16), 1<<20)))
	return b, nil
}

// AppendConnectData implements [Appender]: FromConnectData into dst.
func (c *JSON) AppendConnectData(dst []byte, topic string, schema *data.Schema, value any) ([]byte, bool, error) {
	if schema == nil && value == nil {
		return dst, true, nil
	}
	if t, ok := value.(data.JSONText); ok {
		// A value this converter did not convert (AppendJSONText): its
		// bytes as they were.
		return append(dst, t.Raw...), false, nil
	}
	var r *rendered
	if schema != nil && (c.schemasEnable || schema.Type == data.TypeStruct) {
		var err error
		if r, err = c.render(schema); err != nil {
			return dst, false, fmt.Errorf("converting schema for topic %q to JSON: %w", topic, err)
		}
	}
	b := dst
	if c.schemasEnable {
		if r == nil {
			b = append(b, `{"schema":null,"payload":`...)
		} else {
			b = append(b, r.prefix...)
		}
	}
	var err error
	if r != nil && r.fields != nil {
		b, err = c.enc.AppendStruct(b, schema, value, r.fields)
	} else {
		b, err = c.enc.Append(b, schema, value)
	}
	if err != nil {
		return dst, false, fmt.Errorf("converting value for topic %q to JSON: %w", topic, err)
	}
	if c.schemasEnable {
		b = append(b, '}')
	}
	return b, false, nil
}

// rendered is what a converter keeps per schema: with schemas enabled, the
// envelope up to the payload (`{"schema":<schema JSON>,"payload":`) and,
// for a struct schema, its fields' name prefixes (data.JSONFieldPrefixes).
type rendered struct {
	schema *data.Schema
	prefix []byte
	fields []string
}

// render returns the rendering of a schema, cached by pointer (bounded):
// schemas are immutable once records use them. The rendering returned
// last is checked first, without the lock: a task's records mostly share
// one schema.
func (c *JSON) render(s *data.Schema) (*rendered, error) {
	if r := c.lastRendered.Load(); r != nil && r.schema == s {
		return r, nil
	}
	c.mu.Lock()
	r, ok := c.schemaJSON[s]
	c.mu.Unlock()
	if ok {
		c.lastRendered.Store(r)
		return r, nil
	}
	r = &rendered{schema: s}
	if c.schemasEnable {
		var b bytes.Buffer
		b.WriteString(`{"schema":`)
		if err := c.writeSchema(&b, s); err != nil {
			return nil, err
		}
		b.WriteString(`,"payload":`)
		r.prefix = b.Bytes()
	}
	if s.Type == data.TypeStruct {
		r.fields = data.JSONFieldPrefixes(s)
	}
	c.mu.Lock()
	if c.schemaJSON == nil || len(c.schemaJSON) >= schemaCacheSize {
		c.schemaJSON = make(map[*data.Schema]*rendered)
	}
	c.schemaJSON[s] = r
	c.mu.Unlock()
	c.lastRendered.Store(r)
	return r, nil
}

// writeSchema writes a schema as Kafka's JsonConverter.asJsonSchema does:
// type, children, optional, name, version, doc, parameters, default.
func (c *JSON) writeSchema(b *bytes.Buffer, s *data.Schema) error {
	return c.writeSchemaField(b, s, "")
}

func (c *JSON) writeSchemaField(b *bytes.Buffer, s *data.Schema, field string) error {
	if s == nil {
		return fmt.Errorf("nil schema")
	}
	t, ok := typeToJSON[s.Type]
	if !ok {
		return fmt.Errorf("unknown schema type %q", s.Type)
	}
	b.WriteString(`{"type":`)
	data.WriteJSONString(b, t)
	switch s.Type {
	case data.TypeArray:
		b.WriteString(`,"items":`)
		if err := c.writeSchemaField(b, s.Elem, ""); err != nil {
			return err
		}
	case data.TypeMap:
		b.WriteString(`,"keys":`)
		if err := c.writeSchemaField(b, s.Key, ""); err != nil {
			return err
		}
		b.WriteString(`,"values":`)
		if err := c.writeSchemaField(b, s.Elem, ""); err != nil {
			return err
		}
	case data.TypeStruct:
		b.WriteString(`,"fields":[`)
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := c.writeSchemaField(b, f.Schema, f.Name); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		b.WriteByte(']')
	}
	b.WriteString(`,"optional":`)
	b.WriteString(strconv.FormatBool(s.Optional))
	if s.Name != "" {
		b.WriteString(`,"name":`)
		data.WriteJSONString(b, s.Name)
	}
	if s.Version != 0 {
		b.WriteString(`,"version":`)
		b.WriteString(strconv.Itoa(int(s.Version)))
	}
	if s.Doc != "" {
		b.WriteString(`,"doc":`)
		data.WriteJSONString(b, s.Doc)
	}
	if s.Parameters != nil {
		b.WriteString(`,"parameters":{`)
		keys := make([]string, 0, len(s.Parameters))
		for k := range s.Parameters {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			data.WriteJSONString(b, k)
			b.WriteByte(':')
			data.WriteJSONString(b, s.Parameters[k])
		}
		b.WriteByte('}')
	}
	if s.Default != nil {
		b.WriteString(`,"default":`)
		if err := c.enc.Write(b, s, s.Default); err != nil {
			return err
		}
	}
	if field != "" {
		b.WriteString(`,"field":`)
		data.WriteJSONString(b, field)
	}
	b.WriteByte('}')
	return nil
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
