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

// schemaCache remembers the derived schema of each input schema, so a
// stream of records of one schema shares one output schema (converters
// cache per schema). It is bounded; a chain runs on one goroutine.
type schemaCache map[*data.Schema]*data.Schema

func (c schemaCache) get(in *data.Schema, derive func(*data.Schema) (*data.Schema, error)) (*data.Schema, error) {
	if out, ok := c[in]; ok {
		return out, nil
	}
	out, err := derive(in)
	if err != nil {
		return nil, err
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
	return appendStructValues(make([]any, 0, len(st.Schema().Fields)), st)
}

// fieldAt returns the value of field i of st (its default when unset).
func fieldAt(st *data.Struct, i int) any {
	if v := st.GetIndex(i); v != nil {
		return v
	}
	return st.Schema().Fields[i].Schema.Default
}

// appendStructValues appends the field values of st (defaults applied).
func appendStructValues(dst []any, st *data.Struct) []any {
	for i := range st.Schema().Fields {
		dst = append(dst, fieldAt(st, i))
	}
	return dst
}

// ---- InsertField ----

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

type replaceField struct {
	side             side
	exclude, include map[string]bool
	renames          map[string]string
	cache            schemaCache
}

func (t *replaceField) keep(name string) bool {
	return !t.exclude[name] && (len(t.include) == 0 || t.include[name])
}

func (t *replaceField) rename(name string) string {
	if n, ok := t.renames[name]; ok {
		return n
	}
	return name
}

func (t *replaceField) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if v == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(v, "ReplaceField")
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			if t.keep(k) {
				out[t.rename(k)] = x
			}
		}
		t.side.set(r, nil, out)
		return r, nil
	}
	st, err := requireStruct(schema, v, "ReplaceField")
	if err != nil {
		return nil, err
	}
	ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		var fields []data.Field
		for _, f := range in.Fields {
			if t.keep(f.Name) {
				fields = append(fields, data.F(t.rename(f.Name), f.Schema))
			}
		}
		return structCopy(in, fields), nil
	})
	vals := make([]any, 0, len(ns.Fields))
	for i, f := range schema.Fields {
		if t.keep(f.Name) {
			vals = append(vals, fieldAt(st, i))
		}
	}
	t.side.set(r, ns, data.NewStructTrusted(ns, vals))
	return r, nil
}

func newReplaceField(o *Options, s side) Transformation {
	t := &replaceField{side: s, exclude: map[string]bool{}, include: map[string]bool{}, renames: map[string]string{}, cache: schemaCache{}}
	for _, f := range o.List("exclude", "blacklist") {
		t.exclude[f] = true
	}
	for _, f := range o.List("include", "whitelist") {
		t.include[f] = true
	}
	for _, p := range o.List("renames") {
		from, to, ok := strings.Cut(p, ":")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			o.Fail("renames", "%q is not of the form old:new", p)
			continue
		}
		t.renames[from] = to
	}
	return t
}

// ---- MaskField ----

type maskField struct {
	side        side
	fields      map[string]bool
	replacement string
	hasRepl     bool
}

func (t *maskField) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if v == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(v, "MaskField")
		if err != nil {
			return nil, err
		}
		out := maps.Clone(m)
		for f := range t.fields {
			x, ok := m[f]
			if !ok || x == nil {
				continue
			}
			mv, err := t.mask(nil, x)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f, err)
			}
			out[f] = mv
		}
		t.side.set(r, nil, out)
		return r, nil
	}
	st, err := requireStruct(schema, v, "MaskField")
	if err != nil {
		return nil, err
	}
	vals := structValues(st)
	for i, f := range schema.Fields {
		if !t.fields[f.Name] || vals[i] == nil {
			continue
		}
		mv, err := t.mask(f.Schema, vals[i])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		vals[i] = mv
	}
	t.side.set(r, schema, data.NewStructTrusted(schema, vals))
	return r, nil
}

