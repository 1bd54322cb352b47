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
	"maps"
	"slices"
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

// insertion is one field InsertField adds: what it holds, its name and
// schema.
type insertion struct {
	what   string // "topic", "partition", "offset", "timestamp" or "static"
	spec   insertSpec
	schema *data.Schema
}

type insertField struct {
	side        side
	inserts     []insertion
	offset      bool // inserts the Kafka offset (sink records only)
	staticValue string
	cache       schemaCache
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
	schema, v := t.side.get(r)
	if v == nil {
		return r, nil // a tombstone or null key stays as it is
	}
	if t.offset && !r.Sink {
		return nil, fmt.Errorf("offset.field applies to sink records only (a source record has no Kafka offset yet)")
	}
	if schema == nil {
		m, err := requireMap(v, "InsertField")
		if err != nil {
			return nil, err
		}
		out := maps.Clone(m)
		for i := range t.inserts {
			in := &t.inserts[i]
			val := t.value(in, r)
			if val == nil {
				continue // like Kafka: no partition or timestamp, no field
			}
			if in.what == "timestamp" {
				val = r.Timestamp.UnixMilli() // schemaless timestamps are epoch milliseconds
			}
			out[in.spec.name] = val
		}
		t.side.set(r, nil, out)
		return r, nil
	}
	st, err := requireStruct(schema, v, "InsertField")
	if err != nil {
		return nil, err
	}
	ns, err := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		fields := slices.Clone(in.Fields)
		for _, x := range t.inserts {
			if in.Field(x.spec.name) != nil {
				return nil, fmt.Errorf("field %q to insert already exists in the schema", x.spec.name)
			}
			fields = append(fields, data.F(x.spec.name, x.schema))
		}
		return structCopy(in, fields), nil
	})
	if err != nil {
		return nil, err
	}
	vals := appendStructValues(make([]any, 0, len(ns.Fields)), st)
	for i := range t.inserts {
		in := &t.inserts[i]
		val := t.value(in, r)
		if val == nil && !in.spec.optional {
			return nil, fmt.Errorf("field %q is required (no ? suffix) but the record has no %s", in.spec.name, in.what)
		}
		vals = append(vals, val)
	}
	t.side.set(r, ns, data.NewStructTrusted(ns, vals))
	return r, nil
}

func newInsertField(o *Options, s side) Transformation {
	t := &insertField{side: s, cache: schemaCache{}, staticValue: o.String("static.value", "")}
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
		schema := x.schema
		if spec.optional {
			schema = schema.AsOptional()
		}
		t.inserts = append(t.inserts, insertion{what: x.what, spec: *spec, schema: schema})
		t.offset = t.offset || x.what == "offset"
		if x.what == "static" && t.staticValue == "" {
			o.Fail("static.value", "static.field is set, so set static.value too")
		}
	}
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
		},
		newInsertField)
}
