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

// valueToKey builds the key from fields of the value. A nested path keeps
// its structs in the key: fields=a.b gives the key {a: {b: ...}}.
type valueToKey struct {
	structs     structEdit
	maps        mapEdit
	withDefault bool
}

func newValueToKey(o *Options) Transformation {
	v2 := o.syntaxV2()
	trie := o.trieOption("fields", o.paths("fields", o.RequiredList("fields"), v2))
	t := &valueToKey{withDefault: o.nullDefault()}
	t.structs = structEdit{trie: trie, dropOthers: true, anonymous: true, pathOrder: true,
		missing: func(p fieldPath, _ bool) (*data.Field, error) {
			return nil, fmt.Errorf("field %q is not in the value schema", p)
		}}
	// Schemaless, a missing field is a null in the key, as in Kafka.
	t.maps = mapEdit{trie: trie, dropOthers: true,
		missing: func(_ fieldPath, parentFound bool) (any, bool, error) { return nil, parentFound, nil }}
	return t
}

func (t *valueToKey) Apply(r *Record) (*Record, error) {
	if r.ValueSchema == nil {
		m, err := requireMap(r.Value, "ValueToKey")
		if err != nil {
			return nil, err
		}
		key, err := t.maps.apply(m)
		if err != nil {
			return nil, err
		}
		r.KeySchema, r.Key = nil, key
		return r, nil
	}
	st, err := requireStruct(r.ValueSchema, r.Value, "ValueToKey")
	if err != nil {
		return nil, err
	}
	p, err := t.structs.plan(r.ValueSchema)
	if err != nil {
		return nil, err
	}
	key, err := p.apply(st, t.withDefault, nil)
	if err != nil {
		return nil, err
	}
	r.KeySchema, r.Key = p.schema, key
	return r, nil
}

// ---- ExtractField ----

type extractField struct {
	side        side
	path        fieldPath
	withDefault bool
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
		x, err := mapValueAt(m, t.path)
		if err != nil {
			return nil, fmt.Errorf("ExtractField: %w", err)
		}
		t.side.set(r, nil, x)
		return r, nil
	}
	if schema.Type != data.TypeStruct {
		return nil, fmt.Errorf("ExtractField needs a struct schema, found %s", schema.Type)
	}
	f := schemaFieldAt(schema, t.path)
	if f == nil {
		return nil, fmt.Errorf("field %q is not in the %s schema", t.path, t.side)
	}
	if v == nil {
		t.side.set(r, f.Schema, nil)
		return r, nil
	}
	st, err := requireStruct(schema, v, "ExtractField")
	if err != nil {
		return nil, err
	}
	t.side.set(r, f.Schema, structValueAt(st, t.path, t.withDefault))
	return r, nil
}

// ---- HoistField ----

// hoistField wraps the data in a struct (or map) with one field; a nested
// path wraps it in one struct per step: field=a.b gives {a: {b: data}}.
type hoistField struct {
	side  side
	path  fieldPath
	cache schemaCache
}

func (t *hoistField) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if schema == nil {
		for i := len(t.path) - 1; i >= 0; i-- {
			v = map[string]any{t.path[i]: v}
		}
		t.side.set(r, nil, v)
		return r, nil
	}
	ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		for i := len(t.path) - 1; i >= 0; i-- {
			in = data.StructOf("", data.F(t.path[i], in))
		}
		return in, nil
	})
	levels := make([]*data.Schema, len(t.path)) // from the outer struct in
	for i, s := 0, ns; i < len(t.path); i, s = i+1, s.Fields[0].Schema {
		levels[i] = s
	}
	for i := len(levels) - 1; i >= 0; i-- {
		v = data.NewStructTrusted(levels[i], []any{v})
	}
	t.side.set(r, ns, v)
	return r, nil
}

// ---- Flatten ----

func init() {
	registerTransform(&TransformType{Class: kafkaPrefix + "ValueToKey", Aliases: []string{"ValueToKey"},
		Doc: "Replaces the record key with a struct (or map) of fields of the value.",
		Options: []Option{{Name: "fields", Type: "LIST", Required: true, Doc: "Fields of the value to put in the key."},
			syntaxOption, nullDefaultOption},
		New: newValueToKey})
	registerBoth("ExtractField", "Replaces a struct or map with one of its fields",
		[]Option{{Name: "field", Required: true, Doc: "The field to extract."}, syntaxOption, nullDefaultOption},
		func(o *Options, s side) Transformation {
			v2 := o.syntaxV2()
			o.Required("field")
			return &extractField{side: s, path: o.path("field", v2), withDefault: o.nullDefault()}
		})
	registerBoth("HoistField", "Wraps the data in a struct or map with one field",
		[]Option{{Name: "field", Required: true, Doc: "Name of the single field; with V2, a path gives one struct per step."}, syntaxOption},
		func(o *Options, s side) Transformation {
			v2 := o.syntaxV2()
			o.Required("field")
			return &hoistField{side: s, path: o.path("field", v2), cache: schemaCache{}}
		})
}
