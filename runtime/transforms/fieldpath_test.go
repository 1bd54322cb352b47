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
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

func TestParseFieldPath(t *testing.T) {
	cases := []struct {
		text string
		v2   bool
		want []string
		err  string // part of the error; "" for none
	}{
		{text: "shop.order.total", want: []string{"shop.order.total"}}, // V1: one name, dots and all
		{text: "`shop.order`", want: []string{"`shop.order`"}},         // V1: backticks are characters
		{text: "shop.order.total", v2: true, want: []string{"shop", "order", "total"}},
		{text: "total", v2: true, want: []string{"total"}},
		{text: "`shop.order`.total", v2: true, want: []string{"shop.order", "total"}},
		{text: "shop.`order.total`", v2: true, want: []string{"shop", "order.total"}},
		{text: "`shop`.total", v2: true, want: []string{"shop", "total"}}, // wrapping without dots
		{text: "sh`op.total", v2: true, want: []string{"sh`op", "total"}}, // a backtick inside a bare step
		{text: "`sh`op.x`.y", v2: true, want: []string{"sh`op.x", "y"}},   // a backtick not before a dot is a character
		{text: "`tag\\`.v1`.n", v2: true, want: []string{"tag`.v1", "n"}}, // an escaped closing backtick
		{text: "`a\\b`.c", v2: true, want: []string{"a\\b", "c"}},         // a backslash elsewhere is a character
		{text: "``", v2: true, want: []string{""}},                        // the empty name, explicitly
		{text: "`x``.y", v2: true, want: []string{"x`", "y"}},             // a name ending in a backtick
		{text: "`shop.order", v2: true, err: "opens a backtick at position 0 that nothing closes"},
		{text: "shop.`order.total", v2: true, err: "position 5"},
		{text: "shop.`total\\`", v2: true, err: "position 5"}, // an escaped backtick cannot close
		{text: "shop..total", v2: true, err: "empty field name at position 5"},
		{text: ".total", v2: true, err: "empty field name at position 0"},
		{text: "shop.", v2: true, err: "ends with a dot"},
		{text: "`shop`.", v2: true, err: "ends with a dot"},
	}
	for _, tc := range cases {
		got, err := parseFieldPath(tc.text, tc.v2)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parse %q (v2=%v): err %v, want one containing %q", tc.text, tc.v2, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("parse %q (v2=%v) = %q, %v; want %q", tc.text, tc.v2, []string(got), err, tc.want)
		}
	}
	// String renders a path that parses back to itself.
	for _, p := range []fieldPath{{"shop.order", "total"}, {"a", "tag`.v1", "n"}, {"x", ""}} {
		back, err := parseFieldPath(p.String(), true)
		if err != nil || !slices.Equal(back, p) {
			t.Errorf("%q rendered %s, parsed back as %q (%v)", []string(p), p, []string(back), err)
		}
	}
}

// pair and obj build a nested record in field order, from which tests
// derive the schemaless map and the struct with an inferred schema.
type pair struct {
	k string
	v any
}

type obj []pair

func o(kv ...any) obj {
	var out obj
	for i := 0; i < len(kv); i += 2 {
		out = append(out, pair{kv[i].(string), kv[i+1]})
	}
	return out
}

// asMapValue is the schemaless form of v.
func asMapValue(v any) any {
	if x, ok := v.(obj); ok {
		m := map[string]any{}
		for _, p := range x {
			m[p.k] = asMapValue(p.v)
		}
		return m
	}
	return v
}

// schemaOf infers an optional schema for a value of a test record.
func schemaOf(t *testing.T, v any) *data.Schema {
	switch x := v.(type) {
	case obj:
		var fields []data.Field
		for _, p := range x {
			fields = append(fields, data.F(p.k, schemaOf(t, p.v)))
		}
		return data.StructOf("", fields...).AsOptional()
	case int32:
		return data.OptionalInt32Schema
	case int64:
		return data.OptionalInt64Schema
	case string:
		return data.OptionalStringSchema
	case time.Time:
		return data.TimestampSchema().AsOptional()
	}
	t.Fatalf("no schema for %T", v)
	return nil
}

// asStructValue is the struct form of v under schema s.
func asStructValue(s *data.Schema, v any) any {
	x, ok := v.(obj)
	if !ok {
		return v
	}
	vals := make([]any, len(x))
	for i, p := range x {
		vals[i] = asStructValue(s.Fields[i].Schema, p.v)
	}
	return data.NewStructTrusted(s, vals)
}

