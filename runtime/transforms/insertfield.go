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
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

type insertSpec struct {
	name     string
	optional bool
}

func parseInsertSpec(s string) *insertSpec {
	if s == "" {
		return nil
	}
	switch {
	case strings.HasSuffix(s, "!"):
		return &insertSpec{name: strings.TrimSuffix(s, "!")}
	case strings.HasSuffix(s, "?"):
		return &insertSpec{name: strings.TrimSuffix(s, "?"), optional: true}
	}
	return &insertSpec{name: s, optional: true}
}

// insertion is one field InsertField adds: what it holds, its path and
// schema.
type insertion struct {
	what   string // "topic", "partition", "offset", "timestamp" or "static"
	path   fieldPath
	spec   insertSpec
	schema *data.Schema
}

// insertField adds fields from the record's metadata. With V2 paths, a
// field goes into the nested struct (or map) its path names, which must
// exist.
type insertField struct {
	side        side
	inserts     map[string]*insertion // by path key
	offset      bool                  // inserts the Kafka offset (sink records only)
	staticValue string
	withDefault bool
	structs     structEdit
}

// value returns what an insertion holds for r; nil when r has none.
func (t *insertField) value(in *insertion, r *Record) any {
	switch in.what {
	case "topic":
		return r.Topic
	case "partition":
		if r.Partition != nil {
			return *r.Partition
		}
	case "offset":
		return r.Offset
	case "timestamp":
		if !r.Timestamp.IsZero() {
			return r.Timestamp
		}
	case "static":
		return t.staticValue
	}
	return nil
}

func (t *insertField) Apply(r *Record) (*Record, error) {
	if _, v := t.side.get(r); v == nil {
		return r, nil // a tombstone or null key stays as it is
	}
	if t.offset && !r.Sink {
		return nil, fmt.Errorf("offset.field applies to sink records only (a source record has no Kafka offset yet)")
	}
	// Without a schema, like Kafka: no partition or timestamp, no field;
	// an entry of the name is replaced. A nested map that is missing gets
	// nothing.
	mapValue := func(p fieldPath) (any, bool) {
		in := t.inserts[p.key()]
		val := t.value(in, r)
		if in.what == "timestamp" && val != nil {
			val = r.Timestamp.UnixMilli() // schemaless timestamps are epoch milliseconds
		}
		return val, val != nil
	}
	maps := mapEdit{trie: t.structs.trie,
		entry: func(p fieldPath, name string, old any) (string, any, bool, error) {
			if val, ok := mapValue(p); ok {
				return name, val, true, nil
			}
			return name, old, true, nil
		},
		missing: func(p fieldPath, parentFound bool) (any, bool, error) {
			val, ok := mapValue(p)
			return val, ok && parentFound, nil
		}}
	return rewrite(r, t.side, "InsertField", &t.structs, &maps, t.withDefault, func(path fieldPath, _ *data.Schema, _ any) (any, error) {
		in := t.inserts[path.key()]
		val := t.value(in, r)
		if val == nil && !in.spec.optional {
			return nil, fmt.Errorf("field %q is required (no ? suffix) but the record has no %s", path, in.what)
		}
		return val, nil
	})
}

func newInsertField(o *Options, s side) Transformation {
	t := &insertField{side: s, inserts: map[string]*insertion{}, staticValue: o.String("static.value", ""),
		withDefault: o.nullDefault()}
	v2 := o.syntaxV2()
	var paths []fieldPath
	for _, x := range []struct {
		what, option string
		schema       *data.Schema
	}{
		{"topic", "topic.field", data.StringSchema},
		{"partition", "partition.field", data.Int32Schema},
		{"offset", "offset.field", data.Int64Schema},
		{"timestamp", "timestamp.field", data.TimestampSchema()},
		{"static", "static.field", data.StringSchema},
	} {
		spec := parseInsertSpec(o.String(x.option, ""))
		if spec == nil {
			continue
		}
		path, err := parseFieldPath(spec.name, v2)
		if err != nil {
			o.Fail(x.option, "%v", err)
			continue
		}
		if t.inserts[path.key()] != nil {
			o.Fail(x.option, "inserts field %q, which another option inserts too: give each its own field", path)
			continue
		}
		schema := x.schema
		if spec.optional {
			schema = schema.AsOptional()
		}
		t.inserts[path.key()] = &insertion{what: x.what, path: path, spec: *spec, schema: schema}
		paths = append(paths, path)
		t.offset = t.offset || x.what == "offset"
		if x.what == "static" && t.staticValue == "" {
			o.Fail("static.value", "static.field is set, so set static.value too")
		}
	}
	t.structs = structEdit{trie: o.trieOption("topic.field", paths),
		field: func(p fieldPath, _ data.Field) (data.Field, bool, error) {
			return data.Field{}, false, fmt.Errorf("field %q to insert already exists in the schema", p)
		},
		missing: func(p fieldPath, parentFound bool) (*data.Field, error) {
			if !parentFound {
				return nil, fmt.Errorf("field %q to insert needs the struct %q, which is not in the %s schema", p, p.parent(), s)
			}
			f := data.F(p.last(), t.inserts[p.key()].schema)
			return &f, nil
		}}
	return t
}

// ---- ReplaceField ----

func init() {
	registerBoth("InsertField", "Inserts fields from the record's metadata (topic, partition, offset, timestamp) or a static value",
		[]Option{
			{Name: "topic.field", Doc: "Field for the topic; a trailing ! makes it required, ? (the default) optional."},
			{Name: "partition.field", Doc: "Field for the Kafka partition."},
			{Name: "offset.field", Doc: "Field for the Kafka offset (sink connectors only)."},
			{Name: "timestamp.field", Doc: "Field for the record timestamp."},
			{Name: "static.field", Doc: "Field for a static value."},
			{Name: "static.value", Doc: "The static value."},
			syntaxOption, nullDefaultOption,
		},
		newInsertField)
}
