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

	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

// The registry converters on the table row of BenchmarkJSONTableRowFrom
// and BenchmarkJSONTableRowTo, schemas cached (no registry request inside
// the loop), for the Avro/JSON ratio.
func benchRegistry(b *testing.B, class string, to bool) {
	reg := servers.For(b).SchemaRegistry(servers.SchemaRegistryOptions{})
	c, err := New(class, map[string]string{KeyRegistryURL: reg.URL}, false)
	if err != nil {
		b.Fatal(err)
	}
	_, _, vs, v := tableRow(42)
	raw, err := c.FromConnectData("t", vs, v)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if to {
			_, _, err = c.ToConnectData("t", raw)
		} else {
			_, err = c.FromConnectData("t", vs, v)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAvroTableRowFrom(b *testing.B)       { benchRegistry(b, AvroClass, false) }
func BenchmarkAvroTableRowTo(b *testing.B)         { benchRegistry(b, AvroClass, true) }
func BenchmarkJSONSchemaTableRowFrom(b *testing.B) { benchRegistry(b, JSONSchemaClass, false) }
func BenchmarkJSONSchemaTableRowTo(b *testing.B)   { benchRegistry(b, JSONSchemaClass, true) }
func BenchmarkProtobufTableRowFrom(b *testing.B)   { benchRegistry(b, ProtobufClass, false) }
func BenchmarkProtobufTableRowTo(b *testing.B)     { benchRegistry(b, ProtobufClass, true) }
