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

package transforms

import (
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// BenchmarkChainSink measures a typical chain (unwrap a change event, add
// a field, route) on sink records of one schema.
func BenchmarkChainSink(b *testing.B) {
	c, err := New(map[string]string{
		"transforms":                     "unwrap,insert,route",
		"transforms.unwrap.type":         "unwrap",
		"transforms.insert.type":         "InsertField$Value",
		"transforms.insert.offset.field": "kafka_offset",
		"transforms.route.type":          "RegexRouter",
		"transforms.route.regex":         "pg\\.public\\.(.*)",
		"transforms.route.replacement":   "$1",
	})
	if err != nil {
		b.Fatal(err)
	}
	optRow := rowSchema.AsOptional()
	env := data.StructOf("env", data.F("before", optRow), data.F("after", optRow), data.F("op", data.StringSchema))
	ev := data.NewStruct(env).Put("op", "u").Put("after", data.NewStructTrusted(optRow, []any{int32(1), "n", 2.5}))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec := data.SinkRecord{Topic: "pg.public.items", Offset: int64(i), ValueSchema: env, Value: ev}
		if ok, err := c.ApplySink(&rec); !ok || err != nil || rec.Topic != "items" {
			b.Fatalf("%v %v %s", ok, err, rec.Topic)
		}
	}
}
