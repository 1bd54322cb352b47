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

type valueToKey struct {
	fields []string
	cache  schemaCache
}

func (t *valueToKey) Apply(r *Record) (*Record, error) {
	if r.ValueSchema == nil {
		m, err := requireMap(r.Value, "ValueToKey")
		if err != nil {
			return nil, err
		}
		key := make(map[string]any, len(t.fields))
		for _, f := range t.fields {
			key[f] = m[f]
		}
		r.KeySchema, r.Key = nil, key
		return r, nil
	}
	st, err := requireStruct(r.ValueSchema, r.Value, "ValueToKey")
	if err != nil {
		return nil, err
	}
	ks, err := t.cache.get(r.ValueSchema, func(in *data.Schema) (*data.Schema, error) {
		fields := make([]data.Field, 0, len(t.fields))
		for _, name := range t.fields {
			f := in.Field(name)
			if f == nil {
				return nil, fmt.Errorf("field %q is not in the value schema", name)
			}
			fields = append(fields, data.F(name, f.Schema))
		}
		return data.StructOf("", fields...), nil
	})
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(t.fields))
	for i, f := range t.fields {
		vals[i] = st.Get(f)
	}
	r.KeySchema, r.Key = ks, data.NewStructTrusted(ks, vals)
	return r, nil
}

// ---- ExtractField ----

type extractField struct {
	side  side
	field string
}

func (t *extractField) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if schema == nil {
		if v == nil {
			return r, nil
		}
		m, err := requireMap(v, "ExtractField")
		if err != nil {
			return nil, err
		}
		t.side.set(r, nil, m[t.field])
		return r, nil
	}
	if schema.Type != data.TypeStruct {
		return nil, fmt.Errorf("ExtractField needs a struct schema, found %s", schema.Type)
	}
	f := schema.Field(t.field)
	if f == nil {
		return nil, fmt.Errorf("field %q is not in the %s schema", t.field, t.side)
	}
	if v == nil {
		t.side.set(r, f.Schema, nil)
		return r, nil
	}
	st, err := requireStruct(schema, v, "ExtractField")
	if err != nil {
		return nil, err
	}
	t.side.set(r, f.Schema, st.Get(t.field))
	return r, nil
}

// ---- HoistField ----

type hoistField struct {
	side  side
	field string
	cache schemaCache
}

func (t *hoistField) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if schema == nil {
		t.side.set(r, nil, map[string]any{t.field: v})
		return r, nil
	}
	ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		return data.StructOf("", data.F(t.field, in)), nil
	})
	t.side.set(r, ns, data.NewStructTrusted(ns, []any{v}))
	return r, nil
}

// ---- Flatten ----

func init() {
	registerTransform(&TransformType{Class: kafkaPrefix + "ValueToKey", Aliases: []string{"ValueToKey"},
		Doc:     "Replaces the record key with a struct (or map) of fields of the value.",
		Options: []Option{{Name: "fields", Type: "LIST", Required: true, Doc: "Fields of the value to put in the key."}},
		New: func(o *Options) Transformation {
			return &valueToKey{fields: o.RequiredList("fields"), cache: schemaCache{}}
		}})
	registerBoth("ExtractField", "Replaces a struct or map with one of its fields",
		[]Option{{Name: "field", Required: true, Doc: "The field to extract."}},
		func(o *Options, s side) Transformation { return &extractField{side: s, field: o.Required("field")} })
	registerBoth("HoistField", "Wraps the data in a struct or map with one field",
		[]Option{{Name: "field", Required: true, Doc: "Name of the single field."}},
		func(o *Options, s side) Transformation {
			return &hoistField{side: s, field: o.Required("field"), cache: schemaCache{}}
		})
}
