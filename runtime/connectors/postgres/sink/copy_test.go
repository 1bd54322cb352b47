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
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// everyTypeDDL is a table with a column of every type the binary COPY
// encodes (i2in4 takes smallint values into an integer column).
const everyTypeDDL = `CREATE TABLE %s (id bigint PRIMARY KEY, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision,
	b boolean, t text, vc varchar(40), bc char(6), js json, jb jsonb, u uuid, by bytea, n numeric(20,3), nbig numeric,
	d date, tm time, ts timestamp, tz timestamptz, i2in4 integer)`

var (
	innerSchema     = data.StructOf("inner", data.F("k", data.StringSchema), data.F("v", data.Int32Schema)).AsOptional()
	everyTypeSchema = data.StructOf("everytype", data.F("id", data.Int64Schema), data.F("i2", data.OptionalInt16Schema),
		data.F("i4", data.OptionalInt32Schema), data.F("i8", data.OptionalInt64Schema), data.F("f4", data.OptionalFloat32Schema),
		data.F("f8", data.OptionalFloat64Schema), data.F("b", data.OptionalBooleanSchema), data.F("t", data.OptionalStringSchema),
		data.F("vc", data.OptionalStringSchema), data.F("bc", data.OptionalStringSchema), data.F("js", data.OptionalStringSchema),
		data.F("jb", innerSchema), data.F("u", data.OptionalStringSchema), data.F("by", data.OptionalBytesSchema),
		data.F("n", data.DecimalSchema(3).AsOptional()), data.F("nbig", data.DecimalSchema(3).AsOptional()),
		data.F("d", data.DateSchema().AsOptional()), data.F("tm", data.TimeSchema().AsOptional()),
		data.F("ts", data.TimestampSchema().AsOptional()), data.F("tz", data.TimestampSchema().AsOptional()),
		data.F("i2in4", data.OptionalInt16Schema))
)

// everyTypeRecords are rows of every type: positive and negative
// numbers, numerics with scale (one beyond 64 bits), timestamps given in
// several time zones and before 1970 and 2000, non-ASCII text, empty
// bytea and text, both UUID spellings, and a row of NULLs.
func everyTypeRecords(t *testing.T, topic string) []*plugin.SinkRecord {
	dec := func(s string) data.Decimal {
		d, err := data.ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ist, pst := time.FixedZone("IST", 5*3600+1800), time.FixedZone("PST", -8*3600)
	s := everyTypeSchema
	rows := []*data.Struct{
		data.NewStruct(s).Put("id", int64(1)).Put("i2", int16(32767)).Put("i4", int32(2147483647)).Put("i8", int64(math.MaxInt64)).
			Put("f4", float32(3.25)).Put("f8", 2.5e300).Put("b", true).Put("t", "grüße, 東京 🚀").Put("vc", "naïve").Put("bc", "ab").
			Put("js", `{"a": [1, 2.50, "x"]}`).Put("jb", data.NewStruct(innerSchema).Put("k", "ü").Put("v", int32(7))).
			Put("u", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").Put("by", []byte{0, 1, 0xfe, 0xff}).Put("n", dec("12345.678")).
			Put("nbig", dec("123456789012345678901234.567")).Put("d", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)).
			Put("tm", time.Date(1970, 1, 1, 13, 45, 30, 123e6, time.UTC)).Put("ts", time.Date(2024, 7, 1, 23, 30, 0, 123456000, ist)).
			Put("tz", time.Date(2024, 12, 31, 20, 0, 0, 999999000, pst)).Put("i2in4", int16(-7)),
		data.NewStruct(s).Put("id", int64(2)).Put("i2", int16(-32768)).Put("i4", int32(math.MinInt32)).Put("i8", int64(math.MinInt64)).
			Put("f4", float32(-1.5)).Put("f8", -1e-300).Put("b", false).Put("t", "").Put("vc", "").Put("bc", "").
			Put("js", `[]`).Put("jb", data.NewStruct(innerSchema).Put("k", "").Put("v", int32(-1))).
			Put("u", "A0EEBC999C0B4EF8BB6D6BB9BD380A12").Put("by", []byte{}).Put("n", dec("-0.005")).Put("nbig", dec("-1.000")).
			Put("d", time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)).Put("tm", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)).
			Put("ts", time.Date(1960, 1, 1, 0, 0, 0, 1000, time.UTC)).Put("tz", time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)).
			Put("i2in4", int16(32767)),
		data.NewStruct(s).Put("id", int64(3)),
		data.NewStruct(s).Put("id", int64(4)).Put("n", dec("0.000")).Put("nbig", dec("99999999999999999999999999999999999.999")).
			Put("tz", time.Date(1901, 1, 1, 0, 0, 0, 0, ist)).Put("ts", time.Date(2262, 4, 11, 23, 47, 16, 854775000, time.UTC)),
	}
	recs := make([]*plugin.SinkRecord, len(rows))
	for i, v := range rows {
		recs[i] = &plugin.SinkRecord{Topic: topic, Offset: int64(i), ValueSchema: s, Value: v}
	}
	return recs
}