// plain renders a struct (recursively) as a map of its raw field values,
// so results compare with the schemaless form; it checks the struct
// against its schema on the way.
func plain(t *testing.T, v any) any {
	t.Helper()
	switch x := v.(type) {
	case *data.Struct:
		if err := x.Validate(); err != nil {
			t.Fatalf("transformed struct is invalid: %v", err)
		}
		m := map[string]any{}
		for i, f := range x.Schema().Fields {
			m[f.Name] = plain(t, x.GetIndex(i))
		}
		return m
	case map[string]any:
		m := map[string]any{}
		for k, y := range x {
			m[k] = plain(t, y)
		}
		return m
	}
	return v
}

// TestKIP821Examples runs the scenarios of KIP-821 (in our own values):
// each transformation with field.syntax.version=V2 on nested fields and on
// field names holding dots, on schemaless maps and on structs.
func TestKIP821Examples(t *testing.T) {
	order := func() obj {
		return o("id", int32(7), "shop", o("order", o("total", "125", "at", "1700000000000")),
			"ship.to", o("zip", "75001"))
	}
	cases := []struct {
		name    string
		typ     string
		opts    map[string]string
		in      obj
		want    any            // the value after the transformation
		wantKey any            // the key, when the case checks it
		headers map[string]any // the headers, when the case checks them
	}{
		{name: "Cast a nested field", typ: "Cast$Value", opts: map[string]string{"spec": "id:string,shop.order.total:int64"},
			in: order(), want: map[string]any{"id": "7", "shop": map[string]any{"order": map[string]any{"total": int64(125), "at": "1700000000000"}},
				"ship.to": map[string]any{"zip": "75001"}}},
		{name: "Cast under a name with a dot", typ: "Cast$Value", opts: map[string]string{"spec": "`ship.to`.zip:int32"},
			in: order(), want: map[string]any{"id": int32(7), "shop": map[string]any{"order": map[string]any{"total": "125", "at": "1700000000000"}},
				"ship.to": map[string]any{"zip": int32(75001)}}},
		{name: "ExtractField a nested field", typ: "ExtractField$Value", opts: map[string]string{"field": "shop.order.total"},
			in: order(), want: "125"},
		{name: "ExtractField under a name with a dot", typ: "ExtractField$Value", opts: map[string]string{"field": "`ship.to`.zip"},
			in: order(), want: "75001"},
		{name: "ExtractField a nested struct", typ: "ExtractField$Value", opts: map[string]string{"field": "shop.order"},
			in: order(), want: map[string]any{"total": "125", "at": "1700000000000"}},
		{name: "HeaderFrom moves nested fields", typ: "HeaderFrom$Value",
			opts: map[string]string{"fields": "shop.order.total,`ship.to`.zip", "headers": "total,zip", "operation": "move"},
			in:   order(), want: map[string]any{"id": int32(7), "shop": map[string]any{"order": map[string]any{"at": "1700000000000"}},
				"ship.to": map[string]any{}},
			headers: map[string]any{"total": "125", "zip": "75001"}},
		{name: "HeaderFrom copies a nested field", typ: "HeaderFrom$Value",
			opts: map[string]string{"fields": "shop.order.at", "headers": "at", "operation": "copy"},
			in:   order(), want: asMapValue(order()), headers: map[string]any{"at": "1700000000000"}},
		{name: "HoistField into nested structs", typ: "HoistField$Value", opts: map[string]string{"field": "wrap.`v.1`"},
			in: o("id", int32(7)), want: map[string]any{"wrap": map[string]any{"v.1": map[string]any{"id": int32(7)}}}},
		{name: "InsertField into a nested struct", typ: "InsertField$Value",
			opts: map[string]string{"topic.field": "shop.order.topic", "static.field": "`ship.to`.country", "static.value": "FR"},
			in:   order(), want: map[string]any{"id": int32(7), "shop": map[string]any{"order": map[string]any{"total": "125", "at": "1700000000000", "topic": "orders"}},
				"ship.to": map[string]any{"zip": "75001", "country": "FR"}}},
		{name: "MaskField nested fields", typ: "MaskField$Value", opts: map[string]string{"fields": "shop.order.total,`ship.to`.zip"},
			in: order(), want: map[string]any{"id": int32(7), "shop": map[string]any{"order": map[string]any{"total": "", "at": "1700000000000"}},
				"ship.to": map[string]any{"zip": ""}}},
		{name: "ReplaceField excludes and renames nested fields", typ: "ReplaceField$Value",
			opts: map[string]string{"exclude": "shop.order.at", "renames": "`ship.to`.zip:postcode,id:order_id"},
			in:   order(), want: map[string]any{"order_id": int32(7), "shop": map[string]any{"order": map[string]any{"total": "125"}},
				"ship.to": map[string]any{"postcode": "75001"}}},
		{name: "ReplaceField includes a nested field", typ: "ReplaceField$Value", opts: map[string]string{"include": "shop.order.total"},
			in: order(), want: map[string]any{"shop": map[string]any{"order": map[string]any{"total": "125"}}}},
		{name: "TimestampConverter a nested field", typ: "TimestampConverter$Value",
			opts: map[string]string{"field": "shop.order.at", "target.type": "string", "format": "yyyy-MM-dd"},
			in:   o("shop", o("order", o("at", int64(1_700_000_000_000)))), want: map[string]any{"shop": map[string]any{"order": map[string]any{"at": "2023-11-14"}}}},
		{name: "ValueToKey nested fields keep their structs", typ: "ValueToKey",
			opts: map[string]string{"fields": "id,`ship.to`.zip,shop.order.total"},
			in:   order(), want: asMapValue(order()),
			wantKey: map[string]any{"id": int32(7), "ship.to": map[string]any{"zip": "75001"}, "shop": map[string]any{"order": map[string]any{"total": "125"}}}},
	}
	for _, tc := range cases {
		for _, withSchema := range []bool{false, true} {
			name := tc.name + " (schemaless)"
			if withSchema {
				name = tc.name + " (struct)"
			}
			t.Run(name, func(t *testing.T) {
				opts := map[string]string{"field.syntax.version": "v2"} // case-insensitive, as in Kafka
				for k, v := range tc.opts {
					opts[k] = v
				}
				var rec *Record
				if withSchema {
					s := schemaOf(t, tc.in)
					rec = sinkRec(s, asStructValue(s, tc.in))
				} else {
					rec = sinkRec(nil, asMapValue(tc.in))
				}
				out, err := one(t, tc.typ, opts).Apply(rec)
				if err != nil {
					t.Fatal(err)
				}
				if got := plain(t, out.Value); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("value = %#v\nwant %#v", got, tc.want)
				}
				if tc.wantKey != nil {
					if got := plain(t, out.Key); !reflect.DeepEqual(got, tc.wantKey) {
						t.Errorf("key = %#v\nwant %#v", got, tc.wantKey)
					}
				}
				for k, want := range tc.headers {
					h, ok := out.Headers.Last(k)
					if !ok || !reflect.DeepEqual(h.Value, want) {
						t.Errorf("header %s = %#v, want %#v", k, h, want)
					}
				}
				if withSchema && out.ValueSchema == nil {
					t.Error("the struct lost its schema")
				}
			})
		}
	}
}

