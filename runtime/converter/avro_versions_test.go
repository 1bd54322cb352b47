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
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

// Two versions of one record (the same name, a field added) nested in an
// envelope: each record is written with its own version and read back
// with its values, by one converter (hamba/avro's shared codec caches
// once wrote version 2 with version 1's encoder).
func TestAvroTwoVersionsOfOneRecord(t *testing.T) {
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	c := newAvro(t, map[string]string{KeyRegistryURL: reg.URL}, false)
	for i, fields := range [][]data.Field{{data.F("a", data.Int32Schema)}, {data.F("a", data.Int32Schema), data.F("b", data.OptionalStringSchema)}} {
		val := data.StructOf("x.Value", fields...).AsOptional()
		env := data.StructOf("x.Envelope", data.F("before", val), data.F("after", val), data.F("op", data.StringSchema))
		v := data.NewStruct(val).Put("a", int32(i))
		if i == 1 {
			v.Put("b", "bee")
		}
		rec := data.NewStruct(env).Put("after", v).Put("op", "c")
		b, err := c.FromConnectData("t", env, rec)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := c.ToConnectData("t", b)
		if err != nil {
			t.Fatal(err)
		}
		after := got.(*data.Struct).Get("after").(*data.Struct)
		if after.Get("a") != int32(i) || (i == 1 && after.Get("b") != "bee") {
			t.Fatalf("version %d read back as %v", i+1, got)
		}
	}
}
