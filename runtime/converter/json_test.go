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
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

func mustJSON(t *testing.T, cfg map[string]string) *JSON {
	t.Helper()
	c, err := NewJSON(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// everythingSchema has one field of every type, nested struct, logical types
// and optional fields.
func everythingSchema() *data.Schema {
	inner := data.StructOf("com.example.Inner",
		data.F("label", data.StringSchema),
		data.F("weight", data.OptionalFloat64Schema),
	)
	return data.StructOf("com.example.Everything",
		data.F("i8", data.Int8Schema),
		data.F("i16", data.Int16Schema),
		data.F("i32", data.Int32Schema),
		data.F("i64", data.Int64Schema),
		data.F("f32", data.Float32Schema),
		data.F("f64", data.Float64Schema),
		data.F("flag", data.BooleanSchema),
		data.F("name", data.StringSchema),
		data.F("blob", data.BytesSchema),
		data.F("tags", data.ArrayOf(data.StringSchema)),
		data.F("counts", data.MapOf(data.StringSchema, data.Int32Schema)),
		data.F("byID", data.MapOf(data.Int64Schema, data.OptionalStringSchema)),
		data.F("inner", inner),
		data.F("innerOpt", inner.AsOptional()),
		data.F("nothing", data.OptionalStringSchema),
		data.F("withDefault", data.Int32Schema.WithDefault(int32(42))),
		data.F("ts", data.TimestampSchema()),
		data.F("day", data.DateSchema()),
		data.F("tod", data.TimeSchema()),
		data.F("price", data.DecimalSchema(2)),
		data.F("list", data.ArrayOf(inner)),
	)
}

func everythingValue(s *data.Schema) *data.Struct {
	inner := s.Field("inner").Schema
	return data.NewStruct(s).
		Put("i8", int8(-8)).
		Put("i16", int16(1600)).
		Put("i32", int32(-320000)).
		Put("i64", int64(math.MaxInt64)).
		Put("f32", float32(1.5)).
		Put("f64", float64(-2.25e10)).
		Put("flag", true).
		Put("name", "héllo \"world\"\n").
		Put("blob", []byte{0, 1, 2, 0xff}).
		Put("tags", []any{"a", "b"}).
		Put("counts", map[any]any{"x": int32(1), "y": int32(2)}).
		Put("byID", map[any]any{int64(7): "seven", int64(-1): nil}).
		Put("inner", data.NewStruct(inner).Put("label", "in").Put("weight", 0.5)).
		Put("ts", time.Date(2026, 11, 29, 13, 14, 15, 123e6, time.UTC)).
		Put("day", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)).
		Put("tod", time.Date(1970, 1, 1, 13, 14, 15, 123e6, time.UTC)).
		Put("price", data.NewDecimal(-12345, 2)).
		Put("list", []any{data.NewStruct(inner).Put("label", "l1")})
}

func TestJSONRoundTripEveryType(t *testing.T) {
	for _, cfg := range []map[string]string{nil, {KeyDecimalFormat: "NUMERIC"}} {
		c := mustJSON(t, cfg)
		s := everythingSchema()
		v := everythingValue(s)
		b, err := c.FromConnectData("t", s, v)
		if err != nil {
			t.Fatal(err)
		}
		gotS, gotV, err := c.ToConnectData("t", b)
		if err != nil {
			t.Fatalf("%s\n%s", err, b)
		}
		if !gotS.Equal(s) {
			t.Fatalf("schema mismatch:\n got %s\nwant %s", gotS, s)
		}
		gs := gotV.(*data.Struct)
		// withDefault was unset: the payload carries the default, which reads back.
		if gs.Get("withDefault") != int32(42) {
			t.Fatalf("withDefault = %v", gs.Get("withDefault"))
		}
		want := everythingValue(s).Put("withDefault", int32(42))
		if !data.ValuesEqual(gotV, want) {
			t.Fatalf("value mismatch:\n got %v\nwant %v", gotV, want)
		}
	}
}

func TestJSONPrimitivesRoundTrip(t *testing.T) {
	c := mustJSON(t, nil)
	cases := []struct {
		s *data.Schema
		v any
	}{
		{data.Int8Schema, int8(math.MinInt8)},
		{data.Int16Schema, int16(math.MaxInt16)},
		{data.Int32Schema, int32(math.MinInt32)},
		{data.Int64Schema, int64(math.MinInt64)},
		{data.Float32Schema, float32(3.4028235e38)},
		{data.Float64Schema, 1e-300},
		{data.BooleanSchema, false},
		{data.StringSchema, ""},
		{data.BytesSchema, []byte{}},
		{data.OptionalStringSchema, nil},
		{data.OptionalBytesSchema, nil},
		{data.ArrayOf(data.OptionalInt32Schema), []any{int32(1), nil, int32(3)}},
		{data.OptionalInt64Schema, nil},
		{data.DecimalSchema(0), data.NewDecimal(0, 0)},
		{data.DecimalSchema(5), data.NewDecimal(-128, 5)},
		{data.TimestampSchema(), time.UnixMilli(-1).UTC()},
	}
	for _, tc := range cases {
		b, err := c.FromConnectData("t", tc.s, tc.v)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.s, tc.v, err)
		}
		s, v, err := c.ToConnectData("t", b)
		if err != nil {
			t.Fatalf("%s: %v (%s)", tc.s, err, b)
		}
		if !s.Equal(tc.s) || !data.ValuesEqual(v, tc.v) {
			t.Fatalf("%s %#v: got %s %#v from %s", tc.s, tc.v, s, v, b)
		}
	}
}