// TestFieldPathsThatReachNothing pins what a path that leaves the data
// does: schemaless data stays as it is, a schema that lacks the field is
// refused by the transformations that need the field.
func TestFieldPathsThatReachNothing(t *testing.T) {
	v2 := func(opts map[string]string) map[string]string {
		opts["field.syntax.version"] = "V2"
		return opts
	}
	in := o("id", int32(7), "shop", o("name", "north"))
	s := schemaOf(t, in)
	cases := []struct {
		typ    string
		opts   map[string]string
		schema bool
		want   any    // the value, when it works
		err    string // part of the error, when it fails
	}{
		{typ: "Cast$Value", opts: v2(map[string]string{"spec": "shop.order.total:int64"}), want: asMapValue(in)},
		{typ: "Cast$Value", opts: v2(map[string]string{"spec": "id.total:int64"}), want: asMapValue(in)},
		{typ: "Cast$Value", opts: v2(map[string]string{"spec": "shop.order.total:int64"}), schema: true, want: asMapValue(in)},
		{typ: "MaskField$Value", opts: v2(map[string]string{"fields": "shop.order"}), want: asMapValue(in)},
		{typ: "ReplaceField$Value", opts: v2(map[string]string{"exclude": "shop.order"}), schema: true, want: asMapValue(in)},
		{typ: "ExtractField$Value", opts: v2(map[string]string{"field": "shop.order.total"}), want: nil},
		{typ: "ExtractField$Value", opts: v2(map[string]string{"field": "id.total"}), err: `"id" holds a int32, not a map`},
		{typ: "ExtractField$Value", opts: v2(map[string]string{"field": "shop.order"}), schema: true, err: `field "shop.order" is not in the value schema`},
		{typ: "TimestampConverter$Value", opts: v2(map[string]string{"field": "shop.at", "target.type": "unix"}), schema: true,
			err: `field "shop.at" is not in the value schema`},
		{typ: "HeaderFrom$Value", opts: v2(map[string]string{"fields": "shop.at", "headers": "h", "operation": "copy"}), schema: true,
			err: `field "shop.at" is not in the value schema`},
		{typ: "ValueToKey", opts: v2(map[string]string{"fields": "shop.zone.id"}), schema: true, err: `field "shop.zone.id" is not in the value schema`},
		{typ: "ValueToKey", opts: v2(map[string]string{"fields": "id,shop.zone.id"}), want: asMapValue(in)},
		{typ: "InsertField$Value", opts: v2(map[string]string{"topic.field": "shop.zone.topic"}), schema: true,
			err: `needs the struct "shop.zone", which is not in the value schema`},
		{typ: "InsertField$Value", opts: v2(map[string]string{"topic.field": "shop.name"}), schema: true,
			err: `field "shop.name" to insert already exists`},
		{typ: "InsertField$Value", opts: v2(map[string]string{"topic.field": "shop.zone.topic"}), want: asMapValue(in)},
	}
	for _, tc := range cases {
		rec := sinkRec(nil, asMapValue(in))
		if tc.schema {
			rec = sinkRec(s, asStructValue(s, in))
		}
		out, err := one(t, tc.typ, tc.opts).Apply(rec)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %v (schema %v): err %v, want one containing %s", tc.typ, tc.opts, tc.schema, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s %v (schema %v): %v", tc.typ, tc.opts, tc.schema, err)
		default:
			if got := plain(t, out.Value); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s %v (schema %v): value %#v, want %#v", tc.typ, tc.opts, tc.schema, got, tc.want)
			}
		}
	}
}

