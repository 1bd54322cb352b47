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
	"math"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// The direct Avro writer gives hamba/avro's bytes for every struct of
// plain fields (required and optional, null and set, nested, at the
// edges of each type), and hands over what it does not write.
func TestAvroDirectMatchesHamba(t *testing.T) {
	inner := data.StructOf("t.Inner", data.F("label", data.StringSchema), data.F("w", data.OptionalFloat64Schema))
	plain := data.StructOf("t.Plain",
		data.F("i8", data.Int8Schema), data.F("i16", data.Int16Schema), data.F("i32", data.Int32Schema),
		data.F("i64", data.Int64Schema), data.F("f32", data.Float32Schema), data.F("f64", data.Float64Schema),
		data.F("flag", data.BooleanSchema), data.F("name", data.StringSchema), data.F("blob", data.BytesSchema),
		data.F("optName", data.OptionalStringSchema), data.F("optI64", data.OptionalInt64Schema),
		data.F("inner", inner), data.F("optInner", inner.AsOptional()))
	value := func(i int64, set bool) *data.Struct {
		v := data.NewStruct(plain).Put("i8", int8(i)).Put("i16", int16(i*300)).Put("i32", int32(i*70000)).Put("i64", i*1e12).
			Put("f32", float32(i)/3).Put("f64", float64(i)/7).Put("flag", i%2 == 0).Put("name", "név "+string(rune('a'+i%26))).
			Put("blob", []byte{byte(i), 0, 0xff}).Put("inner", data.NewStruct(inner).Put("label", ""))
		if set {
			v.Put("optName", "").Put("optI64", -i).Put("optInner", data.NewStruct(plain.Field("optInner").Schema).Put("label", "x").Put("w", math.Inf(-1)))
		}
		return v
	}
	edges := data.NewStruct(plain).Put("i8", int8(math.MinInt8)).Put("i16", int16(math.MaxInt16)).Put("i32", int32(math.MinInt32)).
		Put("i64", int64(math.MinInt64)).Put("f32", float32(math.NaN())).Put("f64", -0.0).Put("flag", false).Put("name", "").
		Put("blob", []byte{}).Put("inner", data.NewStruct(inner).Put("label", "l").Put("w", math.MaxFloat64)).Put("optI64", int64(math.MaxInt64))
	rangeRow := data.StructOf("r.Record", data.F("id", data.Int64Schema), data.F("payload", data.StringSchema))
	es, ev := avroEverything()
	cases := []struct {
		s      *data.Schema
		v      any
		direct bool
	}{
		{plain, value(1, true), true}, {plain, value(2, false), true}, {plain, value(-77, true), true}, {plain, edges, true},
		{rangeRow, data.NewStruct(rangeRow).Put("id", int64(123456789)).Put("payload", "x"), true},
		{es, ev, false}, // logical types, arrays, maps: hamba's
	}
	for i, c := range cases {
		text, err := avroSchemaText(c.s)
		if err != nil {
			t.Fatal(err)
		}
		target, api, err := parseAvro(text)
		if err != nil {
			t.Fatal(err)
		}
		native, err := toAvro("", target, c.s, c.v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := api.Marshal(target, native)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendAvroDirect([]byte("hdr"), target, c.s, c.v)
		if ok != c.direct {
			t.Fatalf("case %d: written directly %v, want %v", i, ok, c.direct)
		}
		if ok && !bytes.Equal(got, append([]byte("hdr"), want...)) {
			t.Fatalf("case %d:\n direct % x\n hamba  % x", i, got[3:], want)
		}
	}
	// A struct that lacks the Avro record's fields is hamba's (the
	// registry's defaults, or the general path's error).
	other := data.NewStruct(rangeRow).Put("id", int64(1)).Put("payload", "x")
	text, _ := avroSchemaText(plain)
	target, _, _ := parseAvro(text)
	if _, ok := appendAvroDirect(nil, target, plain, other); ok {
		t.Fatal("a struct without the record's fields was written directly")
	}
}
