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
	"math/big"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

// An order as a Go program using franz-go's sr.Serde with hamba/avro
// writes it.
type serdeOrder struct {
	ID      int64     `avro:"id"`
	Qty     int32     `avro:"qty"`
	Note    *string   `avro:"note"`
	Price   *big.Rat  `avro:"price"`
	Day     time.Time `avro:"day"`
	At      time.Time `avro:"at"`
	Status  string    `avro:"status"`
	Payload []byte    `avro:"payload"`
	Tags    []string  `avro:"tags"`
}

const serdeOrderSchema = `{"type":"record","name":"Order","namespace":"com.example","fields":[
 {"name":"id","type":"long"},
 {"name":"qty","type":"int"},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
 {"name":"payload","type":"bytes"},
 {"name":"tags","type":{"type":"array","items":"string"}}]}`

// A record written by franz-go's own sr.Serde is read by the converter
// with its values, and the converter (use.latest.version) writes the same
// values back byte for byte as the Serde wrote them; the Serde reads what
// the converter wrote.
func TestAvroReadsAndWritesFranzGoSerde(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(reg.URL))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: serdeOrderSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(serdeOrderSchema)
	var serde sr.Serde
	serde.Register(ss.ID, serdeOrder{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	note := "fragile"
	in := serdeOrder{ID: 42, Qty: -3, Note: &note, Price: big.NewRat(-12345, 100),
		Day: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), At: time.Date(2026, 12, 2, 13, 14, 15, 678e6, time.UTC),
		Status: "PAID", Payload: []byte{0, 0xff, 7}, Tags: []string{"a", "b"}}
	written, err := serde.Encode(in)
	if err != nil {
		t.Fatal(err)
	}

	reader := newAvro(t, map[string]string{KeyRegistryURL: reg.URL}, false)
	s, v, err := reader.ToConnectData("orders", written)
	if err != nil {
		t.Fatal(err)
	}
	st := v.(*data.Struct)
	want := map[string]any{"id": int64(42), "qty": int32(-3), "note": "fragile", "price": data.NewDecimal(-12345, 2),
		"day": in.Day, "at": in.At, "status": "PAID", "payload": []byte{0, 0xff, 7}, "tags": []any{"a", "b"}}
	for k, w := range want {
		if got := st.Get(k); !data.ValuesEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", k, got, w)
		}
	}
	if s.Name != "com.example.Order" || s.Field("status").Schema.Parameters[avroEnumParam] != "com.example.Status" {
		t.Errorf("schema %s, enum params %v", s, s.Field("status").Schema.Parameters)
	}

	writer := newAvro(t, map[string]string{KeyRegistryURL: reg.URL, KeyAutoRegister: "false", KeyUseLatestVersion: "true"}, false)
	out, err := writer.FromConnectData("orders", s, st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, written) {
		t.Fatalf("converter wrote\n% x\nthe serde wrote\n% x", out, written)
	}
	var back serdeOrder
	if err := serde.Decode(out, &back); err != nil || back.ID != 42 || *back.Note != "fragile" || back.Price.Cmp(in.Price) != 0 || back.Status != "PAID" {
		t.Fatalf("serde read back %+v, %v", back, err)
	}

	// With auto.register the converter registers the schema it derives
	// (a second id); the Serde, told that id, reads the values.
	auto := newAvro(t, map[string]string{KeyRegistryURL: reg.URL}, false)
	out2, err := auto.FromConnectData("orders", s, st)
	if err != nil {
		t.Fatal(err)
	}
	id2, body, err := (&sr.ConfluentHeader{}).DecodeID(out2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, written[5:]) {
		t.Fatalf("body under id %d differs from the serde's:\n% x\n% x", id2, body, written[5:])
	}
}
