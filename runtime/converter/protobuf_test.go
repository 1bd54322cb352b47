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
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

// Every type goes to Protobuf in the wire format (with the single-0
// message index) and back with equal schemas and values; the registered
// schema is .proto text.
func TestProtobufRoundTripEveryType(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	c, err := New("ProtobufConverter", map[string]string{KeyRegistryURL: reg.URL}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, v := avroEverything()
	b, err := c.FromConnectData("orders", s, v)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || b[5] != 0 {
		t.Fatalf("not the wire format with message index [0]: % x", b[:min(8, len(b))])
	}
	gotS, gotV, err := c.ToConnectData("orders", b)
	if err != nil {
		t.Fatal(err)
	}
	if !gotS.Equal(s) {
		t.Fatalf("schema\n got %s\nwant %s", gotS, s)
	}
	for _, f := range s.Fields {
		if want, got := v.Get(f.Name), gotV.(*data.Struct).Get(f.Name); !data.ValuesEqual(normalize(want), normalize(got)) {
			t.Errorf("field %s = %#v, want %#v", f.Name, got, want)
		}
	}
	cl, _ := sr.NewClient(sr.URLs(reg.URL))
	ss, err := cl.SchemaByVersion(context.Background(), "orders-value", -1)
	if err != nil || ss.Type != sr.TypeProtobuf || !strings.Contains(ss.Schema.Schema, "message Everything {") || strings.Count(ss.Schema.Schema, "message ") != 2 {
		t.Fatalf("registered %v %q: %v", ss.Type, ss.Schema.Schema, err)
	}
	// Optional fields keep null apart from an empty value (proto3
	// optional: explicit presence).
	opt := data.StructOf("com.example.Opt", data.F("by", data.OptionalBytesSchema), data.F("s", data.OptionalStringSchema),
		data.F("n", data.OptionalInt64Schema), data.F("arr", data.ArrayOf(data.Int32Schema).AsOptional()))
	for _, want := range []*data.Struct{data.NewStruct(opt), data.NewStruct(opt).Put("by", []byte{}).Put("s", "").Put("n", int64(0)).Put("arr", []any{int32(0)})} {
		b, err := c.FromConnectData("opt", opt, want)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := c.ToConnectData("opt", b)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range opt.Fields {
			if w, g := want.Get(f.Name), got.(*data.Struct).Get(f.Name); (w == nil) != (g == nil) || !data.ValuesEqual(normalize(w), normalize(g)) {
				t.Errorf("optional %s = %#v, want %#v", f.Name, g, w)
			}
		}
	}
	// A struct name that is no Protobuf package (a topic prefix with a
	// dash) comes back as it was.
	dashed := data.StructOf("my-db.public.t.Value", data.F("id", data.Int64Schema))
	db, err := c.FromConnectData("dashed", dashed, data.NewStruct(dashed).Put("id", int64(1)))
	if err != nil {
		t.Fatal(err)
	}
	if gotS, _, err := c.ToConnectData("dashed", db); err != nil || !gotS.Equal(dashed) {
		t.Fatalf("read %s, %v", gotS, err)
	}
	// A Timestamp before 1970 is written in google.protobuf.Timestamp's
	// canonical form (nanos in [0, 1e9)), as other readers require.
	tsS := data.StructOf("com.example.T", data.F("at", data.TimestampSchema()))
	tb, err := c.FromConnectData("ts", tsS, data.NewStruct(tsS).Put("at", time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := c.(*Protobuf).writer(tsS)
	tm := dynamicpb.NewMessage(w.message)
	if err := proto.Unmarshal(tb[6:], tm); err != nil {
		t.Fatal(err)
	}
	at := tm.Get(w.message.Fields().ByName("at")).Message()
	if sec, ns := at.Get(at.Descriptor().Fields().ByName("seconds")).Int(), at.Get(at.Descriptor().Fields().ByName("nanos")).Int(); sec != -1 || ns != 999e6 {
		t.Errorf("1969-12-31T23:59:59.999Z written as seconds %d nanos %d, want -1 and 999000000", sec, ns)
	}
	// What Protobuf cannot hold is an error naming the field.
	all := everythingSchema()
	if _, err := c.FromConnectData("t", all, everythingValue(all)); err == nil || !strings.Contains(err.Error(), "field byID") {
		t.Fatalf("a null map value: %v", err)
	}
	nested := data.StructOf("N", data.F("grid", data.ArrayOf(data.ArrayOf(data.Int32Schema))))
	if _, err := c.FromConnectData("t", nested, data.NewStruct(nested).Put("grid", []any{})); err == nil || !strings.Contains(err.Error(), "field grid[]") {
		t.Fatalf("an array of arrays: %v", err)
	}
}

const serdeProto = `syntax = "proto3";
package com.example;
import "google/protobuf/timestamp.proto";

message Order {
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
  int64 id = 1;
  sint32 qty = 2;
  optional string note = 3;
  google.protobuf.Timestamp at = 4;
  Status status = 5;
  bytes payload = 6;
  repeated string tags = 7;
  map<string, int64> counts = 8;
}

message Refund {
  int64 order_id = 1;
  string reason = 2;
}
`

// franz-go's sr.Serde, with proto.Marshal of dynamic messages and the
// message-index header, and the converter read each other's records: the
// first message ([0], the single-0 shortcut) byte for byte both ways, and
// the second ([1]) read by the converter.
func TestProtobufReadsAndWritesFranzGoSerde(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	ctx := context.Background()
	cl, _ := sr.NewClient(sr.URLs(reg.URL))
	ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: serdeProto, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	files, err := (&protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"order.proto": serdeProto})})}).Compile(ctx, "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	orderMD, refundMD := files[0].Messages().Get(0), files[0].Messages().Get(1)
	encode := sr.EncodeFn(func(v any) ([]byte, error) {
		return proto.MarshalOptions{Deterministic: true}.Marshal(v.(proto.Message))
	})
	decode := sr.DecodeFn(func(b []byte, v any) error { return proto.Unmarshal(b, v.(proto.Message)) })
	var orders, refunds sr.Serde
	orders.Register(ss.ID, &dynamicpb.Message{}, encode, decode, sr.Index(0))
	refunds.Register(ss.ID, &dynamicpb.Message{}, encode, decode, sr.Index(1))

	at := time.Date(2026, 12, 2, 13, 14, 15, 678e6, time.UTC)
	order := dynamicpb.NewMessage(orderMD)
	set := func(m *dynamicpb.Message, name string, v protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
	}
	set(order, "id", protoreflect.ValueOfInt64(42))
	set(order, "qty", protoreflect.ValueOfInt32(-3))
	set(order, "note", protoreflect.ValueOfString("fragile"))
	ts := order.Mutable(orderMD.Fields().ByName("at")).Message().Interface().(*dynamicpb.Message)
	set(ts, "seconds", protoreflect.ValueOfInt64(at.Unix()))
	set(ts, "nanos", protoreflect.ValueOfInt32(678e6))
	set(order, "status", protoreflect.ValueOfEnum(1))
	set(order, "payload", protoreflect.ValueOfBytes([]byte{0, 0xff, 7}))
	tags := order.Mutable(orderMD.Fields().ByName("tags")).List()
	tags.Append(protoreflect.ValueOfString("a"))
	tags.Append(protoreflect.ValueOfString("b"))
	counts := order.Mutable(orderMD.Fields().ByName("counts")).Map()
	counts.Set(protoreflect.ValueOfString("x").MapKey(), protoreflect.ValueOfInt64(1))
	counts.Set(protoreflect.ValueOfString("y").MapKey(), protoreflect.ValueOfInt64(-2))
	written, err := orders.Encode(order)
	if err != nil {
		t.Fatal(err)
	}
	if written[5] != 0 {
		t.Fatalf("the serde's index for [0] is % x, want the single 0", written[5])
	}

	reader, err := New("protobuf", map[string]string{KeyRegistryURL: reg.URL}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := reader.ToConnectData("orders", written)
	if err != nil {
		t.Fatal(err)
	}
	st := v.(*data.Struct)
	want := map[string]any{"id": int64(42), "qty": int32(-3), "note": "fragile", "at": at, "status": "PAID",
		"payload": []byte{0, 0xff, 7}, "tags": []any{"a", "b"}, "counts": map[any]any{"x": int64(1), "y": int64(-2)}}
	for k, w := range want {
		if got := st.Get(k); !data.ValuesEqual(normalize(got), normalize(w)) {
			t.Errorf("%s = %#v, want %#v", k, got, w)
		}
	}
	if s.Name != "com.example.Order" || !s.Field("note").Schema.Optional || s.Field("qty").Schema.Optional {
		t.Errorf("schema %s", s)
	}

	writer, err := New("protobuf", map[string]string{KeyRegistryURL: reg.URL, KeyAutoRegister: "false", KeyUseLatestVersion: "true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := writer.FromConnectData("orders", s, st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, written) {
		t.Fatalf("converter wrote\n% x\nthe serde wrote\n% x", out, written)
	}
	back := dynamicpb.NewMessage(orderMD)
	if err := orders.Decode(out, back); err != nil || !proto.Equal(back, order) {
		t.Fatalf("serde read back %v, %v", back, err)
	}

	refund := dynamicpb.NewMessage(refundMD)
	set(refund, "order_id", protoreflect.ValueOfInt64(42))
	set(refund, "reason", protoreflect.ValueOfString("broken"))
	rb, err := refunds.Encode(refund)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rb[5:7], []byte{2, 2}) { // zig-zag: length 1, index 1
		t.Fatalf("index [1] encoded as % x", rb[5:7])
	}
	rs, rv, err := reader.ToConnectData("orders", rb)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Name != "com.example.Refund" || rv.(*data.Struct).Get("order_id") != int64(42) || rv.(*data.Struct).Get("reason") != "broken" {
		t.Fatalf("refund read as %s %v", rs, rv)
	}
}

// A schema that imports another by registry reference reads with it; a
// oneof, a uint64 beyond int64 and bytes without the wire format are
// errors naming the field or the format.
func TestProtobufReferencesAndUnmappable(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	ctx := context.Background()
	cl, _ := sr.NewClient(sr.URLs(reg.URL))
	const money = "syntax = \"proto3\";\npackage shop;\nmessage Money { string currency = 1; sint64 cents = 2; }\n"
	const order = "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\n" +
		"message Order { Money total = 1; uint64 big = 2; }\nmessage Choice { oneof pick { string a = 1; int32 b = 2; } }\n"
	if _, err := cl.CreateSchema(ctx, "shop-money", sr.Schema{Schema: money, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: order, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "shop/money.proto", Subject: "shop-money", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := (&protocompile.Compiler{Resolver: &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(
		map[string]string{"o.proto": order, "shop/money.proto": money})}}).Compile(ctx, "o.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().Get(0)
	m := dynamicpb.NewMessage(md)
	total := m.Mutable(md.Fields().ByName("total")).Message()
	total.Set(total.Descriptor().Fields().ByName("currency"), protoreflect.ValueOfString("EUR"))
	total.Set(total.Descriptor().Fields().ByName("cents"), protoreflect.ValueOfInt64(-1999))
	encode := func(m proto.Message, index ...int) []byte {
		b, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, ss.ID, index)
		body, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, body...)
	}
	c, err := New(ProtobufClass, map[string]string{KeyRegistryURL: reg.URL}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := c.ToConnectData("orders", encode(m, 0))
	if err != nil {
		t.Fatal(err)
	}
	tot := v.(*data.Struct).Get("total").(*data.Struct)
	if s.Field("total").Schema.Name != "shop.Money" || tot.Get("currency") != "EUR" || tot.Get("cents") != int64(-1999) || v.(*data.Struct).Get("big") != int64(0) {
		t.Fatalf("read %s %v", s, v)
	}
	m.Set(md.Fields().ByName("big"), protoreflect.ValueOfUint64(1<<63))
	if _, _, err := c.ToConnectData("orders", encode(m, 0)); err == nil || !strings.Contains(err.Error(), "field big") {
		t.Fatalf("uint64 beyond int64: %v", err)
	}
	if _, _, err := c.ToConnectData("orders", encode(dynamicpb.NewMessage(files[0].Messages().Get(1)), 1)); err == nil || !strings.Contains(err.Error(), "field a: is in oneof pick") {
		t.Fatalf("oneof: %v", err)
	}
	if _, _, err := c.ToConnectData("orders", encode(m, 5)); err == nil || !strings.Contains(err.Error(), "message index [5]") {
		t.Fatalf("a bad index: %v", err)
	}
	if _, _, err := c.ToConnectData("orders", []byte("{}")); err == nil || !strings.Contains(err.Error(), "wire format") {
		t.Fatalf("not the wire format: %v", err)
	}
}
