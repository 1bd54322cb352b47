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
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

var (
	ts0       = time.UnixMilli(1_700_000_000_000).UTC() // 2023-11-14T22:13:20Z
	rowSchema = data.StructOf("row",
		data.F("id", data.Int32Schema),
		data.F("name", data.OptionalStringSchema),
		data.F("score", data.OptionalFloat64Schema))
)

func row(id int32, name string, score float64) *data.Struct {
	return data.NewStruct(rowSchema).Put("id", id).Put("name", name).Put("score", score)
}

// one builds a transformation of type typ with options (prefix stripped);
// it fails the test on configuration errors.
func one(t *testing.T, typ string, opts map[string]string) Transformation {
	t.Helper()
	cfg := map[string]string{"transforms": "x", "transforms.x.type": typ}
	for k, v := range opts {
		cfg["transforms.x."+k] = v
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("configuring %s: %v", typ, err)
	}
	return c.steps[0].t
}

func sinkRec(schema *data.Schema, v any) *Record {
	p := int32(3)
	return &Record{Topic: "orders", Partition: &p, Offset: 42, Sink: true, ValueSchema: schema, Value: v, Timestamp: ts0,
		KeySchema: data.StringSchema, Key: "k1"}
}

// fieldsOf renders a struct or map value as name→value, for comparisons.
func fieldsOf(t *testing.T, v any) map[string]any {
	t.Helper()
	switch x := v.(type) {
	case *data.Struct:
		if err := x.Validate(); err != nil {
			t.Fatalf("transformed struct is invalid: %v", err)
		}
		out := map[string]any{}
		for _, f := range x.Schema().Fields {
			out[f.Name] = x.Get(f.Name)
		}
		return out
	case map[string]any:
		return x
	}
	t.Fatalf("value %T is neither struct nor map", v)
	return nil
}

func TestFieldTransforms(t *testing.T) {
	schemaless := map[string]any{"id": int64(1), "name": "ann", "score": 2.5}
	cases := []struct {
		name string
		typ  string
		opts map[string]string
		in   *Record
		want map[string]any
		// schema, when set, lists the output schema's field names in order
		schema []string
	}{
		{"InsertField struct", "InsertField$Value",
			map[string]string{"topic.field": "t", "partition.field": "p!", "offset.field": "o", "timestamp.field": "ts", "static.field": "s", "static.value": "v"},
			sinkRec(rowSchema, row(1, "ann", 2.5)),
			map[string]any{"id": int32(1), "name": "ann", "score": 2.5, "t": "orders", "p": int32(3), "o": int64(42), "ts": ts0, "s": "v"},
			[]string{"id", "name", "score", "t", "p", "o", "ts", "s"}},
		{"InsertField schemaless", "org.apache.kafka.connect.transforms.InsertField$Value",
			map[string]string{"topic.field": "t", "timestamp.field": "ts"},
			sinkRec(nil, schemaless),
			map[string]any{"id": int64(1), "name": "ann", "score": 2.5, "t": "orders", "ts": ts0.UnixMilli()}, nil},
		{"ReplaceField struct", "ReplaceField$Value",
			map[string]string{"exclude": "score", "renames": "name:full_name"},
			sinkRec(rowSchema, row(1, "ann", 2.5)),
			map[string]any{"id": int32(1), "full_name": "ann"}, []string{"id", "full_name"}},
		{"ReplaceField old names", "ReplaceField$Value",
			map[string]string{"whitelist": "id,score", "blacklist": "score"},
			sinkRec(nil, schemaless),
			map[string]any{"id": int64(1)}, nil},
		{"MaskField struct", "MaskField$Value", map[string]string{"fields": "name,score"},
			sinkRec(rowSchema, row(1, "ann", 2.5)),
			map[string]any{"id": int32(1), "name": "", "score": 0.0}, []string{"id", "name", "score"}},
		{"MaskField replacement schemaless", "MaskField$Value", map[string]string{"fields": "name,id", "replacement": "9"},
			sinkRec(nil, schemaless),
			map[string]any{"id": int64(9), "name": "9", "score": 2.5}, nil},
		{"HoistField schemaless", "HoistField$Value", map[string]string{"field": "wrapped"},
			sinkRec(nil, "plain"), map[string]any{"wrapped": "plain"}, nil},
		{"Cast struct", "Cast$Value", map[string]string{"spec": "id:string,score:int64"},
			sinkRec(rowSchema, row(7, "ann", 2.9)),
			map[string]any{"id": "7", "name": "ann", "score": int64(2)}, []string{"id", "name", "score"}},
		{"Cast schemaless", "Cast$Value", map[string]string{"spec": "name:boolean,id:float32"},
			sinkRec(nil, map[string]any{"id": int64(3), "name": "true"}),
			map[string]any{"id": float32(3), "name": true}, nil},
		{"Flatten schemaless", "Flatten$Value", map[string]string{"delimiter": "_"},
			sinkRec(nil, map[string]any{"a": map[string]any{"b": int64(1), "c": map[string]any{"d": "x"}}, "e": []any{int64(1)}}),
			map[string]any{"a_b": int64(1), "a_c_d": "x", "e": []any{int64(1)}}, nil},
		{"SetSchemaMetadata", "SetSchemaMetadata$Value", map[string]string{"schema.name": "renamed", "schema.version": "3"},
			sinkRec(rowSchema, row(1, "ann", 2.5)),
			map[string]any{"id": int32(1), "name": "ann", "score": 2.5}, []string{"id", "name", "score"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := one(t, tc.typ, tc.opts).Apply(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := fieldsOf(t, out.Value); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("value = %#v, want %#v", got, tc.want)
			}
			if tc.schema != nil {
				var names []string
				for _, f := range out.ValueSchema.Fields {
					names = append(names, f.Name)
				}
				if !reflect.DeepEqual(names, tc.schema) {
					t.Fatalf("schema fields = %v, want %v", names, tc.schema)
				}
			}
		})
	}
}

