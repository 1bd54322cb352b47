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

package servers

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

func registryClient(t *testing.T, url string, opts ...sr.ClientOpt) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// The registry answers franz-go's client: register, look up by id and by
// subject and version; the same schema keeps its id and version.
func TestSchemaRegistryAnswersTheClient(t *testing.T) {
	reg := For(t).SchemaRegistry(SchemaRegistryOptions{})
	cl := registryClient(t, reg.URL)
	ctx := context.Background()
	schema := sr.Schema{Schema: `{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}`}
	ss, err := cl.CreateSchema(ctx, "t-value", schema)
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.CreateSchema(ctx, "t-value", schema)
	if err != nil || again.ID != ss.ID || again.Version != 1 {
		t.Fatalf("registering again = %+v, %v; want id %d version 1", again, err, ss.ID)
	}
	got, err := cl.SchemaByID(ctx, ss.ID)
	if err != nil || got.Schema != schema.Schema {
		t.Fatalf("SchemaByID = %+v, %v", got, err)
	}
	byVersion, err := cl.SchemaByVersion(ctx, "t-value", 1)
	if err != nil || byVersion.ID != ss.ID {
		t.Fatalf("version 1 = %+v, %v", byVersion, err)
	}
}

// The version "latest" (resolved by a stand-in layer) is the highest.
func TestSchemaRegistryLatestVersionStandin(t *testing.T) {
	reg := For(t).SchemaRegistry(SchemaRegistryOptions{})
	cl := registryClient(t, reg.URL)
	ctx := context.Background()
	for _, s := range []string{`"int"`, `"long"`} {
		if _, err := cl.CreateSchema(ctx, "s", sr.Schema{Schema: s}); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := cl.SchemaByVersion(ctx, "s", -1)
	if err != nil || latest.Version != 2 || latest.Schema.Schema != `"long"` {
		t.Fatalf("latest = %+v, %v", latest, err)
	}
}

// The compatibility stand-in refuses a field added without a default
// (BACKWARD) with Confluent's 409 and message, and takes one with a
// default as version 2.
func TestSchemaRegistryCompatibilityStandin(t *testing.T) {
	reg := For(t).SchemaRegistry(SchemaRegistryOptions{Compatibility: "BACKWARD"})
	cl := registryClient(t, reg.URL)
	ctx := context.Background()
	v1 := `{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}`
	if _, err := cl.CreateSchema(ctx, "s", sr.Schema{Schema: v1}); err != nil {
		t.Fatal(err)
	}
	bad := `{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`
	_, err := cl.CreateSchema(ctx, "s", sr.Schema{Schema: bad})
	if err == nil || !strings.Contains(err.Error(), "incompatible with an earlier schema") {
		t.Fatalf("incompatible schema: %v", err)
	}
	good := `{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"],"default":null}]}`
	ss, err := cl.CreateSchema(ctx, "s", sr.Schema{Schema: good})
	if err != nil || ss.Version != 2 {
		t.Fatalf("compatible schema = %+v, %v", ss, err)
	}
}

// Basic auth (a stand-in layer) refuses a wrong password.
func TestSchemaRegistryBasicAuthStandin(t *testing.T) {
	reg := For(t).SchemaRegistry(SchemaRegistryOptions{User: "u", Password: "p"})
	ctx := context.Background()
	if _, err := registryClient(t, reg.URL, sr.BasicAuth("u", "wrong")).SchemaByID(ctx, 1); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := registryClient(t, reg.URL, sr.BasicAuth("u", "p")).CreateSchema(ctx, "s", sr.Schema{Schema: `"int"`}); err != nil {
		t.Fatal(err)
	}
}
