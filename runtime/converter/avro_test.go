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
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/test/testkit/certs"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

func newAvro(t *testing.T, cfg map[string]string, isKey bool) Converter {
	t.Helper()
	c, err := New("io.confluent.connect.avro.AvroConverter", cfg, isKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// avroEverything is everythingSchema less what Avro cannot hold (a map
// with int64 keys), plus an enum.
func avroEverything() (*data.Schema, *data.Struct) {
	all := everythingSchema()
	var fields []data.Field
	for _, f := range all.Fields {
		if f.Name != "byID" {
			fields = append(fields, f)
		}
	}
	enum := &data.Schema{Type: data.TypeString, Parameters: map[string]string{
		avroEnumParam: "com.example.Color", avroEnumParam + ".RED": "RED", avroEnumParam + ".GREEN": "GREEN"}}
	fields = append(fields, data.F("color", enum), data.F("maybeDay", data.DateSchema().AsOptional()))
	s := data.StructOf("com.example.Everything", fields...)
	full := everythingValue(all)
	v := data.NewStruct(s)
	for _, f := range fields {
		if x, ok := full.Lookup(f.Name); ok && x != nil {
			if st, ok := x.(*data.Struct); ok {
				x = st
			}
			_ = v.Set(f.Name, x)
		}
	}
	v.Put("color", "GREEN")
	return s, v
}

// Every type goes to Avro in the wire format and back with equal values;
// a second record of the same schema asks the registry nothing.
func TestAvroRoundTripEveryType(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	c := newAvro(t, map[string]string{KeyRegistryURL: reg.URL}, false)
	s, v := avroEverything()
	b, err := c.FromConnectData("orders", s, v)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || len(b) < 5 {
		t.Fatalf("not the wire format: % x", b[:min(8, len(b))])
	}
	gotS, gotV, err := c.ToConnectData("orders", b)
	if err != nil {
		t.Fatal(err)
	}
	st := gotV.(*data.Struct)
	if gotS.Name != s.Name || len(gotS.Fields) != len(s.Fields) {
		t.Fatalf("schema %s, want %s", gotS, s)
	}
	for _, f := range s.Fields {
		gf := gotS.Field(f.Name)
		if gf == nil || gf.Schema.Type != f.Schema.Type || gf.Schema.Name != f.Schema.Name || gf.Schema.Optional != f.Schema.Optional {
			t.Errorf("field %s: schema %v, want %s", f.Name, gf, f.Schema)
			continue
		}
		want, got := v.Get(f.Name), st.Get(f.Name)
		if !data.ValuesEqual(normalize(want), normalize(got)) {
			t.Errorf("field %s = %#v, want %#v", f.Name, got, want)
		}
	}
	if d := gotS.Field("withDefault").Schema.Default; d != int32(42) {
		t.Errorf("default of withDefault = %#v, want 42", d)
	}
	before := reg.Requests()
	for range 3 {
		b2, err := c.FromConnectData("orders", s, v)
		if err != nil || len(b2) != len(b) || string(b2[:5]) != string(b[:5]) { // map entries come in any order
			t.Fatalf("again: %v (% x, want % x)", err, b2[:min(5, len(b2))], b[:5])
		}
		if _, _, err := c.ToConnectData("orders", b2); err != nil {
			t.Fatal(err)
		}
	}
	if n := reg.Requests() - before; n != 0 {
		t.Fatalf("the cached schema cost %d registry requests", n)
	}
}

// normalize turns structs into maps of their fields, so values compare
// whatever the schema's extra parameters.
func normalize(v any) any {
	switch x := v.(type) {
	case *data.Struct:
		m := map[string]any{}
		for _, f := range x.Schema().Fields {
			m[f.Name] = normalize(x.Get(f.Name))
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[k.(string)] = normalize(e)
		}
		return m
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	}
	return v
}

// What Avro cannot hold is an error naming the field.
func TestAvroUnmappableNamesTheField(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	c := newAvro(t, map[string]string{KeyRegistryURL: reg.URL}, false)
	s := everythingSchema()
	_, err := c.FromConnectData("t", s, everythingValue(s))
	if err == nil || !strings.Contains(err.Error(), "field byID") {
		t.Fatalf("err = %v, want one naming field byID", err)
	}
	// A record whose registered schema is a union of two types.
	cl, _ := sr.NewClient(sr.URLs(reg.URL))
	ss, err := cl.CreateSchema(context.Background(), "u-value", sr.Schema{Schema: `{"type":"record","name":"r","fields":[{"name":"either","type":["int","string"]}]}`})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.ToConnectData("u", []byte{0, 0, 0, 0, byte(ss.ID), 0, 2})
	if err == nil || !strings.Contains(err.Error(), "field either") {
		t.Fatalf("err = %v, want one naming field either", err)
	}
}

// Each subject name strategy registers under its subject; keys get -key.
func TestAvroSubjectNameStrategies(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	s := data.StructOf("com.example.Order", data.F("id", data.Int64Schema))
	v := data.NewStruct(s).Put("id", int64(1))
	for _, tc := range []struct {
		strategy string
		isKey    bool
		subject  string
	}{
		{"", false, "orders-value"},
		{"", true, "orders-key"},
		{"io.confluent.kafka.serializers.subject.RecordNameStrategy", false, "com.example.Order"},
		{"TopicRecordNameStrategy", false, "orders-com.example.Order"},
	} {
		key := KeyValSubjectStrategy
		if tc.isKey {
			key = KeyKeySubjectStrategy
		}
		c := newAvro(t, map[string]string{KeyRegistryURL: reg.URL, key: tc.strategy}, tc.isKey)
		if _, err := c.FromConnectData("orders", s, v); err != nil {
			t.Fatal(err)
		}
		cl, _ := sr.NewClient(sr.URLs(reg.URL))
		if vs, err := cl.SubjectVersions(context.Background(), tc.subject); err != nil || !slices.Equal(vs, []int{1}) {
			t.Errorf("strategy %q: subject %s versions %v, %v", tc.strategy, tc.subject, vs, err)
		}
	}
	_, err := New("AvroConverter", map[string]string{KeyRegistryURL: reg.URL, KeyValSubjectStrategy: "Nope"}, false)
	if err == nil || !strings.Contains(err.Error(), KeyValSubjectStrategy) {
		t.Fatalf("bad strategy: %v", err)
	}
}

// Configuration errors name the key and never show a credential.
func TestAvroConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{}, KeyRegistryURL + ": missing"},
		{map[string]string{KeyRegistryURL: "ftp://x"}, KeyRegistryURL},
		{map[string]string{KeyRegistryURL: "http://x", KeyAuthSource: "USER_INFO", KeyAuthUserInfo: "s3cr3t-no-colon"}, KeyAuthUserInfo},
		{map[string]string{KeyRegistryURL: "http://x", KeyAuthSource: "SASL_INHERIT"}, KeyAuthSource},
		{map[string]string{KeyRegistryURL: "http://x", KeyUseLatestVersion: "true"}, KeyUseLatestVersion},
		{map[string]string{KeyRegistryURL: "http://x", KeyMaxSchemas: "0"}, KeyMaxSchemas},
		{map[string]string{KeyRegistryURL: "http://x", KeyTruststoreType: "JKS"}, KeyTruststoreType},
		{map[string]string{KeyRegistryURL: "http://user:s3cr3t@[bad"}, KeyRegistryURL},
	} {
		_, err := New("avro", tc.cfg, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%v: the error shows the secret: %v", tc.cfg, err)
		}
	}
}