// dump renders a table's rows as text, in id order.
func dump(t *testing.T, url, table string) string {
	return pgtest.QueryString(t, url, fmt.Sprintf(`SELECT string_agg(r::text, E'\n' ORDER BY id) FROM %s r`, table))
}

// writeBothWays writes the records of each topic through a task with the
// sink's binary COPY and through one with pgx's CopyFrom (tables
// own_<topic> and pgx_<topic>, made by ddl) and returns both tables' rows.
func writeBothWays(t *testing.T, url, ddl, topic string, cfg map[string]string, batches ...func(topic string) []*plugin.SinkRecord) (own, viaPgx string) {
	t.Helper()
	for _, way := range []string{"own", "pgx"} {
		table := way + "_" + topic
		pgtest.ExecURL(t, url, fmt.Sprintf(ddl, table))
		task := startTask(t, with(cfg, "topics", table))
		task.pgxCopy = way == "pgx"
		for _, b := range batches {
			putFlush(t, task, b(table)...)
		}
	}
	return dump(t, url, "own_"+topic), dump(t, url, "pgx_"+topic)
}

// The binary COPY stores the same rows as pgx's CopyFrom for every type it
// encodes, in insert mode and in upsert mode (a first COPY into the
// table, then, for the redelivered batch, a COPY into the staging table).
func TestBinaryCopyEveryTypeLikePgx(t *testing.T) {
	url := pg.CreateDatabase(t)
	recs := func(topic string) []*plugin.SinkRecord { return everyTypeRecords(t, topic) }
	cfg := with(baseConfig(url), KeyPKMode, "record_value", KeyPKFields, "id")
	own, viaPgx := writeBothWays(t, url, everyTypeDDL, "ins", cfg, recs)
	if own != viaPgx {
		t.Fatalf("rows differ\nbinary COPY:\n%s\npgx:\n%s", own, viaPgx)
	}
	upOwn, upPgx := writeBothWays(t, url, everyTypeDDL, "ups", with(cfg, KeyInsertMode, "upsert"), recs, recs)
	if upOwn != upPgx || upOwn != own {
		t.Fatalf("upserted rows differ\nbinary COPY:\n%s\npgx:\n%s\ninserted:\n%s", upOwn, upPgx, own)
	}
	// The values themselves, read back in text (a wrong encoding both ways
	// alike would pass the comparison).
	got := pgtest.QueryString(t, url, `SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s',
		i2, i4, i8, f4, f8, b, t, vc, bc, js, jb, u, encode(by, 'hex'), n, nbig, d, tm, ts, to_char(tz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), i2in4), E'\n' ORDER BY id) FROM own_ins`)
	want := strings.Join([]string{
		`32767|2147483647|9223372036854775807|3.25|2.5e+300|t|grüße, 東京 🚀|naïve|ab    |{"a": [1, 2.50, "x"]}|{"k": "ü", "v": 7}|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|0001feff|12345.678|123456789012345678901234.567|2024-02-29|13:45:30.123|2024-07-01 18:00:00.123456|2025-01-01 04:00:00.999999|-7`,
		`-32768|-2147483648|-9223372036854775808|-1.5|-1e-300|f|||      |[]|{"k": "", "v": -1}|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12||-0.005|-1.000|1969-07-20|00:00:00|1960-01-01 00:00:00.000001|1999-12-31 23:59:59.999999|32767`,
		`|||||||||||||||||||`,
		`|||||||||||||0.000|99999999999999999999999999999999999.999|||2262-04-11 23:47:16.854775|1900-12-31 18:30:00.000000|`,
	}, "\n")
	if got != want {
		t.Fatalf("stored values\n%s\nwant\n%s", got, want)
	}
	if nulls := pgtest.QueryString(t, url, `SELECT format('%s %s', by IS NULL, t IS NULL) FROM own_ins WHERE id = 2`); nulls != "f f" {
		t.Fatalf("empty bytea and text stored as NULL: %s", nulls)
	}
}

