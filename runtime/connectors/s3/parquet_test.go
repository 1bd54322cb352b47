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

package s3

import (
	"context"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit/parquetread"
)

// readParquet reads objects with Arrow's reader.
func readParquet(t *testing.T, objs map[string][]byte) map[string]*parquetread.File {
	t.Helper()
	out := map[string]*parquetread.File{}
	for name, b := range objs {
		f, err := parquetread.Read(context.Background(), b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = f
	}
	return out
}

// Every type of the data model that Parquet holds, read back by Arrow's
// reader with the types the schema gives: ints of each width, floats,
// booleans, strings, bytes, decimals, dates, times and timestamps;
// optional fields null and set; a nested optional struct, an array of
// structs, an array that is empty, an array of arrays, and maps (written
// in key order).
func TestS3SinkParquetTypes(t *testing.T) {
	s, c := bucket(t)
	line := data.StructOf("line", data.F("sku", data.StringSchema), data.F("qty", data.OptionalInt32Schema))
	addr := data.StructOf("addr", data.F("city", data.StringSchema), data.F("zip", data.OptionalInt32Schema)).AsOptional()
	schema := data.StructOf("order",
		data.F("i8", data.Int8Schema), data.F("i16", data.Int16Schema), data.F("i32", data.Int32Schema), data.F("i64", data.Int64Schema),
		data.F("f32", data.Float32Schema), data.F("f64", data.Float64Schema), data.F("ok", data.BooleanSchema),
		data.F("name", data.StringSchema), data.F("raw", data.BytesSchema), data.F("price", data.DecimalSchema(2)),
		data.F("day", data.DateSchema()), data.F("at", data.TimeSchema()), data.F("ts", data.TimestampSchema()),
		data.F("note", data.OptionalStringSchema), data.F("addr", addr),
		data.F("lines", data.ArrayOf(line).AsOptional()), data.F("tags", data.ArrayOf(data.OptionalStringSchema)),
		data.F("scores", data.MapOf(data.StringSchema, data.OptionalInt64Schema)),
		data.F("matrix", data.ArrayOf(data.ArrayOf(data.Int32Schema))))
	ts := time.Date(2026, 12, 2, 13, 14, 15, 678_000_000, time.UTC)
	big40 := new(big.Int).Exp(big.NewInt(10), big.NewInt(37), nil) // 38 digits: the most precision 38 holds
	big40.Sub(big40.Mul(big40, big.NewInt(10)), big.NewInt(1))
	mk := func(vals ...any) *data.Struct {
		st, err := data.NewStructValues(schema, vals)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	sub := func(s *data.Schema, vals ...any) *data.Struct {
		st, err := data.NewStructValues(s, vals)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	values := []*data.Struct{
		mk(int8(-8), int16(-16), int32(-32), int64(-64), float32(1.5), 2.25, true, "ünï", []byte{0, 1, 2}, data.NewDecimal(-12345, 2),
			time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 13, 14, 15, 678_000_000, time.UTC), ts,
			"a note", sub(addr, "Lyon", int32(69001)),
			[]any{sub(line, "A-1", int32(2)), sub(line, "B-2", nil)}, []any{"x", nil, "z"},
			map[any]any{"b": int64(2), "a": int64(1), "c": nil}, []any{[]any{int32(1), int32(2)}, []any{int32(3)}}),
		mk(int8(127), int16(32767), int32(2147483647), int64(9223372036854775807), float32(-0.5), -1e300, false, "", []byte{}, data.Decimal{Unscaled: big40, Scale: 2},
			time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.UnixMilli(-1).UTC(),
			nil, sub(addr, "Oslo", nil), nil, []any{}, map[any]any{}, []any{[]any{}, []any{int32(4)}}),
		mk(int8(0), int16(0), int32(0), int64(0), float32(0), 0.0, false, "z", []byte("bytes"), data.NewDecimal(0, 2),
			time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 23, 59, 59, 999_000_000, time.UTC), time.UnixMilli(0).UTC(),
			nil, nil, []any{}, []any{nil}, map[any]any{"only": int64(-5)}, []any{}),
	}
	task := plugintest.StartSinkTask(t, &Task{}, sinkConfig("types", "orders", s, KeyFormat, confluentParquet, KeyFlushSize, "3"))
	ctx := context.Background()
	var recs []*plugin.SinkRecord
	for i, v := range values {
		recs = append(recs, &plugin.SinkRecord{Topic: "orders", Offset: int64(i), ValueSchema: schema, Value: v})
	}
	if err := task.Put(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	files := readParquet(t, objects(t, c, "types"))
	name := "orders/partition=0/orders+0+0000000000.snappy.parquet"
	f := files[name]
	if len(files) != 1 || f == nil {
		t.Fatalf("objects %v, want exactly %s", slices.Collect(mapsKeys(files)), name)
	}
	wantColumns := []string{
		"i8: int8", "i16: int16", "i32: int32", "i64: int64",
		"f32: float32", "f64: float64", "ok: bool", "name: utf8", "raw: binary",
		"price: decimal(38, 2)", "day: date32", "at: time32[ms]", "ts: timestamp[ms, tz=UTC]",
		"note: utf8, nullable", "addr: struct<city: utf8, zip: int32 nullable>, nullable",
		"lines: list<element: struct<sku: utf8, qty: int32 nullable>>, nullable",
		"tags: list<element: utf8, nullable>", "scores: map<utf8, int64, items_nullable>",
		"matrix: list<element: list<element: int32>>",
	}
	if got := f.Columns(); !slices.Equal(got, wantColumns) {
		t.Errorf("Arrow reads the columns\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantColumns, "\n"))
	}
	wantRows := []string{
		`{"addr":{"city":"Lyon","zip":69001},"at":"13:14:15.678","day":"2026-12-02","f32":1.5,"f64":2.25,"i16":-16,"i32":-32,"i64":-64,"i8":-8,"lines":[{"qty":2,"sku":"A-1"},{"qty":null,"sku":"B-2"}],"matrix":[[1,2],[3]],"name":"ünï","note":"a note","ok":true,"price":"-123.45","raw":"AAEC","scores":[{"key":"a","value":1},{"key":"b","value":2},{"key":"c","value":null}],"tags":["x",null,"z"],"ts":"2026-12-02T13:14:15.678Z"}`,
		`{"addr":{"city":"Oslo","zip":null},"at":"00:00:00","day":"1969-12-31","f32":-0.5,"f64":-1e+300,"i16":32767,"i32":2147483647,"i64":9223372036854775807,"i8":127,"lines":null,"matrix":[[],[4]],"name":"","note":null,"ok":false,"price":"999999999999999999999999999999999999.99","raw":"","scores":[],"tags":[],"ts":"1969-12-31T23:59:59.999Z"}`,
		`{"addr":null,"at":"23:59:59.999","day":"2000-02-29","f32":0,"f64":0,"i16":0,"i32":0,"i64":0,"i8":0,"lines":[],"matrix":[],"name":"z","note":null,"ok":false,"price":"0","raw":"Ynl0ZXM=","scores":[{"key":"only","value":-5}],"tags":[null],"ts":"1970-01-01T00:00:00Z"}`,
	}
	if !slices.Equal(f.Rows, wantRows) {
		t.Fatalf("Arrow reads the rows\n%s\nwant\n%s", strings.Join(f.Rows, "\n"), strings.Join(wantRows, "\n"))
	}
	if !slices.Equal(f.Codecs, []string{"SNAPPY"}) {
		t.Fatalf("codecs %v, want SNAPPY (parquet.codec's default)", f.Codecs)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// parquet.codec sets the pages' codec and the object name's extension;
// a schema change ends the object (the next starts with the new schema),
// and the same records give the same bytes again.
func TestS3SinkParquetCodecsAndSchemaChange(t *testing.T) {
	s, c := bucket(t)
	v1 := data.StructOf("v", data.F("id", data.Int64Schema))
	v2 := data.StructOf("v", data.F("id", data.Int64Schema), data.F("extra", data.OptionalStringSchema))
	rec := func(off int64, schema *data.Schema, vals ...any) *plugin.SinkRecord {
		st, err := data.NewStructValues(schema, vals)
		if err != nil {
			t.Fatal(err)
		}
		return &plugin.SinkRecord{Topic: "t", Offset: off, ValueSchema: schema, Value: st}
	}
	// flush.size=2: the first object ends after one record, on the
	// schema change; the second is full after two.
	batch := []*plugin.SinkRecord{rec(0, v1, int64(0)), rec(1, v2, int64(1), "one"), rec(2, v2, int64(2), nil)}
	ctx := context.Background()
	for _, tc := range []struct{ codec, ext, name string }{
		{CodecSnappy, ".snappy.parquet", "SNAPPY"}, {CodecNone, ".parquet", "UNCOMPRESSED"}, {CodecGzip, ".gz.parquet", "GZIP"},
		{CodecZstd, ".zstd.parquet", "ZSTD"}, {CodecLZ4, ".lz4raw.parquet", "LZ4_RAW"}, {CodecBrotli, ".br.parquet", "BROTLI"},
	} {
		prefix := "codec-" + tc.codec
		task := plugintest.StartSinkTask(t, &Task{}, sinkConfig(prefix, "t", s, KeyFormat, FormatParquet, KeyParquetCodec, tc.codec, KeyFlushSize, "2"))
		if err := task.Put(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := task.Flush(ctx, nil); err != nil {
			t.Fatal(err)
		}
		files := readParquet(t, objects(t, c, prefix))
		first, second := files["t/partition=0/t+0+0000000000"+tc.ext], files["t/partition=0/t+0+0000000001"+tc.ext]
		if len(files) != 2 || first == nil || second == nil {
			t.Fatalf("parquet.codec=%s: objects %v, want the two of offsets 0 and 1 ending %s", tc.codec, slices.Collect(mapsKeys(files)), tc.ext)
		}
		if !slices.Equal(first.Rows, []string{`{"id":0}`}) || !slices.Equal(second.Rows, []string{`{"extra":"one","id":1}`, `{"extra":null,"id":2}`}) {
			t.Fatalf("parquet.codec=%s: rows %v and %v", tc.codec, first.Rows, second.Rows)
		}
		if !slices.Equal(first.Codecs, []string{tc.name}) {
			t.Fatalf("parquet.codec=%s: the file's codecs are %v, want %s", tc.codec, first.Codecs, tc.name)
		}
	}
	// The same records again, as a redelivery writes them: the same bytes.
	task := plugintest.StartSinkTask(t, &Task{}, sinkConfig("again", "t", s, KeyFormat, FormatParquet, KeyFlushSize, "2"))
	if err := task.Put(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	a, b := objects(t, c, "codec-snappy"), objects(t, c, "again")
	if len(a) != len(b) {
		t.Fatalf("%d and %d objects from the same records", len(a), len(b))
	}
	for n, body := range a {
		if string(b[n]) != string(body) {
			t.Fatalf("%s differs between two writes of the same records", n)
		}
	}
}

// What Parquet cannot hold is refused naming the record and the field, a
// record without a schema naming format.class, and the keys that make no
// sense with Parquet naming themselves.
func TestS3SinkParquetRefusals(t *testing.T) {
	s, _ := bucket(t)
	ctx := context.Background()
	for _, tc := range []struct {
		what   string
		schema *data.Schema
		value  any
		want   []string
	}{
		{"no schema", nil, map[string]any{"id": 1}, []string{"record t-0/0", "no schema", "format.class=parquet", "schemas.enable=true"}},
		{"not a struct", data.Int64Schema, int64(1), []string{"record t-0/0", "int64", "struct values"}},
		{"an empty struct", data.StructOf("v", data.F("id", data.Int64Schema), data.F("empty", data.StructOf("e"))), nil,
			[]string{"record t-0/0", "empty", "struct without fields"}},
		{"a struct map key", data.StructOf("v", data.F("m", data.MapOf(data.StructOf("k", data.F("a", data.Int32Schema)), data.Int32Schema))), nil,
			[]string{"record t-0/0", "m:", "map keys of type struct"}},
		{"a wide decimal", data.StructOf("v", data.F("price", data.DecimalSchema(0))), nil, []string{"record t-0/0", "price", "more than 38 digits", DecimalPrecisionParam}},
	} {
		task := plugintest.StartSinkTask(t, &Task{}, sinkConfig("refuse", "t", s, KeyFormat, FormatParquet))
		v := tc.value
		if v == nil {
			st := data.NewStruct(tc.schema)
			for _, f := range tc.schema.Fields {
				switch f.Name {
				case "id":
					st.Put("id", int64(1))
				case "price":
					st.Put("price", data.Decimal{Unscaled: new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)})
				case "m":
					st.Put("m", map[any]any{})
				}
			}
			v = st
		}
		err := task.Put(ctx, []*plugin.SinkRecord{{Topic: "t", ValueSchema: tc.schema, Value: v}})
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %v, want an error mentioning %q", tc.what, err, w)
			}
		}
	}
	for _, tc := range []struct{ key, value, want string }{
		{KeyCompression, CompressionGzip, "parquet.codec"},
		{KeyNullValues, NullWrite, "ignore or fail"},
		{KeyParquetCodec, "lzo", "lzo"},
	} {
		cfg := sinkConfig("v", "t", s, KeyFormat, FormatParquet, tc.key, tc.value)
		cfg["connector.class"] = Class
		found := false
		for _, e := range plugin.ValidateConfig(ctx, Plugin(), cfg).Errors() {
			found = found || (e.Name == tc.key && strings.Contains(e.Message, tc.want))
		}
		if !found {
			t.Errorf("%s=%s with format.class=parquet: %v, want an error on %s mentioning %q", tc.key, tc.value, plugin.ValidateConfig(ctx, Plugin(), cfg).Errors(), tc.key, tc.want)
		}
	}
}