func TestInsertFieldKeepsTombstonesAndRefusesSourceOffsets(t *testing.T) {
	tr := one(t, "InsertField$Value", map[string]string{"offset.field": "o"})
	r := sinkRec(rowSchema, nil)
	if out, err := tr.Apply(r); err != nil || out.Value != nil {
		t.Fatalf("tombstone: %v, %v", out, err)
	}
	src := &Record{Topic: "t", Offset: -1, ValueSchema: rowSchema, Value: row(1, "a", 1)}
	if _, err := tr.Apply(src); err == nil || !strings.Contains(err.Error(), "sink records only") {
		t.Fatalf("offset.field on a source record: err = %v", err)
	}
}

func TestSchemaCacheSharesDerivedSchemas(t *testing.T) {
	tr := one(t, "InsertField$Value", map[string]string{"static.field": "s", "static.value": "v"})
	a, _ := tr.Apply(sinkRec(rowSchema, row(1, "a", 1)))
	b, _ := tr.Apply(sinkRec(rowSchema, row(2, "b", 2)))
	if a.ValueSchema != b.ValueSchema {
		t.Fatal("records of one input schema got different output schemas (converters cache per schema)")
	}
}

func TestFlattenStruct(t *testing.T) {
	inner := data.StructOf("inner", data.F("x", data.Int64Schema), data.F("y", data.OptionalStringSchema)).AsOptional()
	outer := data.StructOf("outer", data.F("id", data.Int32Schema), data.F("in", inner))
	v := data.NewStruct(outer).Put("id", int32(1)).Put("in", data.NewStruct(inner).Put("x", int64(5)).Put("y", "z"))
	out, err := one(t, "Flatten$Value", nil).Apply(sinkRec(outer, v))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": int32(1), "in.x": int64(5), "in.y": "z"}
	if got := fieldsOf(t, out.Value); !reflect.DeepEqual(got, want) {
		t.Fatalf("flattened = %v, want %v", got, want)
	}
	if f := out.ValueSchema.Field("in.x"); f == nil || !f.Schema.Optional {
		t.Fatalf("in.x should be optional because its parent is: %+v", f)
	}
	// A null nested struct flattens to nulls.
	v2 := data.NewStruct(outer).Put("id", int32(2))
	out, err = one(t, "Flatten$Value", nil).Apply(sinkRec(outer, v2))
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(t, out.Value); got["in.x"] != nil || got["id"] != int32(2) {
		t.Fatalf("flattened null child = %v", got)
	}
}