func TestJSONNulls(t *testing.T) {
	c := mustJSON(t, nil)
	// Null schema and value: tombstone, no bytes.
	b, err := c.FromConnectData("t", nil, nil)
	if err != nil || b != nil {
		t.Fatalf("tombstone: %q %v", b, err)
	}
	s, v, err := c.ToConnectData("t", nil)
	if err != nil || s != nil || v != nil {
		t.Fatalf("nil bytes: %v %v %v", s, v, err)
	}
	// Optional null with schema keeps the schema.
	b, err = c.FromConnectData("t", data.OptionalInt32Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"schema":{"type":"int32","optional":true},"payload":null}` {
		t.Fatalf("got %s", b)
	}
	// Required null fails with a clear message.
	if _, err := c.FromConnectData("t", data.Int32Schema, nil); err == nil || !strings.Contains(err.Error(), "null value for required") {
		t.Fatalf("required null: %v", err)
	}
	if _, _, err := c.ToConnectData("t", []byte(`{"schema":{"type":"int32","optional":false},"payload":null}`)); err == nil {
		t.Fatal("required null payload accepted")
	}
	// Required struct field missing in payload.
	st := data.StructOf("", data.F("a", data.Int32Schema))
	if _, _, err := c.ToConnectData("t", []byte(`{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}],"optional":false},"payload":{}}`)); err == nil || !strings.Contains(err.Error(), "a: invalid null") {
		t.Fatalf("missing required field: %v", err)
	}
	_ = st
	// replace.null.with.default=false keeps an optional null as null.
	c2 := mustJSON(t, map[string]string{KeyReplaceNullWithDefault: "false"})
	_, v, err = c2.ToConnectData("t", []byte(`{"schema":{"type":"int32","optional":true,"default":5},"payload":null}`))
	if err != nil || v != nil {
		t.Fatalf("replace.null.with.default=false: %v %v", v, err)
	}
	_, v, err = c.ToConnectData("t", []byte(`{"schema":{"type":"int32","optional":true,"default":5},"payload":null}`))
	if err != nil || v != int32(5) {
		t.Fatalf("default: %v %v", v, err)
	}
}

func TestJSONGoldenEnvelope(t *testing.T) {
	c := mustJSON(t, nil)
	s := everythingSchema()
	b, err := c.FromConnectData("t", s, everythingValue(s))
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	testkit.Golden(t, "testdata/envelope_everything.json", pretty.Bytes())
}

func TestJSONKafkaEnvelopeShapes(t *testing.T) {
	// Shapes as Kafka's JsonConverter writes them.
	c := mustJSON(t, nil)
	cases := []struct {
		s    *data.Schema
		v    any
		want string
	}{
		{data.Int32Schema, int32(5), `{"schema":{"type":"int32","optional":false},"payload":5}`},
		{data.Float32Schema, float32(0.5), `{"schema":{"type":"float","optional":false},"payload":0.5}`},
		{data.Float64Schema, 0.25, `{"schema":{"type":"double","optional":false},"payload":0.25}`},
		{data.BytesSchema, []byte("hi"), `{"schema":{"type":"bytes","optional":false},"payload":"aGk="}`},
		{data.DecimalSchema(2), data.NewDecimal(12345, 2),
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"MDk="}`},
		{data.DateSchema(), time.Date(1970, 1, 11, 0, 0, 0, 0, time.UTC),
			`{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},"payload":10}`},
		{data.MapOf(data.Int32Schema, data.StringSchema), map[any]any{int32(2): "b", int32(1): "a"},
			`{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"string","optional":false},"optional":false},"payload":[[1,"a"],[2,"b"]]}`},
		{data.ArrayOf(data.BooleanSchema), []any{true},
			`{"schema":{"type":"array","items":{"type":"boolean","optional":false},"optional":false},"payload":[true]}`},
	}
	for _, tc := range cases {
		b, err := c.FromConnectData("t", tc.s, tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.s, b, tc.want)
		}
	}
	// Negative decimals use two's complement: -1 is 0xff.
	b, _ := c.FromConnectData("t", data.DecimalSchema(0), data.NewDecimal(-1, 0))
	if !strings.Contains(string(b), `"payload":"/w=="`) {
		t.Errorf("decimal -1: %s", b)
	}
}