// TestKIP1040ReplaceNullWithDefault runs each transformation Kafka gives
// replace.null.with.default to on a struct whose field "n" is null and has
// the default 7: true reads the default, false keeps the null.
func TestKIP1040ReplaceNullWithDefault(t *testing.T) {
	at := time.UnixMilli(86_400_000).UTC()
	s := data.StructOf("row",
		data.F("id", data.Int32Schema),
		data.F("n", data.OptionalInt32Schema.WithDefault(int32(7))),
		data.F("at", data.TimestampSchema().AsOptional().WithDefault(at)))
	rec := func() *Record { return sinkRec(s, data.NewStruct(s).Put("id", int32(1))) }
	rawOf := func(v any, name string) any {
		st := v.(*data.Struct)
		return st.GetIndex(st.Schema().Field(name).Index)
	}
	valueN := func(r *Record) any { return rawOf(r.Value, "n") }
	cases := []struct {
		typ       string
		opts      map[string]string
		read      func(r *Record) any
		withDflt  any
		keepsNull any
	}{
		{"Cast$Value", map[string]string{"spec": "n:string"}, valueN, "7", nil},
		{"Cast$Value", map[string]string{"spec": "id:int64"}, valueN, int32(7), nil},
		{"ExtractField$Value", map[string]string{"field": "n"}, func(r *Record) any { return r.Value }, int32(7), nil},
		{"HeaderFrom$Value", map[string]string{"fields": "n", "headers": "h", "operation": "copy"},
			func(r *Record) any { h, _ := r.Headers.Last("h"); return h.Value }, int32(7), nil},
		{"HeaderFrom$Value", map[string]string{"fields": "id", "headers": "h", "operation": "move"}, valueN, int32(7), nil},
		{"InsertField$Value", map[string]string{"topic.field": "topic"}, valueN, int32(7), nil},
		{"MaskField$Value", map[string]string{"fields": "n"}, valueN, int32(0), nil},
		{"ReplaceField$Value", map[string]string{"exclude": "id"}, valueN, int32(7), nil},
		{"SetSchemaMetadata$Value", map[string]string{"schema.name": "renamed"}, valueN, int32(7), nil},
		{"TimestampConverter$Value", map[string]string{"field": "at", "target.type": "unix"},
			func(r *Record) any { return rawOf(r.Value, "at") }, int64(86_400_000), nil},
		{"TimestampConverter$Value", map[string]string{"field": "at", "target.type": "unix"}, valueN, int32(7), nil},
		{"ValueToKey", map[string]string{"fields": "n"}, func(r *Record) any { return rawOf(r.Key, "n") }, int32(7), nil},
	}
	for _, tc := range cases {
		for _, setting := range []string{"", "true", "false"} {
			opts := map[string]string{}
			for k, v := range tc.opts {
				opts[k] = v
			}
			want := tc.withDflt
			if setting != "" {
				opts["replace.null.with.default"] = setting
			}
			if setting == "false" {
				want = tc.keepsNull
			}
			out, err := one(t, tc.typ, opts).Apply(rec())
			if err != nil {
				t.Fatalf("%s %v: %v", tc.typ, opts, err)
			}
			if got := tc.read(out); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %v: got %#v, want %#v", tc.typ, opts, got, want)
			}
		}
	}
}

