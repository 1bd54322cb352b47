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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// JSONSchemaClass is Confluent's JSON Schema converter; Conveyor's writes
// the same wire format (magic byte 0, the 4-byte schema id, the value as
// JSON) and maps schemas with Confluent's connect.* annotations.
const JSONSchemaClass = "io.confluent.connect.json.JsonSchemaConverter"

// Annotations of Confluent's JsonSchemaData.
const (
	jsConnectIndex  = "connect.index"
	jsConnectType   = "connect.type"
	jsConnectParams = "connect.parameters"
	jsConnectVer    = "connect.version"
)

// JSONSchema converts between Connect data and JSON described by a JSON
// Schema in a schema registry, in the Confluent wire format.
type JSONSchema struct {
	reg *registry
	// payload writes and reads the JSON values as Kafka's JsonConverter
	// does without its envelope, decimals as numbers.
	payload *JSON
	writers *lru[*data.Schema, *jsonSchemaWriter]
}

type jsonSchemaWriter struct {
	text  string
	title string
	ids   subjectIDs
}

// NewJSONSchema returns a JSON Schema converter configured with the
// registry keys.
func NewJSONSchema(config map[string]string, isKey bool) (*JSONSchema, error) {
	reg, err := newRegistry(config, isKey)
	if err != nil {
		return nil, err
	}
	payload, err := NewJSON(map[string]string{KeySchemasEnable: "false", KeyDecimalFormat: "NUMERIC"})
	if err != nil {
		return nil, err
	}
	return &JSONSchema{reg: reg, payload: payload, writers: newLRU[*data.Schema, *jsonSchemaWriter](reg.byID.n)}, nil
}

// FromConnectData writes value as JSON after the wire format's header,
// with the JSON Schema its Connect schema maps to.
func (c *JSONSchema) FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error) {
	if value == nil && (schema == nil || schema.Optional) {
		return nil, nil
	}
	if t, ok := value.(data.JSONText); ok {
		return t.Raw, nil // a value this converter did not convert (AppendJSONText)
	}
	if schema == nil {
		return nil, fmt.Errorf("the JSON Schema converter needs a schema: the record's value has none (use a source or transform that sets one)")
	}
	w, ok := c.writers.get(schema)
	if !ok {
		doc, err := jsonSchemaOf("", schema, true)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		w = &jsonSchemaWriter{text: string(b), title: schema.Name}
		c.writers.put(schema, w)
	}
	subject, err := c.reg.subject(topic, w.title)
	if err != nil {
		return nil, err
	}
	var id int
	if c.reg.useLatest {
		ss, err := c.reg.latest(subject)
		if err != nil {
			return nil, err
		}
		id = ss.ID
	} else if id, err = w.ids.get(subject, func() (int, error) {
		return c.reg.idFor(subject, sr.Schema{Schema: w.text, Type: sr.TypeJSON})
	}); err != nil {
		return nil, err
	}
	out, err := c.reg.header.AppendEncode(make([]byte, 0, 128), id, nil)
	if err != nil {
		return nil, err
	}
	out, _, err = c.payload.AppendConnectData(out, topic, schema, value)
	return out, err
}

// ToConnectData reads the wire format: the JSON Schema by its id (cached)
// mapped to a Connect schema, then the JSON value with it.
func (c *JSONSchema) ToConnectData(topic string, b []byte) (*data.Schema, any, error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	id, body, schema, err := c.read(b)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	// JsonConverter's fast reader first (jsonfast.go): the same values as
	// the general path below, which takes whatever it hands over.
	p := fastParser{b: body, replaceNull: c.payload.replaceNullWithDefault}
	if v, ok := p.value(schema); ok {
		if p.ws(); p.i == len(body) {
			return schema, v, nil
		}
	}
	raw, err := decodeJSON(body)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: schema id %d: %w", topic, id, err)
	}
	value, err := c.payload.readValue(schema, raw, "")
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: schema id %d: %w", topic, id, err)
	}
	return schema, value, nil
}

// read splits the wire format into the schema id and the JSON, and
// returns the Connect schema of the id's JSON Schema (cached).
func (c *JSONSchema) read(b []byte) (int, []byte, *data.Schema, error) {
	id, body, err := c.reg.decodeHeader(b)
	if err != nil {
		return 0, nil, nil, err
	}
	v, err := c.reg.parsed(id, func(s sr.Schema) (any, error) {
		if s.Type != sr.TypeJSON {
			return nil, fmt.Errorf("is a %s schema, not JSON Schema: read it with the matching converter", s.Type)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(s.Schema), &doc); err != nil {
			return nil, fmt.Errorf("the JSON Schema does not parse: %w", err)
		}
		return connectOfJSONSchema("", doc, false)
	})
	if err != nil {
		return 0, nil, nil, err
	}
	return id, body, v.(*data.Schema), nil
}