func TestKeyTransforms(t *testing.T) {
	// ValueToKey then ExtractField$Key: the key becomes the id.
	r := sinkRec(rowSchema, row(5, "e", 1))
	r, err := one(t, "ValueToKey", map[string]string{"fields": "id,name"}).Apply(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(t, r.Key); !reflect.DeepEqual(got, map[string]any{"id": int32(5), "name": "e"}) {
		t.Fatalf("key = %v", got)
	}
	r, err = one(t, "ExtractField$Key", map[string]string{"field": "id"}).Apply(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Key != int32(5) || r.KeySchema.Type != data.TypeInt32 {
		t.Fatalf("extracted key = %v (%v)", r.Key, r.KeySchema)
	}
	// ExtractField$Value schemaless, and on an unknown field with a schema.
	r2, err := one(t, "ExtractField$Value", map[string]string{"field": "name"}).Apply(sinkRec(nil, map[string]any{"name": "n"}))
	if err != nil || r2.Value != "n" {
		t.Fatalf("schemaless extract = %v, %v", r2.Value, err)
	}
	if _, err := one(t, "ExtractField$Value", map[string]string{"field": "nope"}).Apply(sinkRec(rowSchema, row(1, "a", 1))); err == nil {
		t.Fatal("extracting an unknown field should fail")
	}
	// HoistField$Key with a schema.
	r3, err := one(t, "HoistField$Key", map[string]string{"field": "k"}).Apply(sinkRec(rowSchema, row(1, "a", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(t, r3.Key); got["k"] != "k1" {
		t.Fatalf("hoisted key = %v", got)
	}
	// Cast$Key of the whole key.
	r4 := sinkRec(nil, nil)
	r4.KeySchema, r4.Key = data.StringSchema, "12"
	if r4, err = one(t, "Cast$Key", map[string]string{"spec": "int16"}).Apply(r4); err != nil || r4.Key != int16(12) || r4.KeySchema.Type != data.TypeInt16 {
		t.Fatalf("cast key = %v (%v), %v", r4.Key, r4.KeySchema, err)
	}
}

func TestCastErrorsDoNotQuoteValues(t *testing.T) {
	_, err := one(t, "Cast$Value", map[string]string{"spec": "name:int32"}).Apply(sinkRec(rowSchema, row(1, "s3cr3t", 1)))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), `"name"`) {
		t.Fatalf("err = %v: want an error naming the field, not the value", err)
	}
}

func TestRouters(t *testing.T) {
	cases := []struct {
		typ   string
		opts  map[string]string
		topic string
		want  string
	}{
		{"RegexRouter", map[string]string{"regex": "(.*)-(\\d+)", "replacement": "$2_$1"}, "orders-7", "7_orders"},
		{"RegexRouter", map[string]string{"regex": "orders", "replacement": "all"}, "orders-7", "orders-7"}, // whole-topic match only
		{"RegexRouter", map[string]string{"regex": "(?<kind>[a-z]+)\\.x", "replacement": "${kind}\\$"}, "db.x", "db$"},
		{"TimestampRouter", nil, "orders", "orders-20231114"},
		{"TimestampRouter", map[string]string{"topic.format": "${timestamp}.${topic}", "timestamp.format": "yyyy-MM-dd'T'HH:mm:ss.SSS"}, "t",
			"2023-11-14T22:13:20.000.t"},
	}
	for _, tc := range cases {
		r := sinkRec(nil, "v")
		r.Topic = tc.topic
		out, err := one(t, tc.typ, tc.opts).Apply(r)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.typ, tc.opts, err)
		}
		if out.Topic != tc.want {
			t.Errorf("%s %v: topic %q, want %q", tc.typ, tc.opts, out.Topic, tc.want)
		}
	}
	r := sinkRec(nil, "v")
	r.Timestamp = time.Time{}
	if _, err := one(t, "TimestampRouter", nil).Apply(r); err == nil {
		t.Error("TimestampRouter without a timestamp should fail")
	}
}

func TestHeaderTransforms(t *testing.T) {
	r := sinkRec(rowSchema, row(1, "ann", 2))
	r.Headers = data.Headers{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}}
	orig := r.Headers
	out, err := one(t, "InsertHeader", map[string]string{"header": "c", "value.literal": "3"}).Apply(r)
	if err != nil {
		t.Fatal(err)
	}
	out, err = one(t, "DropHeaders", map[string]string{"headers": "a"}).Apply(out)
	if err != nil {
		t.Fatal(err)
	}
	out, err = one(t, "HeaderFrom$Value", map[string]string{"fields": "name", "headers": "who", "operation": "move"}).Apply(out)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, h := range out.Headers {
		keys = append(keys, h.Key)
	}
	if !reflect.DeepEqual(keys, []string{"b", "c", "who"}) {
		t.Fatalf("headers = %v", keys)
	}
	if h, _ := out.Headers.Last("who"); h.Value != "ann" || h.Schema != rowSchema.Field("name").Schema {
		t.Fatalf("who header = %+v", h)
	}
	if got := fieldsOf(t, out.Value); !reflect.DeepEqual(got, map[string]any{"id": int32(1), "score": 2.0}) {
		t.Fatalf("value after move = %v", got)
	}
	if len(orig) != 2 || orig[0].Key != "a" {
		t.Fatalf("the input headers were changed: %v", orig)
	}
	// copy, schemaless
	out, err = one(t, "HeaderFrom$Value", map[string]string{"fields": "id", "headers": "id", "operation": "copy"}).
		Apply(sinkRec(nil, map[string]any{"id": int64(4)}))
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := out.Headers.Last("id"); h.Value != int64(4) || fieldsOf(t, out.Value)["id"] != int64(4) {
		t.Fatalf("copy: header %+v value %v", h, out.Value)
	}
}