// TestFieldPathOptionErrors: a malformed path, an unknown syntax version,
// overlapping paths and a bad boolean are refused at validation, naming
// the key.
func TestFieldPathOptionErrors(t *testing.T) {
	cases := []struct {
		typ     string
		opts    map[string]string
		key     string
		message string
	}{
		{"ExtractField$Value", map[string]string{"field": "`a.b", "field.syntax.version": "V2"}, "field", "opens a backtick at position 0"},
		{"Cast$Value", map[string]string{"spec": "a..b:int8", "field.syntax.version": "V2"}, "spec", "empty field name"},
		{"MaskField$Key", map[string]string{"fields": "ok,`x", "field.syntax.version": "V2"}, "fields", "nothing closes"},
		{"ReplaceField$Value", map[string]string{"renames": "`a.b:c", "field.syntax.version": "V2"}, "renames", "nothing closes"},
		{"InsertField$Value", map[string]string{"topic.field": "meta.", "field.syntax.version": "V2"}, "topic.field", "ends with a dot"},
		{"TimestampConverter$Value", map[string]string{"field": "a.", "target.type": "unix", "field.syntax.version": "V2"}, "field", "ends with a dot"},
		{"HeaderFrom$Value", map[string]string{"fields": "`a", "headers": "h", "operation": "copy", "field.syntax.version": "V2"}, "fields", "nothing closes"},
		{"HoistField$Value", map[string]string{"field": "a..b", "field.syntax.version": "V2"}, "field", "empty field name"},
		{"ValueToKey", map[string]string{"fields": "a.`b", "field.syntax.version": "V2"}, "fields", "position 2"},
		{"ValueToKey", map[string]string{"fields": "a", "field.syntax.version": "V3"}, "field.syntax.version", "not one of V1, V2"},
		{"Cast$Value", map[string]string{"spec": "a:int8", "field.syntax.version": "nested"}, "field.syntax.version", "not one of V1, V2"},
		{"MaskField$Value", map[string]string{"fields": "a,a.b", "field.syntax.version": "V2"}, "fields", `"a.b" reaches into "a"`},
		{"Cast$Value", map[string]string{"spec": "a.b:int8,a:int8", "field.syntax.version": "V2"}, "spec", `"a" holds other named fields`},
		{"ReplaceField$Value", map[string]string{"include": "a", "renames": "a.b:c", "field.syntax.version": "V2"}, "renames", `"a.b" reaches into "a"`},
		{"ExtractField$Value", map[string]string{"field": "a", "replace.null.with.default": "no"}, "replace.null.with.default", "not a boolean"},
	}
	for _, tc := range cases {
		cfg := map[string]string{"transforms": "x", "transforms.x.type": tc.typ}
		for k, v := range tc.opts {
			cfg["transforms.x."+k] = v
		}
		key := "transforms.x." + tc.key
		found := false
		errs := Validate(cfg)
		for _, e := range errs {
			found = found || e.Name == key && strings.Contains(e.Message, tc.message)
		}
		if !found {
			t.Errorf("%s %v: errors %v, want one on %s containing %q", tc.typ, tc.opts, errs, key, tc.message)
		}
	}
	// V1 reads the same texts as plain names: nothing to refuse.
	for _, text := range []string{"`a.b", "a..b", "a."} {
		if errs := Validate(map[string]string{"transforms": "x", "transforms.x.type": "ExtractField$Value", "transforms.x.field": text}); len(errs) != 0 {
			t.Errorf("V1 field %q: %v", text, errs)
		}
	}
}