// AppendJSONText implements [JSONTexter]: the JSON after the header,
// written as enc would write its value (json_text.go).
func (c *JSONSchema) AppendJSONText(dst []byte, enc data.JSONEncoder, _ string, b []byte) ([]byte, *data.Schema, bool) {
	if len(b) == 0 {
		return dst, nil, false
	}
	_, body, schema, err := c.read(b)
	if err != nil {
		return dst, nil, false
	}
	p := fastParser{b: body, replaceNull: c.payload.replaceNullWithDefault, enc: enc}
	if p.ws(); p.i >= len(body) || body[p.i] == 'n' {
		return dst, nil, false // a null: a tombstone or the schema's default
	}
	out, ok := p.text(dst, schema, 0)
	if p.ws(); !ok || p.i != len(body) {
		return dst, nil, false
	}
	return out, schema, true
}

// jsonSchemaOf maps a Connect schema to a JSON Schema document as
// Confluent's JsonSchemaData does.
func jsonSchemaOf(path string, s *data.Schema, top bool) (map[string]any, error) {
	var out map[string]any
	switch s.Type {
	case data.TypeInt8, data.TypeInt16, data.TypeInt32, data.TypeInt64:
		out = map[string]any{"type": "integer", jsConnectType: string(s.Type)}
	case data.TypeFloat32, data.TypeFloat64:
		out = map[string]any{"type": "number", jsConnectType: string(s.Type)}
	case data.TypeBoolean:
		out = map[string]any{"type": "boolean"}
	case data.TypeString:
		out = map[string]any{"type": "string"}
	case data.TypeBytes:
		out = map[string]any{"type": "string", jsConnectType: "bytes"}
		if s.Name == data.DecimalName {
			out = map[string]any{"type": "number", jsConnectType: "bytes"}
		}
	case data.TypeArray:
		items, err := jsonSchemaOf(path+"[]", s.Elem, false)
		if err != nil {
			return nil, err
		}
		out = map[string]any{"type": "array", "items": items}
	case data.TypeMap:
		if s.Key.Type != data.TypeString {
			return nil, fmt.Errorf("%s: a map with %s keys cannot be mapped to JSON Schema (JSON object keys are strings)", atField(path), s.Key)
		}
		values, err := jsonSchemaOf(path+"<value>", s.Elem, false)
		if err != nil {
			return nil, err
		}
		out = map[string]any{"type": "object", "additionalProperties": values, jsConnectType: "map"}
	case data.TypeStruct:
		props := map[string]any{}
		for i, f := range s.Fields {
			p, err := jsonSchemaOf(fieldPath(path, f.Name), f.Schema, false)
			if err != nil {
				return nil, err
			}
			p[jsConnectIndex] = i
			props[f.Name] = p
		}
		out = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	default:
		return nil, fmt.Errorf("%s: schema type %s cannot be mapped to JSON Schema", atField(path), s.Type)
	}
	if s.Name != "" {
		out["title"] = s.Name
	}
	if s.Version != 0 {
		out[jsConnectVer] = s.Version
	}
	if len(s.Parameters) > 0 {
		out[jsConnectParams] = s.Parameters
	}
	if s.Doc != "" {
		out["description"] = s.Doc
	}
	if s.Default != nil {
		d, err := jsonDefault(path, s)
		if err != nil {
			return nil, err
		}
		out["default"] = d
	}
	if s.Optional && !top {
		idx, hasIdx := out[jsConnectIndex]
		delete(out, jsConnectIndex)
		wrapped := map[string]any{"oneOf": []any{map[string]any{"type": "null"}, out}}
		if hasIdx {
			wrapped[jsConnectIndex] = idx
		}
		return wrapped, nil
	}
	return out, nil
}

func jsonDefault(path string, s *data.Schema) (any, error) {
	j, err := NewJSON(map[string]string{KeySchemasEnable: "false", KeyDecimalFormat: "NUMERIC"})
	if err != nil {
		return nil, err
	}
	b, err := j.FromConnectData("", s, s.Default)
	if err != nil {
		return nil, fmt.Errorf("%s: default: %w", atField(path), err)
	}
	return json.RawMessage(b), nil
}