func TestJSONSchemaless(t *testing.T) {
	c := mustJSON(t, map[string]string{KeySchemasEnable: "false"})
	in := map[string]any{
		"n": int64(1), "f": 1.5, "s": "x", "b": true, "nil": nil,
		"arr": []any{int64(1), "two"}, "obj": map[string]any{"k": int64(-3)},
	}
	b, err := c.FromConnectData("t", nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"arr":[1,"two"],"b":true,"f":1.5,"n":1,"nil":null,"obj":{"k":-3},"s":"x"}` {
		t.Fatalf("got %s", b)
	}
	s, v, err := c.ToConnectData("t", b)
	if err != nil || s != nil {
		t.Fatal(s, err)
	}
	if !data.ValuesEqual(v, in) {
		t.Fatalf("got %#v", v)
	}
	// A struct with a schema is written as its payload even without envelope.
	st := data.StructOf("", data.F("a", data.Int32Schema))
	b, err = c.FromConnectData("t", st, data.NewStruct(st).Put("a", int32(1)))
	if err != nil || string(b) != `{"a":1}` {
		t.Fatalf("%s %v", b, err)
	}
	// Non-string map keys become pairs.
	b, _ = c.FromConnectData("t", nil, map[any]any{int64(1): "a"})
	if string(b) != `[[1,"a"]]` {
		t.Fatalf("got %s", b)
	}
	// Envelope with null schema reads schemaless.
	ce := mustJSON(t, nil)
	s, v, err = ce.ToConnectData("t", []byte(`{"schema":null,"payload":{"a":[1,2.5]}}`))
	if err != nil || s != nil || !data.ValuesEqual(v, map[string]any{"a": []any{int64(1), 2.5}}) {
		t.Fatalf("%v %#v %v", s, v, err)
	}
	b, _ = ce.FromConnectData("t", nil, "x")
	if string(b) != `{"schema":null,"payload":"x"}` {
		t.Fatalf("got %s", b)
	}
}

func TestJSONErrors(t *testing.T) {
	c := mustJSON(t, nil)
	for _, in := range []string{
		`{"a":1}`,
		`{"schema":{"type":"int32"},"payload":1,"x":2}`,
		`[1]`,
	} {
		_, _, err := c.ToConnectData("t", []byte(in))
		if err == nil || !strings.Contains(err.Error(), "schemas.enable=false") {
			t.Errorf("%s: %v", in, err)
		}
	}
	for in, msg := range map[string]string{
		`{"schema":{"type":"int8","optional":false},"payload":300}`:    "not a valid int8",
		`{"schema":{"type":"nope","optional":false},"payload":1}`:      "unknown schema type",
		`{"schema":{"type":"bytes","optional":false},"payload":"%%%"}`: "invalid base64",
		`{"schema":{"type":"string","optional":false},"payload":1}`:    "expected a string",
		`{"schema":{"type":"array","optional":false},"payload":[]}`:    `must contain "items"`,
		`not json`: "invalid JSON",
	} {
		_, _, err := c.ToConnectData("t", []byte(in))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: want %q, got %v", in, msg, err)
		}
	}
	if _, err := c.FromConnectData("t", data.Int32Schema, int64(1)); err == nil || !strings.Contains(err.Error(), "invalid Go type int64") {
		t.Errorf("wrong Go type: %v", err)
	}
	if _, err := c.FromConnectData("t", data.Float64Schema, math.NaN()); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := NewJSON(map[string]string{KeySchemasEnable: "yes"}); err == nil {
		t.Error("schemas.enable=yes accepted")
	}
}

func TestStringAndByteArray(t *testing.T) {
	sc, err := New("StringConverter", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{"héllo", int32(5), int64(-1234567890123), int(-7), nil} {
		b, err := sc.FromConnectData("t", nil, v)
		if err != nil {
			t.Fatal(err)
		}
		s, got, err := sc.ToConnectData("t", b)
		if err != nil || !s.Equal(data.OptionalStringSchema) {
			t.Fatal(s, err)
		}
		if v == nil {
			if got != nil {
				t.Fatalf("nil round trip: %v", got)
			}
			continue
		}
		if got != strings.TrimSpace(toString(v)) {
			t.Fatalf("%v → %v", v, got)
		}
	}
	bc, err := New(ByteArrayClass, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bc.FromConnectData("t", data.BytesSchema, []byte{1, 2})
	if err != nil || !bytes.Equal(b, []byte{1, 2}) {
		t.Fatal(b, err)
	}
	if _, err := bc.FromConnectData("t", data.StringSchema, "x"); err == nil {
		t.Fatal("string schema accepted by ByteArrayConverter")
	}
	s, v, _ := bc.ToConnectData("t", []byte{9})
	if !s.Equal(data.OptionalBytesSchema) || !bytes.Equal(v.([]byte), []byte{9}) {
		t.Fatal(s, v)
	}
}

func toString(v any) string {
	b, _ := StringConverter{}.FromConnectData("", nil, v)
	return string(b)
}

func TestFromConfig(t *testing.T) {
	worker := map[string]string{
		"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                "JsonConverter",
		"value.converter.schemas.enable": "false",
	}
	k, err := FromConfig(true, nil, worker)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k.(StringConverter); !ok {
		t.Fatalf("key converter %T", k)
	}
	v, err := FromConfig(false, map[string]string{"name": "c"}, worker)
	if err != nil {
		t.Fatal(err)
	}
	if v.(*JSON).SchemasEnabled() {
		t.Fatal("worker's value.converter.schemas.enable=false ignored")
	}
	// A connector naming its converter uses only its own settings.
	v, err = FromConfig(false, map[string]string{"value.converter": "json"}, worker)
	if err != nil {
		t.Fatal(err)
	}
	if !v.(*JSON).SchemasEnabled() {
		t.Fatal("connector converter inherited the worker's settings")
	}
	d, err := FromConfig(false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(*JSON); !ok {
		t.Fatalf("default %T", d)
	}
	if _, err := FromConfig(false, map[string]string{"value.converter": "com.acme.Avro"}, nil); err == nil ||
		!strings.Contains(err.Error(), "value.converter") || !strings.Contains(err.Error(), "com.acme.Avro") {
		t.Fatalf("unknown class: %v", err)
	}
}

func TestWriteStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "ctl\x00\x01\x1f\t\r\n", "ünï😀", "bad\xffutf8", "<&>", "\u2028"} {
		var b bytes.Buffer
		data.WriteJSONString(&b, s)
		var back string
		if err := json.Unmarshal(b.Bytes(), &back); err != nil {
			t.Fatalf("%q → %s: %v", s, b.Bytes(), err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if back != want {
			t.Fatalf("%q → %s → %q", s, b.Bytes(), back)
		}
	}
}

func BenchmarkJSONRangeRecord(b *testing.B) {
	c, _ := NewJSON(nil)
	s := data.StructOf("r", data.F("id", data.Int64Schema), data.F("payload", data.StringSchema))
	v := data.NewStruct(s).Put("id", int64(123456)).Put("payload", strings.Repeat("x", 200))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromConnectData("t", s, v); err != nil {
			b.Fatal(err)
		}
	}
}

func TestJSONSchemaCache(t *testing.T) {
	c := mustJSON(t, nil)
	s := data.StructOf("r", data.F("id", data.Int64Schema))
	b1, _ := c.FromConnectData("t", s, data.NewStruct(s).Put("id", int64(1)))
	b2, _ := c.FromConnectData("t", s, data.NewStruct(s).Put("id", int64(2)))
	s1, v1, err1 := c.ToConnectData("t", b1)
	s2, v2, err2 := c.ToConnectData("t", b2)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if s1 != s2 {
		t.Fatal("schema parsed twice")
	}
	if v1.(*data.Struct).Get("id") != int64(1) || v2.(*data.Struct).Get("id") != int64(2) {
		t.Fatal(v1, v2)
	}
	for i := 0; i < schemaCacheSize+10; i++ {
		b, _ := c.FromConnectData("t", data.StructOf("n"+strings.Repeat("x", i), data.F("id", data.Int64Schema)), data.NewStruct(data.StructOf("n"+strings.Repeat("x", i), data.F("id", data.Int64Schema))).Put("id", int64(i)))
		if _, _, err := c.ToConnectData("t", b); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.schemas) > schemaCacheSize {
		t.Fatalf("cache holds %d schemas", len(c.schemas))
	}
	if _, _, err := c.ToConnectData("t", []byte(`{"schema":null,"payload":1} x`)); err == nil {
		t.Fatal("trailing data accepted")
	}
	cs := mustJSON(t, map[string]string{KeySchemasEnable: "false"})
	if _, _, err := cs.ToConnectData("t", []byte(`1 2`)); err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Fatal(err)
	}
}

func BenchmarkJSONToConnectRangeRecord(b *testing.B) {
	c, _ := NewJSON(nil)
	s := data.StructOf("r", data.F("id", data.Int64Schema), data.F("payload", data.StringSchema))
	raw, _ := c.FromConnectData("t", s, data.NewStruct(s).Put("id", int64(123456)).Put("payload", strings.Repeat("x", 200)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.ToConnectData("t", raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONRangeRecordNoEnvelope(b *testing.B) {
	c, _ := NewJSON(map[string]string{KeySchemasEnable: "false"})
	s := data.StructOf("r", data.F("id", data.Int64Schema), data.F("payload", data.StringSchema))
	v := data.NewStruct(s).Put("id", int64(123456)).Put("payload", strings.Repeat("x", 200))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromConnectData("t", s, v); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendMatchesFromConnectData checks every Appender against its own
// FromConnectData: the same bytes after the caller's prefix, null exactly
// when FromConnectData returns nil, and the prefix left intact.
func TestAppendMatchesFromConnectData(t *testing.T) {
	s := everythingSchema()
	type input struct {
		schema *data.Schema
		value  any
	}
	inputs := []input{
		{nil, nil}, {data.OptionalStringSchema, nil}, {data.StringSchema, ""}, {data.StringSchema, "héllo"},
		{data.Int64Schema, int64(-42)}, {data.Int32Schema, int32(7)}, {nil, 12}, {data.BytesSchema, []byte("raw")},
		{s, everythingValue(s)}, {nil, map[string]any{"a": []any{int64(1), "x"}}},
	}
	convs := map[string]Appender{
		"json+schema": mustJSON(t, nil), "json": mustJSON(t, map[string]string{"schemas.enable": "false"}), "string": StringConverter{},
	}
	for name, app := range convs {
		conv := app.(Converter)
		for i, in := range inputs {
			want, werr := conv.FromConnectData("t", in.schema, in.value)
			prefix := []byte("prefix")
			got, null, err := app.AppendConnectData(prefix[:len(prefix):len(prefix)], "t", in.schema, in.value)
			if (err != nil) != (werr != nil) {
				t.Fatalf("%s #%d: append error %v, FromConnectData error %v", name, i, err, werr)
			}
			if err != nil {
				continue
			}
			if null != (want == nil) || !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
				t.Fatalf("%s #%d: append = %q (null %v), FromConnectData = %q", name, i, got, null, want)
			}
		}
	}
	if b, _ := (StringConverter{}).FromConnectData("t", data.StringSchema, ""); b == nil {
		t.Fatal("an empty string became null")
	}
}