// A COPY with a column of a type the sink does not encode goes through
// pgx's CopyFrom (binaryCopyFor says no); a value of a Go type its
// column's encoder does not take (strings of schemaless records into
// timestamptz and bigint columns) is encoded by pgx's rules within the
// binary COPY. Both store what pgx stores, and a value neither can read
// fails the batch with the record and the column named.
func TestBinaryCopyFallbacks(t *testing.T) {
	url := pg.CreateDatabase(t)
	cfg := with(baseConfig(url), KeyPKMode, "record_value", KeyPKFields, "id", KeyInsertMode, "upsert")
	schemaless := func(topic string) []*plugin.SinkRecord {
		return []*plugin.SinkRecord{
			{Topic: topic, Offset: 0, Value: map[string]any{"id": int64(1), "at": "2024-05-06 07:08:09.5+02", "n": "42", "note": "x"}},
			{Topic: topic, Offset: 1, Value: map[string]any{"id": int64(2), "at": nil, "n": int64(-3), "note": nil}},
		}
	}
	const plain = `CREATE TABLE %s (id bigint PRIMARY KEY, at timestamptz, n bigint, note text)`
	own, viaPgx := writeBothWays(t, url, plain, "plain", cfg, schemaless)
	if own != viaPgx {
		t.Fatalf("rows differ\nbinary COPY:\n%s\npgx:\n%s", own, viaPgx)
	}
	if got := pgtest.QueryString(t, url, `SELECT string_agg(format('%s %s %s', extract(epoch FROM at), n, note), ',' ORDER BY id) FROM own_plain`); got != "1714972089.500000 42 x, -3 " {
		t.Fatalf("rows %q", got)
	}
	// inet is not encoded here: the whole COPY is pgx's.
	const inet = `CREATE TABLE %s (id bigint PRIMARY KEY, at timestamptz, n bigint, note inet)`
	withInet := func(topic string) []*plugin.SinkRecord {
		recs := schemaless(topic)
		recs[0].Value.(map[string]any)["note"] = "10.1.2.3/8"
		return recs
	}
	own, viaPgx = writeBothWays(t, url, inet, "inet", cfg, withInet)
	if own != viaPgx || !strings.Contains(own, "10.1.2.3/8") {
		t.Fatalf("rows differ\nbinary COPY:\n%s\npgx:\n%s", own, viaPgx)
	}

	task := startTask(t, with(cfg, "topics", "own_plain"))
	putFlush(t, task, schemaless("own_plain")...)
	task2 := startTask(t, with(cfg, "topics", "own_inet"))
	putFlush(t, task2, withInet("own_inet")...)
	cols := []string{"id", "at", "n", "note"}
	if binaryCopyFor(task.writers["own_plain"], nil, cols, nil) == nil {
		t.Fatal("a table of bigint, timestamptz and text columns is not copied in binary by the sink")
	}
	if binaryCopyFor(task2.writers["own_inet"], nil, cols, nil) != nil {
		t.Fatal("a table with an inet column is copied in binary by the sink, want pgx's CopyFrom")
	}

	bad := &plugin.SinkRecord{Topic: "own_plain", Offset: 9, Value: map[string]any{"id": int64(5), "at": "not a time", "n": int64(1), "note": "y"}}
	err := putErr(task, bad)
	if err == nil || plugin.IsRetriable(err) || !strings.Contains(err.Error(), "record own_plain-0/9: column at:") {
		t.Fatalf("unreadable timestamp: %v, want a non-retriable error naming the record and the column", err)
	}
}