// connectOfJSONSchema maps a JSON Schema to a Connect schema: the connect.*
// annotations when present, else JSON's own types (integer → int64, number
// → float64). What has no Connect form is an error naming the field.
func connectOfJSONSchema(path string, doc map[string]any, optional bool) (*data.Schema, error) {
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := doc[k].([]any); ok {
			var other []map[string]any
			hasNull := false
			for _, a := range alts {
				m, _ := a.(map[string]any)
				if m["type"] == "null" {
					hasNull = true
				} else {
					other = append(other, m)
				}
			}
			if !hasNull || len(other) != 1 {
				return nil, fmt.Errorf("%s: %s of %d schemas cannot be mapped (only null and one schema can)", atField(path), k, len(alts))
			}
			return connectOfJSONSchema(path, other[0], true)
		}
	}
	typ := doc["type"]
	if list, ok := typ.([]any); ok { // ["null", "string"]
		var rest []any
		for _, t := range list {
			if t == "null" {
				optional = true
			} else {
				rest = append(rest, t)
			}
		}
		if len(rest) != 1 {
			return nil, fmt.Errorf("%s: the types %v cannot be mapped (only null and one type can)", atField(path), list)
		}
		typ = rest[0]
	}
	ct, _ := doc[jsConnectType].(string)
	var s *data.Schema
	switch typ {
	case "integer":
		s = &data.Schema{Type: data.TypeInt64}
		if t := data.Type(ct); t == data.TypeInt8 || t == data.TypeInt16 || t == data.TypeInt32 {
			s.Type = t
		}
	case "number":
		s = &data.Schema{Type: data.TypeFloat64}
		switch ct {
		case "float32":
			s.Type = data.TypeFloat32
		case "bytes":
			s.Type = data.TypeBytes
		}
	case "boolean":
		s = &data.Schema{Type: data.TypeBoolean}
	case "string":
		s = &data.Schema{Type: data.TypeString}
		if ct == "bytes" {
			s.Type = data.TypeBytes
		}
	case "array":
		items, _ := doc["items"].(map[string]any)
		if items == nil {
			return nil, fmt.Errorf("%s: an array without one items schema cannot be mapped", atField(path))
		}
		e, err := connectOfJSONSchema(path+"[]", items, false)
		if err != nil {
			return nil, err
		}
		s = data.ArrayOf(e)
	case "object":
		props, _ := doc["properties"].(map[string]any)
		if values, ok := doc["additionalProperties"].(map[string]any); ok && len(props) == 0 {
			e, err := connectOfJSONSchema(path+"<value>", values, false)
			if err != nil {
				return nil, err
			}
			s = data.MapOf(data.StringSchema, e)
			break
		}
		names := slices.Sorted(maps.Keys(props))
		index := func(n string) float64 {
			m, _ := props[n].(map[string]any)
			if i, ok := m[jsConnectIndex].(float64); ok {
				return i
			}
			return 1e9
		}
		slices.SortStableFunc(names, func(a, b string) int {
			ia, ib := index(a), index(b)
			switch {
			case ia < ib:
				return -1
			case ia > ib:
				return 1
			}
			return 0
		})
		required := map[string]bool{}
		if req, ok := doc["required"].([]any); ok {
			for _, r := range req {
				if n, ok := r.(string); ok {
					required[n] = true
				}
			}
		}
		fields := make([]data.Field, 0, len(names))
		for _, n := range names {
			m, _ := props[n].(map[string]any)
			fs, err := connectOfJSONSchema(fieldPath(path, n), m, false)
			if err != nil {
				return nil, err
			}
			if _, annotated := m[jsConnectIndex]; !annotated && !required[n] {
				fs.Optional = true // plain JSON Schema: a property not required may be absent
			}
			fields = append(fields, data.F(n, fs))
		}
		s = data.StructOf("", fields...)
	default:
		return nil, fmt.Errorf("%s: the JSON Schema type %v cannot be mapped", atField(path), typ)
	}
	if title, ok := doc["title"].(string); ok {
		s.Name = title
	}
	if v, ok := doc[jsConnectVer].(float64); ok {
		s.Version = int32(v)
	}
	if ps, ok := doc[jsConnectParams].(map[string]any); ok {
		s.Parameters = map[string]string{}
		for k, v := range ps {
			s.Parameters[k] = fmt.Sprint(v)
		}
	}
	if d, ok := doc["description"].(string); ok {
		s.Doc = d
	}
	if s.Name == data.DecimalName {
		if _, err := data.DecimalScale(s); err != nil {
			return nil, fmt.Errorf("%s: %w", atField(path), err)
		}
	}
	s.Optional = s.Optional || optional
	if d, ok := doc["default"]; ok && d != nil {
		b, _ := json.Marshal(d)
		var err error
		if s.Default, err = defaultFromJSON(path, s, b); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// defaultFromJSON reads a default written by jsonDefault.
func defaultFromJSON(path string, s *data.Schema, b []byte) (any, error) {
	j, err := NewJSON(map[string]string{KeySchemasEnable: "false", KeyDecimalFormat: "NUMERIC"})
	if err != nil {
		return nil, err
	}
	raw, err := decodeJSON(b)
	var dv any
	if err == nil {
		dv, err = j.readValue(s, raw, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: default %s: %w", atField(path), strconv.Quote(string(b)), err)
	}
	return dv, nil
}