// HTTPS with the registry's CA, and basic auth from USER_INFO and from
// the URL; a wrong password is the registry's 401, without the password.
func TestAvroTLSAndBasicAuthStandin(t *testing.T) {
	ca, err := certs.NewCA("registry-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.TLS("registry", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{TLS: &cert, User: "conveyor", Password: "pa55word"})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s := data.StructOf("r", data.F("a", data.StringSchema))
	v := data.NewStruct(s).Put("a", "x")
	withURLAuth := strings.Replace(reg.URL, "https://", "https://conveyor:pa55word@", 1)
	for _, cfg := range []map[string]string{
		{KeyRegistryURL: reg.URL, KeyTruststoreLocation: caFile, KeyAuthSource: "USER_INFO", KeyAuthUserInfo: "conveyor:pa55word"},
		{KeyRegistryURL: withURLAuth, KeyTruststoreLocation: caFile},
	} {
		c := newAvro(t, cfg, false)
		b, err := c.FromConnectData("t", s, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := c.ToConnectData("t", b); err != nil || got.(*data.Struct).Get("a") != "x" {
			t.Fatalf("read back %v, %v", got, err)
		}
	}
	c := newAvro(t, map[string]string{KeyRegistryURL: reg.URL, KeyTruststoreLocation: caFile, KeyAuthSource: "USER_INFO", KeyAuthUserInfo: "conveyor:wrong-pa55"}, false)
	_, err = c.FromConnectData("t2", s, v)
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong-pa55") {
		t.Fatalf("wrong password: %v", err)
	}
	// Without the CA the registry's certificate is refused.
	c = newAvro(t, map[string]string{KeyRegistryURL: reg.URL, KeyAuthSource: "USER_INFO", KeyAuthUserInfo: "conveyor:pa55word"}, false)
	if _, err = c.FromConnectData("t3", s, v); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("unknown CA: %v", err)
	}
	_ = tls.VersionTLS12
}

// The caches hold at most max.schemas.per.subject entries: with 1, two
// schemas in turn go back to the registry each time.
func TestAvroCacheIsBounded(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	c := newAvro(t, map[string]string{KeyRegistryURL: reg.URL, KeyMaxSchemas: "1"}, false).(*Avro)
	a := data.StructOf("a", data.F("x", data.Int32Schema))
	b := data.StructOf("b", data.F("y", data.StringSchema))
	va, vb := data.NewStruct(a).Put("x", int32(1)), data.NewStruct(b).Put("y", "z")
	for range 3 {
		if _, err := c.FromConnectData("t", a, va); err != nil {
			t.Fatal(err)
		}
		if _, err := c.FromConnectData("t", b, vb); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.writers.len() + c.reg.idOf.len(); n != 2 {
		t.Fatalf("cache entries = %d, want 1 + 1", n)
	}
	if n := reg.Requests(); n < 6 {
		t.Fatalf("%d registry requests for 6 records of alternating schemas with a cache of 1", n)
	}
}
