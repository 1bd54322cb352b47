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
	"github.com/conveyor-dev/conveyor/runtime/data"
)

type flatten struct {
	side  side
	delim string
	cache schemaCache
}

func (t *flatten) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if v == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(v, "Flatten")
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		if err := t.flattenMap(m, "", out); err != nil {
			return nil, err
		}
		t.side.set(r, nil, out)
		return r, nil
	}
	st, err := requireStruct(schema, v, "Flatten")
	if err != nil {
		return nil, err
	}
	ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		var fields []data.Field
		t.flattenSchema(in, "", in.Optional, &fields)
		return structCopy(in, fields), nil
	})
	vals := make([]any, 0, len(ns.Fields))
	t.flattenStruct(schema, st, &vals)
	t.side.set(r, ns, data.NewStructTrusted(ns, vals))
	return r, nil
}

func (t *flatten) name(prefix, n string) string {
	if prefix == "" {
		return n
	}
	return prefix + t.delim + n
}

func (t *flatten) flattenMap(m map[string]any, prefix string, out map[string]any) error {
	for k, v := range m {
		name := t.name(prefix, k)
		switch x := v.(type) {
		case map[string]any:
			if err := t.flattenMap(x, name, out); err != nil {
				return err
			}
		case map[any]any:
			sm, err := requireMap(x, "Flatten")
			if err != nil {
				return err
			}
			if err := t.flattenMap(sm, name, out); err != nil {
				return err
			}
		default:
			out[name] = v
		}
	}
	return nil
}

func (t *flatten) flattenSchema(s *data.Schema, prefix string, optional bool, out *[]data.Field) {
	for _, f := range s.Fields {
		name := t.name(prefix, f.Name)
		opt := optional || f.Schema.Optional
		if f.Schema.Type == data.TypeStruct {
			t.flattenSchema(f.Schema, name, opt, out)
			continue
		}
		fs := f.Schema
		if opt && !fs.Optional {
			fs = fs.AsOptional()
		}
		*out = append(*out, data.F(name, fs))
	}
}

func (t *flatten) flattenStruct(s *data.Schema, st *data.Struct, out *[]any) {
	for i, f := range s.Fields {
		var v any
		if st != nil {
			v = fieldAt(st, i)
		}
		if f.Schema.Type == data.TypeStruct {
			child, _ := v.(*data.Struct)
			t.flattenStruct(f.Schema, child, out)
			continue
		}
		*out = append(*out, v)
	}
}

// ---- SetSchemaMetadata ----

func init() {
	registerBoth("Flatten", "Flattens nested structs and maps into one level, joining names with the delimiter",
		[]Option{{Name: "delimiter", Default: ".", Doc: "Text between the names of a parent and its child field."}},
		func(o *Options, s side) Transformation {
			d, ok := o.values["delimiter"]
			if !ok {
				d = "."
			}
			return &flatten{side: s, delim: d, cache: schemaCache{}}
		})
}
