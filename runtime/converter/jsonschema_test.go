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
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

// Every type goes to JSON Schema in the wire format and back with equal
// values and schemas.
func TestJSONSchemaRoundTripEveryType(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	c, err := New("io.confluent.connect.json.JsonSchemaConverter", map[string]string{KeyRegistryURL: reg.URL}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, v := avroEverything()
	b, err := c.FromConnectData("orders", s, v)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || !json.Valid(b[5:]) {
		t.Fatalf("not the wire format with JSON: %q", b)
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
	all := everythingSchema()
	if _, err := c.FromConnectData("t", all, everythingValue(all)); err == nil || !strings.Contains(err.Error(), "field byID") {
		t.Fatalf("unmappable map: %v", err)
	}
}

type serdeItem struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Note *string `json:"note"`
}

// franz-go's sr.Serde with encoding/json and the converter read each
// other's records, byte for byte; a plain JSON Schema (no connect.*
// annotations) reads with JSON's types.
func TestJSONSchemaReadsAndWritesFranzGoSerde(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	cl, _ := sr.NewClient(sr.URLs(reg.URL))
	schema := `{"type":"object","title":"Item","properties":{"id":{"type":"integer"},"name":{"type":"string"},"note":{"type":["null","string"]}},"required":["id","name","note"]}`
	ss, err := cl.CreateSchema(context.Background(), "items-value", sr.Schema{Schema: schema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	serde.Register(ss.ID, serdeItem{}, sr.EncodeFn(json.Marshal), sr.DecodeFn(json.Unmarshal))
	note := "n"
	written, err := serde.Encode(serdeItem{ID: 7, Name: "apple", Note: &note})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New("JsonSchemaConverter", map[string]string{KeyRegistryURL: reg.URL, KeyAutoRegister: "false", KeyUseLatestVersion: "true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := c.ToConnectData("items", written)
	if err != nil {
		t.Fatal(err)
	}
	st := v.(*data.Struct)
	if st.Get("id") != int64(7) || st.Get("name") != "apple" || st.Get("note") != "n" || s.Name != "Item" {
		t.Fatalf("read %s %v", s, st)
	}
	out, err := c.FromConnectData("items", s, st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, written) {
		t.Fatalf("converter wrote %q, the serde wrote %q", out, written)
	}
	var back serdeItem
	if err := serde.Decode(out, &back); err != nil || back.ID != 7 || *back.Note != "n" {
		t.Fatalf("serde read %+v, %v", back, err)
	}
}

// The JSON Schema converter reads with JsonConverter's fast reader and
// offers the JSON text path: on well-formed records and on every kind of
// payload they must hand over, both agree with the general path (values
// and errors; the text byte for byte), and a text goes back as its bytes.
func TestJSONSchemaFastPathsAgree(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	c, err := NewJSONSchema(map[string]string{KeyRegistryURL: reg.URL}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, _, vs, v := tableRow(7)
	row, err := c.FromConnectData("orders", vs, v)
	if err != nil {
		t.Fatal(err)
	}
	header := row[:5]
	inputs := [][]byte{row}
	for _, p := range []string{
		`{"id":1,"name":"n","qty":2,"price":12.5,"at":1700000000007,"note":null}`,
		`{"note":"x","at":1700000000007,"qty":2,"name":"n","id":1}`, // other order
		`{"id":1,"name":"n","qty":2,"at":1700000000007}`,            // optional fields missing
		`{"id":1,"name":"n","qty":2,"at":1700000000007,"id":3}`,     // duplicate
		`{"id":1,"name":"n","qty":2,"at":1700000000007,"extra":1}`,  // unknown field
		`{"id":1.0,"name":"n","qty":2,"at":1700000000007}`,          // fraction
		`{"id":1,"name":"a\"b\u00e9","qty":2,"at":1700000000007}`,   // escapes
		`{"id":1,"name":"n","qty":2147483648,"at":1700000000007}`,   // overflow
		` { "id" : 1 , "name" : "n" , "qty" : 2 , "at" : 1700000000007 } `,
		`{"id":1,"name":"n","qty":2,"at":1700000000007} x`, `{"id":1`, `null`, `[1]`, ``,
	} {
		inputs = append(inputs, append(bytes.Clone(header), p...))
	}
	general := func(b []byte) (*data.Schema, any, error) {
		_, body, schema, err := c.read(b)
		if err != nil {
			return nil, nil, err
		}
		raw, err := decodeJSON(body)
		if err != nil {
			return nil, nil, err
		}
		v, err := c.payload.readValue(schema, raw, "")
		return schema, v, err
	}
	texts := 0
	for _, in := range inputs {
		ws, wv, werr := general(in)
		gs, gv, gerr := c.ToConnectData("orders", in)
		if (werr == nil) != (gerr == nil) || (werr == nil && (gs != ws || !data.ValuesEqual(gv, wv))) {
			t.Fatalf("%q: read %v %v (%v), the general path %v %v (%v)", in, gs, gv, gerr, ws, wv, werr)
		}
		for _, enc := range []data.JSONEncoder{{}, {NumericDecimal: true}} {
			text, ts, ok := c.AppendJSONText(nil, enc, "orders", in)
			if !ok {
				continue
			}
			texts++
			want, err := enc.Append(nil, gs, gv)
			if gerr != nil || gv == nil || err != nil || ts != gs || !bytes.Equal(text, want) {
				t.Fatalf("%q: text %s, the general path %s (%v %v)", in, text, want, gerr, err)
			}
			back, err := c.FromConnectData("orders", ts, data.JSONText{Text: text, Raw: in})
			if err != nil || !bytes.Equal(back, in) {
				t.Fatalf("%q written back as %q (%v)", in, back, err)
			}
		}
	}
	if texts < 4 { // decimals are numbers here, which the fast reader hands over
		t.Fatalf("the text path took %d inputs; the test no longer exercises it", texts)
	}
}
