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

package transforms

import (
	"fmt"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// kafkaPrefix is the package of Kafka's built-in transforms.
const kafkaPrefix = "org.apache.kafka.connect.transforms."

// side selects the key or the value of a record.
type side bool

const (
	keySide   side = true
	valueSide side = false
)

func (s side) String() string {
	if s == keySide {
		return "key"
	}
	return "value"
}

func (s side) get(r *Record) (*data.Schema, any) {
	if s == keySide {
		return r.KeySchema, r.Key
	}
	return r.ValueSchema, r.Value
}

func (s side) set(r *Record, schema *data.Schema, v any) {
	if s == keySide {
		r.KeySchema, r.Key = schema, v
	} else {
		r.ValueSchema, r.Value = schema, v
	}
}

// registerBoth registers name$Key and name$Value.
func registerBoth(name, doc string, opts []Option, mk func(o *Options, s side) Transformation) {
	for _, s := range []side{keySide, valueSide} {
		suffix := "$Value"
		if s == keySide {
			suffix = "$Key"
		}
		registerTransform(&TransformType{Class: kafkaPrefix + name + suffix, Aliases: []string{name + suffix},
			Doc: doc + " (on the record " + s.String() + ")", Options: opts,
			New: func(o *Options) Transformation { return mk(o, s) }})
	}
}

// derivedCache remembers what a transformation derived from each input
// schema (an output schema, a rewrite plan), so a stream of records of one
// schema shares one output schema (converters cache per schema). It is
// bounded; a chain runs on one goroutine.
type derivedCache[V any] map[*data.Schema]V

// schemaCache remembers the output schema of each input schema.
type schemaCache = derivedCache[*data.Schema]

func (c derivedCache[V]) get(in *data.Schema, derive func(*data.Schema) (V, error)) (V, error) {
	if out, ok := c[in]; ok {
		return out, nil
	}
	out, err := derive(in)
	if err != nil {
		return out, err
	}
	if len(c) >= 1024 {
		clear(c)
	}
	c[in] = out
	return out, nil
}

// structCopy returns a struct schema with in's name, version, doc,
// parameters and optionality and the given fields.
func structCopy(in *data.Schema, fields []data.Field) *data.Schema {
	out := data.StructOf(in.Name, fields...)
	out.Optional, out.Version, out.Doc, out.Parameters = in.Optional, in.Version, in.Doc, in.Parameters
	return out
}

// requireStruct returns v as a struct of a struct schema.
func requireStruct(schema *data.Schema, v any, purpose string) (*data.Struct, error) {
	st, ok := v.(*data.Struct)
	if !ok || schema == nil || schema.Type != data.TypeStruct {
		return nil, fmt.Errorf("%s needs a struct with a struct schema, found %T with schema type %s", purpose, v, schemaType(schema))
	}
	return st, nil
}

// requireMap returns a schemaless value as a map.
func requireMap(v any, purpose string) (map[string]any, error) {
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%s needs a map with string keys, found a %T key", purpose, k)
			}
			out[ks] = x
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s needs a map when the record has no schema, found %T", purpose, v)
}

func schemaType(s *data.Schema) string {
	if s == nil {
		return "none"
	}
	return string(s.Type)
}

// structValues returns the field values of st (defaults applied).
func structValues(st *data.Struct) []any {
	vals := make([]any, len(st.Schema().Fields))
	for i := range vals {
		vals[i] = fieldAt(st, i)
	}
	return vals
}

// fieldAt returns the value of field i of st (its default when unset).
func fieldAt(st *data.Struct, i int) any {
	if v := st.GetIndex(i); v != nil {
		return v
	}
	return st.Schema().Fields[i].Schema.Default
}

// ---- InsertField ----