// mask returns the masked form of v: the replacement converted to v's
// type, or the zero value of v's type.
func (t *maskField) mask(schema *data.Schema, v any) (any, error) {
	if schema != nil && schema.IsLogical() {
		if t.hasRepl {
			return nil, fmt.Errorf("a replacement cannot mask a %s value", schema.Name)
		}
		switch schema.Name {
		case data.DecimalName:
			scale, _ := data.DecimalScale(schema)
			return data.NewDecimal(0, scale), nil
		default:
			return data.TimestampFromMillis(0), nil
		}
	}
	if t.hasRepl {
		switch v.(type) {
		case string:
			return t.replacement, nil
		case int8, int16, int32, int64, float32, float64:
			out, err := castPrimitive(t.replacement, kindOf(v))
			if err != nil {
				return nil, fmt.Errorf("replacement does not fit a %s field: %w", kindOf(v), err)
			}
			return out, nil
		}
		return nil, fmt.Errorf("a replacement can mask numbers and strings only, not %T", v)
	}
	switch x := v.(type) {
	case int8:
		return int8(0), nil
	case int16:
		return int16(0), nil
	case int32:
		return int32(0), nil
	case int64:
		return int64(0), nil
	case float32:
		return float32(0), nil
	case float64:
		return float64(0), nil
	case bool:
		return false, nil
	case string:
		return "", nil
	case []byte:
		return []byte{}, nil
	case []any:
		return []any{}, nil
	case map[string]any:
		return map[string]any{}, nil
	case map[any]any:
		return map[any]any{}, nil
	case data.Decimal:
		return data.NewDecimal(0, x.Scale), nil
	}
	return nil, fmt.Errorf("cannot mask a value of Go type %T", v)
}

// ---- ValueToKey ----

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

type setSchemaMetadata struct {
	side    side
	name    string
	version int
	cache   schemaCache
}

func (t *setSchemaMetadata) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if schema == nil {
		return nil, fmt.Errorf("SetSchemaMetadata needs a %s schema; the record has none", t.side)
	}
	ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		c := *in
		if t.name != "" {
			c.Name = t.name
		}
		if t.version != 0 {
			c.Version = int32(t.version)
		}
		return &c, nil
	})
	if st, ok := v.(*data.Struct); ok && ns.Type == data.TypeStruct {
		v = data.NewStructTrusted(ns, structValues(st))
	}
	t.side.set(r, ns, v)
	return r, nil
}

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
	registerBoth("ReplaceField", "Keeps, drops and renames fields",
		[]Option{
			{Name: "exclude", Type: "LIST", Doc: "Fields to drop (old name: blacklist)."},
			{Name: "include", Type: "LIST", Doc: "Fields to keep; empty keeps all (old name: whitelist)."},
			{Name: "renames", Type: "LIST", Doc: "Renames as old:new pairs, comma-separated."},
			{Name: "blacklist", Type: "LIST", Doc: "Old name of exclude."},
			{Name: "whitelist", Type: "LIST", Doc: "Old name of include."},
		}, newReplaceField)
	registerBoth("MaskField", "Replaces fields with the zero value of their type, or a replacement",
		[]Option{
			{Name: "fields", Type: "LIST", Required: true, Doc: "Fields to mask."},
			{Name: "replacement", Doc: "Replacement for numeric and string fields; empty masks with the type's zero value."},
		},
		func(o *Options, s side) Transformation {
			t := &maskField{side: s, fields: map[string]bool{}}
			for _, f := range o.RequiredList("fields") {
				t.fields[f] = true
			}
			t.replacement, t.hasRepl = o.raw("replacement")
			return t
		})
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
	registerBoth("Flatten", "Flattens nested structs and maps into one level, joining names with the delimiter",
		[]Option{{Name: "delimiter", Default: ".", Doc: "Text between the names of a parent and its child field."}},
		func(o *Options, s side) Transformation {
			d, ok := o.values["delimiter"]
			if !ok {
				d = "."
			}
			return &flatten{side: s, delim: d, cache: schemaCache{}}
		})
	registerBoth("SetSchemaMetadata", "Sets the name and/or version of the schema",
		[]Option{{Name: "schema.name", Doc: "Schema name to set."}, {Name: "schema.version", Type: "INT", Doc: "Schema version to set."}},
		func(o *Options, s side) Transformation {
			t := &setSchemaMetadata{side: s, name: o.String("schema.name", ""), version: o.Int("schema.version", 0), cache: schemaCache{}}
			if t.name == "" && t.version == 0 && len(o.Errors()) == 0 {
				o.Fail("schema.name", "set schema.name, schema.version or both")
			}
			return t
		})
}
