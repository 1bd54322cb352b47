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

package sink

import (
	"reflect"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// TestRowPlanAgrees checks that rows filled by a layout's plan equal the
// general path's, in every pk.mode, and that records of other shapes
// leave the plan alone.
func TestRowPlanAgrees(t *testing.T) {
	ks := data.StructOf("k", data.F("id", data.Int64Schema), data.F("region", data.StringSchema))
	vs := data.StructOf("v", data.F("id", data.Int64Schema), data.F("name", data.StringSchema),
		data.F("qty", data.Int32Schema.WithDefault(int32(9))), data.F("price", data.DecimalSchema(2).AsOptional()),
		data.F("at", data.TimestampSchema()), data.F("note", data.OptionalStringSchema))
	other := data.StructOf("v", data.F("id", data.Int64Schema), data.F("name", data.StringSchema))
	rec := func(i int64, key any, ksch *data.Schema, v *data.Struct) *plugin.SinkRecord {
		return &plugin.SinkRecord{Topic: "t", Partition: int32(i % 3), Offset: i, KeySchema: ksch, Key: key, ValueSchema: v.Schema(), Value: v}
	}
	value := func(i int64) *data.Struct {
		v := data.NewStruct(vs).Put("id", i).Put("name", "n").Put("at", time.UnixMilli(i).UTC())
		if i%2 == 0 {
			v.Put("qty", int32(i)).Put("price", data.NewDecimal(i, 2)).Put("note", "x")
		}
		return v
	}
	columns := map[string]pgcommon.Column{}
	for _, c := range []string{"id", "region", "name", "qty", "price", "at", "note", "__connect_topic", "__connect_partition", "__connect_offset", "key"} {
		columns[c] = pgcommon.Column{Name: c}
	}
	for _, cfg := range []map[string]string{
		{KeyPKMode: PKModeNone},
		{KeyPKMode: PKModeKafka},
		{KeyPKMode: PKModeRecordKey},
		{KeyPKMode: PKModeRecordKey, KeyPKFields: "region"},
		{KeyPKMode: PKModeRecordValue, KeyPKFields: "name,id"},
	} {
		cfg["connection.url"] = "postgres://localhost/x"
		s, err := parse(cfg)
		if err != nil {
			t.Fatal(cfg, err)
		}
		for _, c := range []string{TopicColumn, PartitionColumn, OffsetColumn, keyColumn(s)} {
			columns[c] = pgcommon.Column{Name: c}
		}
		for _, structKey := range []bool{true, false} {
			task := &Task{s: s}
			w := &writer{columns: columns, layouts: map[[2]*data.Schema]*layout{}}
			planned := 0
			for i := int64(1); i <= 6; i++ {
				r := rec(i, data.NewStruct(ks).Put("id", i).Put("region", "eu"), ks, value(i))
				if !structKey {
					r = rec(i, i*10, data.Int64Schema, value(i))
				}
				switch i {
				case 4: // another value schema
					r.ValueSchema, r.Value = other, data.NewStruct(other).Put("id", i).Put("name", "o")
				case 5: // a struct key of another schema
					if structKey {
						ks2 := data.StructOf("k2", data.F("region", data.StringSchema), data.F("id", data.Int64Schema))
						r.KeySchema, r.Key = ks2, data.NewStruct(ks2).Put("id", i).Put("region", "us")
					}
				}
				lay, got, err := task.layoutAndValues(w, r)
				if err != nil {
					t.Fatal(cfg, i, err)
				}
				if lay.plan != nil {
					if _, ok, _ := lay.plan.fill(r); ok {
						planned++
					}
				}
				// The general path: a writer without cached layouts.
				wantLay, want, err := task.layoutAndValues(&writer{columns: columns, layouts: map[[2]*data.Schema]*layout{}}, r)
				if err != nil {
					t.Fatal(cfg, i, err)
				}
				if lay.colsKey != wantLay.colsKey || !reflect.DeepEqual(got, want) {
					t.Fatalf("%v key struct %v record %d: %v %v, general path: %v %v", cfg, structKey, i, lay.cols, got, wantLay.cols, want)
				}
			}
			if planned < 3 {
				t.Fatalf("%v key struct %v: the plan filled %d records; the test no longer exercises it", cfg, structKey, planned)
			}
		}
	}
}
