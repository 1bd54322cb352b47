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
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"strconv"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

const envelopeError = `JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.`

// ToConnectData parses JSON bytes. Parsed schemas are cached by their JSON
// text (bounded), since a topic usually carries few distinct schemas.
func (c *JSON) ToConnectData(topic string, b []byte) (*data.Schema, any, error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	fail := func(format string, args ...any) (*data.Schema, any, error) {
		return nil, nil, fmt.Errorf("converting bytes of topic %q to Connect data: "+format, append([]any{topic}, args...)...)
	}
	if !c.schemasEnable {
		root, err := decodeJSON(b)
		if err != nil {
			return fail("%w", err)
		}
		v, err := schemaless(root)
		if err != nil {
			return fail("%w", err)
		}
		return nil, v, nil
	}
	if s, v, ok := c.fastEnvelope(b); ok {
		return s, v, nil
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(b, &env); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fail("%s", envelopeError)
		}
		return fail("invalid JSON: %w", err)
	}
	rawSchema, ok1 := env["schema"]
	rawPayload, ok2 := env["payload"]
	if len(env) != 2 || !ok1 || !ok2 {
		return fail("%s", envelopeError)
	}
	payload, err := decodeJSON(rawPayload)
	if err != nil {
		return fail("payload: %w", err)
	}
	schema, err := c.schemaFor(rawSchema)
	if err != nil {
		return fail("invalid schema: %w", err)
	}
	if schema == nil {
		v, err := schemaless(payload)
		if err != nil {
			return fail("%w", err)
		}
		return nil, v, nil
	}
	v, err := c.readValue(schema, payload, "")
	if err != nil {
		return fail("%w", err)
	}
	return schema, v, nil
}

// schemaCacheSize bounds the parsed-schema cache of one converter.
const schemaCacheSize = 256

// schemaFor parses (or finds in the cache) the schema of an envelope; nil
// for a JSON null.
func (c *JSON) schemaFor(raw json.RawMessage) (*data.Schema, error) {
	text := string(bytes.TrimSpace(raw))
	if text == "null" {
		return nil, nil
	}
	c.mu.Lock()
	s, ok := c.schemas[text]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	tree, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	s, err = c.parseSchema(tree, "")
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.schemas == nil || len(c.schemas) >= schemaCacheSize {
		c.schemas = make(map[string]*data.Schema)
	}
	c.schemas[text] = s
	c.mu.Unlock()
	return s, nil
}

// decodeJSON decodes one JSON value keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: trailing data after the value")
	}
	return v, nil
}

