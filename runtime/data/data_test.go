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

package data

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestStructSetGetValidate(t *testing.T) {
	s := StructOf("p", F("id", Int64Schema), F("name", OptionalStringSchema), F("n", Int32Schema.WithDefault(int32(7))))
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	st := NewStruct(s)
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "id: null value for required int64") {
		t.Fatalf("missing required field: %v", err)
	}
	if err := st.Set("id", int32(1)); err == nil || !strings.Contains(err.Error(), `field "id"`) {
		t.Fatalf("wrong type: %v", err)
	}
	if err := st.Set("nope", 1); err == nil {
		t.Fatal("unknown field accepted")
	}
	st.Put("id", int64(1))
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	if st.Get("n") != int32(7) || st.Get("name") != nil {
		t.Fatalf("defaults: %v %v", st.Get("n"), st.Get("name"))
	}
	if _, ok := st.Lookup("nope"); ok {
		t.Fatal("lookup of unknown field")
	}
	if got := st.String(); got != "Struct{id=1}" {
		t.Fatalf("String() = %q", got)
	}
	other := NewStruct(s).Put("id", int64(1))
	if !st.Equal(other) || st.Equal(NewStruct(s).Put("id", int64(2))) {
		t.Fatal("Equal")
	}
}

func TestNewStructValues(t *testing.T) {
	s := StructOf("p", F("id", Int64Schema), F("name", OptionalStringSchema))
	st, err := NewStructValues(s, []any{int64(3), "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Equal(NewStruct(s).Put("id", int64(3)).Put("name", "x")) {
		t.Fatalf("NewStructValues = %v", st)
	}
	if _, err := NewStructValues(s, []any{int32(3), nil}); err == nil || !strings.Contains(err.Error(), `field "id"`) {
		t.Fatalf("wrong type: %v", err)
	}
	if _, err := NewStructValues(s, []any{int64(3)}); err == nil || !strings.Contains(err.Error(), "2 fields, got 1 values") {
		t.Fatalf("wrong count: %v", err)
	}
	if _, err := NewStructValues(Int64Schema, nil); err == nil {
		t.Fatal("a non-struct schema was accepted")
	}
}

// NewStructsValues builds a batch of structs over one values slice, each
// checked like NewStructValues, with the failing struct's position named.
func TestNewStructsValues(t *testing.T) {
	s := StructOf("p", F("id", Int64Schema), F("name", OptionalStringSchema))
	sts, err := NewStructsValues(s, []any{int64(3), "x", int64(4), nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || !sts[0].Equal(NewStruct(s).Put("id", int64(3)).Put("name", "x")) || !sts[1].Equal(NewStruct(s).Put("id", int64(4))) {
		t.Fatalf("NewStructsValues = %v", sts)
	}
	if _, err := NewStructsValues(s, []any{int64(3), "x", int32(4), nil}); err == nil || !strings.Contains(err.Error(), `struct 1: field "id"`) {
		t.Fatalf("wrong type: %v", err)
	}
	if _, err := NewStructsValues(s, []any{int64(3), "x", int64(4)}); err == nil || !strings.Contains(err.Error(), "not a multiple") {
		t.Fatalf("wrong count: %v", err)
	}
	if _, err := NewStructsValues(Int64Schema, nil); err == nil {
		t.Fatal("a non-struct schema was accepted")
	}
}

func TestSchemaCheck(t *testing.T) {
	bad := []*Schema{
		{Type: "int128"},
		{Type: TypeArray},
		{Type: TypeMap, Key: StringSchema},
		{Type: TypeStruct, Fields: []Field{{Name: "a", Schema: StringSchema}, {Name: "a", Index: 1, Schema: StringSchema}}},
		{Type: TypeStruct, Fields: []Field{{Name: "a", Index: 3, Schema: StringSchema}}},
		{Type: TypeString, Name: TimestampName},
		{Type: TypeBytes, Name: DecimalName},
		{Type: TypeInt32, Default: "x"},
	}
	for _, s := range bad {
		if err := s.Check(); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
	if err := DecimalSchema(3).Check(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateValues(t *testing.T) {
	cases := []struct {
		s  *Schema
		v  any
		ok bool
	}{
		{Int8Schema, int8(1), true},
		{Int8Schema, 1, false},
		{ArrayOf(Int32Schema), []any{int32(1), nil}, false},
		{ArrayOf(OptionalInt32Schema), []any{int32(1), nil}, true},
		{MapOf(StringSchema, BooleanSchema), map[string]any{"a": true}, true},
		{MapOf(Int32Schema, BooleanSchema), map[string]any{"a": true}, false},
		{MapOf(Int32Schema, BooleanSchema), map[any]any{int32(1): true}, true},
		{TimestampSchema(), time.Now(), true},
		{TimestampSchema(), int64(1), false},
		{DateSchema(), time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{DateSchema(), time.Date(2020, 1, 1, 1, 0, 0, 0, time.UTC), false},
		{TimeSchema(), time.Date(1970, 1, 1, 1, 0, 0, 0, time.UTC), true},
		{TimeSchema(), time.Date(1971, 1, 1, 1, 0, 0, 0, time.UTC), false},
		{DecimalSchema(2), NewDecimal(1, 2), true},
		{DecimalSchema(2), NewDecimal(1, 3), false},
		{nil, struct{}{}, true},
	}
	for _, tc := range cases {
		err := tc.s.Validate(tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("%s %#v: err=%v want ok=%v", tc.s, tc.v, err, tc.ok)
		}
	}
}

func TestDecimalEncoding(t *testing.T) {
	for _, n := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, -32768, 1 << 40, -(1 << 40)} {
		d := NewDecimal(n, 3)
		b := DecimalToBytes(d)
		// Same as Java's BigInteger.toByteArray: minimal two's complement.
		want := new(big.Int).SetInt64(n)
		if got := DecimalFromBytes(b, 3); got.Unscaled.Cmp(want) != 0 {
			t.Errorf("%d: round trip %s via %x", n, got.Unscaled, b)
		}
		if len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
			t.Errorf("%d: %x is not minimal", n, b)
		}
	}
	for in, want := range map[string]string{"-12.345": "-12.345", "0.05": "0.05", "7": "7", "-0.5": "-0.5"} {
		d, err := ParseDecimal(in)
		if err != nil || d.String() != want {
			t.Errorf("%s: %v %v", in, d, err)
		}
	}
	if _, err := ParseDecimal("1e5"); err == nil {
		t.Error("exponent accepted")
	}
}

func TestHeadersAndRecords(t *testing.T) {
	var h Headers
	h.Add("a", StringSchema, "1")
	h.AddBytes("a", []byte("2"))
	h.Add("b", nil, nil)
	if x, ok := h.Last("a"); !ok || string(x.Value.([]byte)) != "2" {
		t.Fatal(x)
	}
	if len(h.All("a")) != 2 {
		t.Fatal(h.All("a"))
	}
	r := &SinkRecord{Topic: "t", Partition: 3}
	if r.TopicPartition().String() != "t-3" {
		t.Fatal(r.TopicPartition())
	}
}

func TestSchemaString(t *testing.T) {
	s := StructOf("x", F("a", ArrayOf(OptionalInt32Schema)), F("m", MapOf(StringSchema, BytesSchema)))
	if got := s.String(); got != "x(struct){a:array<int32?>,m:map<string,bytes>}" {
		t.Fatal(got)
	}
}

func TestStructMarshalJSON(t *testing.T) {
	s := StructOf("x", F("id", Int64Schema), F("at", TimestampSchema()), F("price", DecimalSchema(2).AsOptional()), F("tags", MapOf(StringSchema, Int32Schema)))
	st := NewStruct(s).Put("id", int64(3)).Put("at", time.UnixMilli(1500).UTC()).Put("tags", map[any]any{"b": int32(2), "a": int32(1)})
	b, err := json.Marshal(map[string]any{"v": st, "d": NewDecimal(-5, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"d":-0.5,"v":{"id":3,"at":1500,"price":null,"tags":{"a":1,"b":2}}}` {
		t.Fatal(string(b))
	}
	if _, err := json.Marshal(NewStruct(s)); err == nil {
		t.Fatal("struct with a missing required field marshalled")
	}
}
