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