// schemaless turns decoded JSON into Connect's schemaless values.
func schemaless(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", x)
		}
		return f, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = schemaless(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var err error
			if out[k], err = schemaless(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

func (c *JSON) parseSchema(raw any, path string) (*data.Schema, error) {
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%sschema must be a JSON object", at(path))
	}
	tn, ok := obj["type"].(string)
	if !ok {
		return nil, fmt.Errorf(`%sschema must contain "type" as a string`, at(path))
	}
	t, ok := jsonToType[tn]
	if !ok {
		return nil, fmt.Errorf("%sunknown schema type %q", at(path), tn)
	}
	s := &data.Schema{Type: t}
	if o, ok := obj["optional"]; ok && o != nil {
		b, ok := o.(bool)
		if !ok {
			return nil, fmt.Errorf(`%s"optional" must be a boolean`, at(path))
		}
		s.Optional = b
	}
	if n, ok := obj["name"]; ok && n != nil {
		if s.Name, ok = n.(string); !ok {
			return nil, fmt.Errorf(`%s"name" must be a string`, at(path))
		}
	}
	if v, ok := obj["version"]; ok && v != nil {
		num, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf(`%s"version" must be a number`, at(path))
		}
		n, err := strconv.ParseInt(num.String(), 10, 32)
		if err != nil {
			return nil, fmt.Errorf(`%s"version" must be an int32`, at(path))
		}
		s.Version = int32(n)
	}
	if d, ok := obj["doc"]; ok && d != nil {
		if s.Doc, ok = d.(string); !ok {
			return nil, fmt.Errorf(`%s"doc" must be a string`, at(path))
		}
	}
	if p, ok := obj["parameters"]; ok && p != nil {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`%s"parameters" must be an object`, at(path))
		}
		s.Parameters = make(map[string]string, len(pm))
		for k, v := range pm {
			sv, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf(`%sparameter %q must be a string`, at(path), k)
			}
			s.Parameters[k] = sv
		}
	}
	switch t {
	case data.TypeArray:
		items, ok := obj["items"]
		if !ok {
			return nil, fmt.Errorf(`%sarray schema must contain "items"`, at(path))
		}
		var err error
		if s.Elem, err = c.parseSchema(items, path+"[]"); err != nil {
			return nil, err
		}
	case data.TypeMap:
		keys, ok1 := obj["keys"]
		values, ok2 := obj["values"]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf(`%smap schema must contain "keys" and "values"`, at(path))
		}
		var err error
		if s.Key, err = c.parseSchema(keys, path+"<key>"); err != nil {
			return nil, err
		}
		if s.Elem, err = c.parseSchema(values, path+"<value>"); err != nil {
			return nil, err
		}
	case data.TypeStruct:
		fields, ok := obj["fields"].([]any)
		if !ok {
			return nil, fmt.Errorf(`%sstruct schema must contain "fields" as an array`, at(path))
		}
		fs := make([]data.Field, 0, len(fields))
		for i, f := range fields {
			fo, ok := f.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%sstruct field %d must be an object", at(path), i)
			}
			name, ok := fo["field"].(string)
			if !ok {
				return nil, fmt.Errorf(`%sstruct field %d must contain "field" as a string`, at(path), i)
			}
			fsch, err := c.parseSchema(fo, joinPath(path, name))
			if err != nil {
				return nil, err
			}
			fs = append(fs, data.Field{Name: name, Index: i, Schema: fsch})
		}
		s.Fields = fs
	}
	if d, ok := obj["default"]; ok && d != nil {
		v, err := c.readValue(s, d, joinPath(path, "<default>"))
		if err != nil {
			return nil, err
		}
		s.Default = v
	}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("%s%w", at(path), err)
	}
	return s, nil
}

func intOf(v any, bits int, s *data.Schema, path string) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%sexpected a number for %s, got %s", at(path), s.Type, jsonKind(v))
	}
	i, err := strconv.ParseInt(n.String(), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s%s is not a valid %s", at(path), n, s.Type)
	}
	return i, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// readValue converts decoded JSON into the Go value of the schema.