func TestPredicatesAndNegate(t *testing.T) {
	cfg := map[string]string{
		"transforms":                      "dropTomb,onlyOrders",
		"transforms.dropTomb.type":        "Filter",
		"transforms.dropTomb.predicate":   "isTomb",
		"transforms.onlyOrders.type":      "org.apache.kafka.connect.transforms.Filter",
		"transforms.onlyOrders.predicate": "orders",
		"transforms.onlyOrders.negate":    "true",
		"predicates":                      "isTomb,orders,hasH",
		"predicates.isTomb.type":          "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
		"predicates.orders.type":          "TopicNameMatches",
		"predicates.orders.pattern":       "ord.*",
		"predicates.hasH.type":            "HasHeaderKey",
		"predicates.hasH.name":            "h",
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kept := func(topic string, v any) bool {
		rec := &data.SinkRecord{Topic: topic, Value: v}
		ok, err := c.ApplySink(rec)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !kept("orders", "x") || kept("orders", nil) || kept("users", "x") || kept("xorders", "x") {
		t.Fatal("filter with predicates kept the wrong records")
	}
	p := predicateTypes["HasHeaderKey"].New(NewOptions(map[string]string{"name": "h"}))
	if p.Test(&Record{}) || !p.Test(&Record{Headers: data.Headers{{Key: "h"}}}) {
		t.Fatal("HasHeaderKey")
	}
}

func TestExtractNewRecordState(t *testing.T) {
	optRow := rowSchema.AsOptional()
	env := data.StructOf("env",
		data.F("before", optRow), data.F("after", optRow),
		data.F("source", data.OptionalStringSchema), data.F("op", data.StringSchema), data.F("ts_ms", data.OptionalInt64Schema))
	ev := func(op string, before, after *data.Struct) *Record {
		st := data.NewStruct(env).Put("op", op)
		if before != nil {
			st.Put("before", data.NewStructTrusted(optRow, structValues(before)))
		}
		if after != nil {
			st.Put("after", data.NewStructTrusted(optRow, structValues(after)))
		}
		return sinkRec(env, st)
	}
	for _, mode := range []string{"", "drop", "tombstone", "rewrite"} {
		opts := map[string]string{}
		if mode != "" {
			opts["delete.handling.mode"] = mode
		}
		tr := one(t, "unwrap", opts)
		for _, op := range []string{"c", "u", "r"} {
			out, err := tr.Apply(ev(op, row(1, "old", 1), row(1, "new", 2)))
			if err != nil {
				t.Fatal(err)
			}
			got := fieldsOf(t, out.Value)
			if got["name"] != "new" {
				t.Fatalf("%s/%s: value %v", mode, op, got)
			}
			if mode == "rewrite" && got[DeletedField] != "false" {
				t.Fatalf("rewrite %s: __deleted = %v", op, got[DeletedField])
			}
		}
		out, err := tr.Apply(ev("t", nil, nil))
		if err != nil || out != nil {
			t.Fatalf("%s: truncate not dropped: %v %v", mode, out, err)
		}
		out, err = tr.Apply(ev("d", row(1, "old", 1), nil))
		if err != nil {
			t.Fatal(err)
		}
		switch mode {
		case "drop":
			if out != nil {
				t.Fatalf("drop: delete kept")
			}
		case "", "tombstone":
			if out == nil || out.Value != nil || out.ValueSchema != nil || out.Key != "k1" {
				t.Fatalf("tombstone: %+v", out)
			}
		case "rewrite":
			got := fieldsOf(t, out.Value)
			if got["name"] != "old" || got[DeletedField] != "true" {
				t.Fatalf("rewrite delete: %v", got)
			}
		}
	}
	// Schemaless envelopes (JSON without schemas) and non-envelopes.
	tr := one(t, "ExtractNewRecordState", nil)
	out, err := tr.Apply(sinkRec(nil, map[string]any{"op": "c", "after": map[string]any{"id": int64(1)}, "before": nil}))
	if err != nil || !reflect.DeepEqual(out.Value, map[string]any{"id": int64(1)}) {
		t.Fatalf("schemaless: %v %v", out.Value, err)
	}
	plain := sinkRec(rowSchema, row(1, "a", 1))
	if out, err := tr.Apply(plain); err != nil || out.Value != plain.Value {
		t.Fatal("a record that is no change event must pass unchanged")
	}
}

// A delete from the CDC source is a delete event and then a tombstone.
// drop.tombstones (default true) drops the source's tombstone, so each
// delete.handling.mode gives one record per delete by default: one
// tombstone in tombstone mode, never two. With false the source's
// tombstone passes too.
func TestExtractNewRecordStateTombstones(t *testing.T) {
	optRow := rowSchema.AsOptional()
	env := data.StructOf("env", data.F("before", optRow), data.F("after", optRow), data.F("op", data.StringSchema))
	del := func() *Record {
		return sinkRec(env, data.NewStruct(env).Put("op", "d").Put("before", data.NewStructTrusted(optRow, structValues(row(1, "old", 1)))))
	}
	tomb := func() *Record { return sinkRec(nil, nil) }
	cases := []struct {
		mode, drop string
		want       string // what the delete event, then the tombstone, become
	}{
		{"", "", "tombstone"},
		{"tombstone", "true", "tombstone"},
		{"tombstone", "false", "tombstone tombstone"},
		{"drop", "", ""},
		{"drop", "FALSE", "tombstone"},
		{"rewrite", "", "row"},
		{"rewrite", "false", "row tombstone"},
	}
	for _, tc := range cases {
		opts := map[string]string{}
		if tc.mode != "" {
			opts["delete.handling.mode"] = tc.mode
		}
		if tc.drop != "" {
			opts["drop.tombstones"] = tc.drop
		}
		tr := one(t, "unwrap", opts)
		var got []string
		for _, in := range []*Record{del(), tomb()} {
			out, err := tr.Apply(in)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case out == nil:
			case out.Value == nil:
				if out.ValueSchema != nil || out.Key != "k1" || out.KeySchema != data.StringSchema || out.Topic != "orders" {
					t.Fatalf("%+v: tombstone %+v lost its key or kept a value schema", tc, out)
				}
				got = append(got, "tombstone")
			default:
				if f := fieldsOf(t, out.Value); f["name"] != "old" || f[DeletedField] != "true" {
					t.Fatalf("%+v: row %v", tc, f)
				}
				got = append(got, "row")
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("delete.handling.mode=%q drop.tombstones=%q: a delete gave %q, want %q", tc.mode, tc.drop, strings.Join(got, " "), tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		cfg     map[string]string
		key     string
		message string
	}{
		{"unknown type", map[string]string{"transforms": "x", "transforms.x.type": "com.example.Nope"},
			"transforms.x.type", "InsertField$Value"},
		{"no type", map[string]string{"transforms": "x"}, "transforms.x.type", "has no type"},
		{"missing option", map[string]string{"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "a"},
			"transforms.r.replacement", "missing required option"},
		{"bad regex", map[string]string{"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "(", "transforms.r.replacement": "b"},
			"transforms.r.regex", "not a valid regular expression"},
		{"bad cast spec", map[string]string{"transforms": "c", "transforms.c.type": "Cast$Value", "transforms.c.spec": "a:uuid"},
			"transforms.c.spec", "type one of"},
		{"unknown predicate", map[string]string{"transforms": "f", "transforms.f.type": "Filter", "transforms.f.predicate": "p"},
			"transforms.f.predicate", "does not list"},
		{"bad predicate type", map[string]string{"predicates": "p", "predicates.p.type": "Nope"}, "predicates.p.type", "RecordIsTombstone"},
		{"predicate option", map[string]string{"predicates": "p", "predicates.p.type": "TopicNameMatches"}, "predicates.p.pattern", "missing"},
		{"negate alone", map[string]string{"transforms": "f", "transforms.f.type": "Filter", "transforms.f.negate": "true"},
			"transforms.f.negate", "without a predicate"},
		{"bad mode", map[string]string{"transforms": "u", "transforms.u.type": "unwrap", "transforms.u.delete.handling.mode": "keep"},
			"transforms.u.delete.handling.mode", "drop, tombstone, rewrite"},
		{"bad drop.tombstones", map[string]string{"transforms": "u", "transforms.u.type": "unwrap", "transforms.u.drop.tombstones": "yes"},
			"transforms.u.drop.tombstones", "use true or false"},
		{"duplicate alias", map[string]string{"transforms": "f,f", "transforms.f.type": "Filter"}, "transforms", "twice"},
		{"bad renames", map[string]string{"transforms": "r", "transforms.r.type": "ReplaceField$Key", "transforms.r.renames": "a"},
			"transforms.r.renames", "old:new"},
		{"unknown option", map[string]string{"transforms": "i", "transforms.i.type": "InsertField$Value", "transforms.i.static.feild": "x"},
			"transforms.i.static.feild", "unknown option"},
		{"unknown predicate option", map[string]string{"predicates": "p", "predicates.p.type": "RecordIsTombstone", "predicates.p.name": "x"},
			"predicates.p.name", "options: none"},
		{"null defaults off where Kafka has no such option", map[string]string{"transforms": "f", "transforms.f.type": "Flatten$Value",
			"transforms.f.replace.null.with.default": "false"}, "transforms.f.replace.null.with.default", "only true is accepted"},
		{"paths where Kafka has no such option", map[string]string{"transforms": "f", "transforms.f.type": "Flatten$Value",
			"transforms.f.field.syntax.version": "V2"}, "transforms.f.field.syntax.version", "only V1 is accepted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(tc.cfg)
			found := false
			for _, e := range errs {
				if e.Name == tc.key && strings.Contains(e.Message, tc.message) {
					found = true
				}
			}
			if !found {
				t.Fatalf("errors %v: want one on %s containing %q", errs, tc.key, tc.message)
			}
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("New accepted the configuration")
			}
		})
	}
	if errs := Validate(map[string]string{"transforms": "f", "transforms.f.type": "Flatten$Value",
		"transforms.f.replace.null.with.default": "true", "transforms.f.field.syntax.version": "V1"}); len(errs) != 0 {
		t.Fatalf("options of newer Kafka that change nothing here: %v", errs)
	}
	if errs := Validate(map[string]string{"name": "c"}); len(errs) != 0 {
		t.Fatalf("no transforms: %v", errs)
	}
	if c, err := New(map[string]string{"transforms": ""}); c != nil || err != nil {
		t.Fatalf("empty transforms: %v %v", c, err)
	}
}

func TestChainErrorsNameAliasAndPosition(t *testing.T) {
	c, err := New(map[string]string{"transforms": "ok,bad", "transforms.ok.type": "InsertHeader", "transforms.ok.header": "h",
		"transforms.ok.value.literal": "v", "transforms.bad.type": "Cast$Value", "transforms.bad.spec": "name:int8"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &data.SinkRecord{Topic: "t", Partition: 2, Offset: 9, ValueSchema: rowSchema, Value: row(1, "topsecret", 1)}
	_, err = c.ApplySink(rec)
	var te *Error
	if !errors.As(err, &te) || te.Alias != "bad" || !strings.Contains(err.Error(), "t-2@9") || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("err = %v", err)
	}
	src := &data.SourceRecord{Topic: "t", ValueSchema: rowSchema, Value: row(1, "topsecret", 1)}
	if _, err := c.ApplySource(src, ts0); err == nil || !strings.Contains(err.Error(), `transform "bad"`) || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("source err = %v", err)
	}
	// A panicking transformation is an error of its alias too.
	c.steps[1].t = TransformFunc(func(*Record) (*Record, error) { panic("boom") })
	if _, err := c.ApplySink(rec); !errors.As(err, &te) || te.Alias != "bad" {
		t.Fatalf("panic: %v", err)
	}
}

func TestApplySourceKeepsTheTaskRecord(t *testing.T) {
	c, err := New(map[string]string{"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "a",
		"transforms.r.replacement": "b"})
	if err != nil {
		t.Fatal(err)
	}
	in := &data.SourceRecord{SourcePartition: map[string]any{"p": 1}, SourceOffset: map[string]any{"o": 2}, Topic: "a", Value: "v"}
	out, err := c.ApplySource(in, ts0)
	if err != nil {
		t.Fatal(err)
	}
	if in.Topic != "a" || out.Topic != "b" || out.SourceOffset["o"] != 2 || !out.Timestamp.Equal(ts0) || !in.Timestamp.IsZero() {
		t.Fatalf("in %+v out %+v", in, out)
	}
}

func TestRegistryNames(t *testing.T) {
	for _, name := range []string{
		"org.apache.kafka.connect.transforms.InsertField$Key", "org.apache.kafka.connect.transforms.ReplaceField$Value",
		"org.apache.kafka.connect.transforms.MaskField$Value", "org.apache.kafka.connect.transforms.ValueToKey",
		"org.apache.kafka.connect.transforms.ExtractField$Key", "org.apache.kafka.connect.transforms.HoistField$Value",
		"org.apache.kafka.connect.transforms.Cast$Value", "org.apache.kafka.connect.transforms.TimestampRouter",
		"org.apache.kafka.connect.transforms.RegexRouter", "org.apache.kafka.connect.transforms.Filter",
		"org.apache.kafka.connect.transforms.Flatten$Value", "org.apache.kafka.connect.transforms.SetSchemaMetadata$Key",
		"org.apache.kafka.connect.transforms.HeaderFrom$Value", "org.apache.kafka.connect.transforms.InsertHeader",
		"org.apache.kafka.connect.transforms.DropHeaders", "io.conveyor.transforms.ExtractNewRecordState", "unwrap",
		"org.apache.kafka.connect.transforms.TimestampConverter$Value", "TimestampConverter$Key",
	} {
		if transformTypes[name] == nil {
			t.Errorf("transform %s is not registered", name)
		}
	}
	for _, name := range []string{"TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"} {
		if predicateTypes["org.apache.kafka.connect.transforms.predicates."+name] == nil || predicateTypes[name] == nil {
			t.Errorf("predicate %s is not registered", name)
		}
	}
}

func TestCastPrimitive(t *testing.T) {
	cases := []struct {
		in   any
		to   data.Type
		want any
	}{
		{int64(300), data.TypeInt8, int8(44)}, // wraps like Java's narrowing
		{3.99, data.TypeInt32, int32(3)},
		{"42", data.TypeInt64, int64(42)},
		{"4.5", data.TypeFloat32, float32(4.5)},
		{true, data.TypeInt16, int16(1)},
		{int32(0), data.TypeBoolean, false},
		{"TRUE", data.TypeBoolean, true},
		{float32(1.5), data.TypeString, "1.5"},
		{[]byte("hi"), data.TypeString, "aGk="},
		{data.NewDecimal(1234, 2), data.TypeString, "12.34"},
		{data.NewDecimal(1234, 2), data.TypeFloat64, 12.34},
		{ts0, data.TypeString, "2023-11-14T22:13:20.000Z"},
		{ts0, data.TypeInt64, ts0.UnixMilli()},
	}
	for _, tc := range cases {
		got, err := castPrimitive(tc.in, tc.to)
		if err != nil || got != tc.want {
			t.Errorf("cast %#v to %s = %#v, %v; want %#v", tc.in, tc.to, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		in any
		to data.Type
	}{{"x", data.TypeInt32}, {"maybe", data.TypeBoolean}, {[]byte{1}, data.TypeInt64}, {map[string]any{}, data.TypeInt32}} {
		if _, err := castPrimitive(bad.in, bad.to); err == nil {
			t.Errorf("cast %#v to %s should fail", bad.in, bad.to)
		}
	}
}

func TestTimestampConverter(t *testing.T) {
	tsRow := data.StructOf("ev", data.F("id", data.Int32Schema), data.F("at", data.TimestampSchema().AsOptional()))
	ev := data.NewStruct(tsRow).Put("id", int32(1)).Put("at", ts0)
	cases := []struct {
		name       string
		typ        string
		opts       map[string]string
		schema     *data.Schema
		in         any
		want       any
		wantSchema string // schema name or type of the converted data
	}{
		{"Timestamp field to string", "TimestampConverter$Value", map[string]string{"field": "at", "target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS"},
			tsRow, ev, "2023-11-14 22:13:20.000", "string"},
		{"Timestamp field to unix seconds", "TimestampConverter$Value", map[string]string{"field": "at", "target.type": "unix", "unix.precision": "seconds"},
			tsRow, ev, int64(1_700_000_000), "int64"},
		{"schemaless string field to Timestamp", "TimestampConverter$Value", map[string]string{"field": "at", "target.type": "Timestamp", "format": "yyyy-MM-dd'T'HH:mm:ss"},
			nil, map[string]any{"at": "2023-11-14T22:13:20"}, ts0, ""},
		{"whole unix value to Date", "TimestampConverter$Value", map[string]string{"target.type": "Date"},
			data.Int64Schema, ts0.UnixMilli(), time.Date(2023, 11, 14, 0, 0, 0, 0, time.UTC), data.DateName},
		{"whole key to Time", "TimestampConverter$Key", map[string]string{"target.type": "Time"},
			data.TimestampSchema(), ts0, time.Date(1970, 1, 1, 22, 13, 20, 0, time.UTC), data.TimeName},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := sinkRec(tc.schema, tc.in)
			if strings.HasSuffix(tc.typ, "$Key") {
				r.KeySchema, r.Key = tc.schema, tc.in
			}
			out, err := one(t, tc.typ, tc.opts).Apply(r)
			if err != nil {
				t.Fatal(err)
			}
			s, v := out.ValueSchema, out.Value
			if strings.HasSuffix(tc.typ, "$Key") {
				s, v = out.KeySchema, out.Key
			}
			got := v
			if f := tc.opts["field"]; f != "" {
				got = fieldsOf(t, v)[f]
				if s != nil {
					s = s.Field(f).Schema
				}
			}
			if g, ok := got.(time.Time); ok {
				if !g.Equal(tc.want.(time.Time)) {
					t.Fatalf("got %v, want %v", g, tc.want)
				}
			} else if got != tc.want {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
			if tc.wantSchema != "" && s.Name != tc.wantSchema && string(s.Type) != tc.wantSchema {
				t.Fatalf("schema %v, want %s", s, tc.wantSchema)
			}
			if s != nil {
				if err := s.Validate(got); err != nil {
					t.Fatalf("converted value does not fit its schema: %v", err)
				}
			}
		})
	}
	errs := Validate(map[string]string{"transforms": "c", "transforms.c.type": "TimestampConverter$Value", "transforms.c.target.type": "string"})
	if len(errs) != 1 || errs[0].Name != "transforms.c.format" {
		t.Fatalf("string target without format: %v", errs)
	}
	errs = Validate(map[string]string{"transforms": "c", "transforms.c.type": "TimestampConverter$Value"})
	if len(errs) != 1 || errs[0].Name != "transforms.c.target.type" {
		t.Fatalf("no target type: %v", errs)
	}
	_, err := one(t, "TimestampConverter$Value", map[string]string{"target.type": "unix"}).Apply(sinkRec(nil, "2023-01-01"))
	if err == nil || strings.Contains(err.Error(), "2023-01-01") {
		t.Fatalf("a string without format: err = %v", err)
	}
}

func TestValueToKeySchemalessAndSchemaMetadata(t *testing.T) {
	r, err := one(t, "ValueToKey", map[string]string{"fields": "id"}).Apply(sinkRec(nil, map[string]any{"id": int64(7), "x": "y"}))
	if err != nil || !reflect.DeepEqual(r.Key, map[string]any{"id": int64(7)}) || r.KeySchema != nil {
		t.Fatalf("schemaless ValueToKey: key %v (%v), %v", r.Key, r.KeySchema, err)
	}
	if _, err := one(t, "ValueToKey", map[string]string{"fields": "nope"}).Apply(sinkRec(rowSchema, row(1, "a", 1))); err == nil {
		t.Fatal("ValueToKey of a field the schema lacks should fail")
	}
	r, err = one(t, "SetSchemaMetadata$Value", map[string]string{"schema.name": "renamed", "schema.version": "3"}).Apply(sinkRec(rowSchema, row(1, "a", 1)))
	if err != nil {
		t.Fatal(err)
	}
	st := r.Value.(*data.Struct)
	if r.ValueSchema.Name != "renamed" || r.ValueSchema.Version != 3 || st.Schema() != r.ValueSchema || rowSchema.Name != "row" {
		t.Fatalf("schema %v, struct schema %v, original %v", r.ValueSchema, st.Schema(), rowSchema)
	}
	if _, err := one(t, "SetSchemaMetadata$Value", map[string]string{"schema.name": "x"}).Apply(sinkRec(nil, map[string]any{})); err == nil {
		t.Fatal("SetSchemaMetadata without a schema should fail")
	}
}