func (c *JSON) readValue(s *data.Schema, v any, path string) (any, error) {
	if v == nil {
		if s.Default != nil && c.replaceNullWithDefault {
			return s.Default, nil
		}
		if s.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("%sinvalid null value for required %s field", at(path), s.Type)
	}
	if s.IsLogical() {
		return c.readLogical(s, v, path)
	}
	switch s.Type {
	case data.TypeInt8:
		i, err := intOf(v, 8, s, path)
		return int8(i), err
	case data.TypeInt16:
		i, err := intOf(v, 16, s, path)
		return int16(i), err
	case data.TypeInt32:
		i, err := intOf(v, 32, s, path)
		return int32(i), err
	case data.TypeInt64:
		return intOf(v, 64, s, path)
	case data.TypeFloat32, data.TypeFloat64:
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%sexpected a number for %s, got %s", at(path), s.Type, jsonKind(v))
		}
		bits := 64
		if s.Type == data.TypeFloat32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(n.String(), bits)
		if err != nil {
			return nil, fmt.Errorf("%s%s is not a valid %s", at(path), n, s.Type)
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case data.TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("%sexpected a boolean, got %s", at(path), jsonKind(v))
		}
		return b, nil
	case data.TypeString:
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%sexpected a string, got %s", at(path), jsonKind(v))
		}
		return str, nil
	case data.TypeBytes:
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%sexpected base64 bytes as a string, got %s", at(path), jsonKind(v))
		}
		out, err := base64.StdEncoding.DecodeString(str)
		if err != nil {
			return nil, fmt.Errorf("%sinvalid base64 bytes: %w", at(path), err)
		}
		return out, nil
	case data.TypeArray:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%sexpected an array, got %s", at(path), jsonKind(v))
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			var err error
			if out[i], err = c.readValue(s.Elem, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return nil, err
			}
		}
		return out, nil
	case data.TypeMap:
		out := map[any]any{}
		if s.Key.Type == data.TypeString {
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%sexpected an object for a map with string keys, got %s", at(path), jsonKind(v))
			}
			for k, e := range obj {
				val, err := c.readValue(s.Elem, e, path+"["+k+"]")
				if err != nil {
					return nil, err
				}
				out[k] = val
			}
			return out, nil
		}
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%sexpected an array of [key, value] pairs, got %s", at(path), jsonKind(v))
		}
		for i, e := range arr {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return nil, fmt.Errorf("%smap entry %d must be a [key, value] array", at(path), i)
			}
			k, err := c.readValue(s.Key, pair[0], path+"<key>")
			if err != nil {
				return nil, err
			}
			if k != nil && !reflect.TypeOf(k).Comparable() {
				return nil, fmt.Errorf("%smap keys of type %s cannot be represented in Go maps", at(path), s.Key.Type)
			}
			val, err := c.readValue(s.Elem, pair[1], path+"["+fmt.Sprint(k)+"]")
			if err != nil {
				return nil, err
			}
			out[k] = val
		}
		return out, nil
	case data.TypeStruct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%sexpected an object for a struct, got %s", at(path), jsonKind(v))
		}
		st := data.NewStruct(s)
		for _, f := range s.Fields {
			val, err := c.readValue(f.Schema, obj[f.Name], joinPath(path, f.Name))
			if err != nil {
				return nil, err
			}
			if err := st.Set(f.Name, val); err != nil {
				return nil, fmt.Errorf("%s%w", at(path), err)
			}
		}
		return st, nil
	}
	return nil, fmt.Errorf("%sunknown schema type %q", at(path), s.Type)
}

func (c *JSON) readLogical(s *data.Schema, v any, path string) (any, error) {
	switch s.Name {
	case data.DecimalName:
		scale, err := data.DecimalScale(s)
		if err != nil {
			return nil, fmt.Errorf("%s%w", at(path), err)
		}
		switch x := v.(type) {
		case string:
			raw, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("%sinvalid base64 decimal: %w", at(path), err)
			}
			return data.DecimalFromBytes(raw, scale), nil
		case json.Number:
			d, err := data.ParseDecimal(x.String())
			if err != nil {
				return nil, fmt.Errorf("%s%w", at(path), err)
			}
			return rescale(d, scale, path)
		}
		return nil, fmt.Errorf("%sexpected a decimal as base64 string or number, got %s", at(path), jsonKind(v))
	case data.TimestampName:
		ms, err := intOf(v, 64, s, path)
		if err != nil {
			return nil, err
		}
		return data.TimestampFromMillis(ms), nil
	case data.DateName:
		d, err := intOf(v, 32, s, path)
		if err != nil {
			return nil, err
		}
		return data.DateFromDays(int32(d)), nil
	case data.TimeName:
		ms, err := intOf(v, 32, s, path)
		if err != nil {
			return nil, err
		}
		return data.TimeFromMillis(int32(ms)), nil
	}
	return nil, fmt.Errorf("%sunknown logical type %q", at(path), s.Name)
}

// rescale brings a parsed decimal to the schema's scale without losing digits.
func rescale(d data.Decimal, scale int32, path string) (data.Decimal, error) {
	if d.Scale == scale {
		return d, nil
	}
	if d.Scale < scale {
		f := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-d.Scale)), nil)
		return data.Decimal{Unscaled: new(big.Int).Mul(d.Unscaled, f), Scale: scale}, nil
	}
	f := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale-scale)), nil)
	q, r := new(big.Int).QuoRem(d.Unscaled, f, new(big.Int))
	if r.Sign() != 0 {
		return data.Decimal{}, fmt.Errorf("%sdecimal %s has more than %d digits after the point", at(path), d, scale)
	}
	return data.Decimal{Unscaled: q, Scale: scale}, nil
}
