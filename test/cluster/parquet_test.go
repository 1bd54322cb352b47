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

package cluster

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit/parquetread"
)

// The value schema of the Parquet test's records, in JsonConverter's
// envelope: every kind of column the sink maps (ints, float, boolean,
// string, decimal, date, timestamp, an optional field, an array, a map).
const orderSchema = `{"type":"struct","name":"order","optional":false,"fields":[` +
	`{"field":"id","type":"int64","optional":false},` +
	`{"field":"qty","type":"int32","optional":false},` +
	`{"field":"score","type":"double","optional":false},` +
	`{"field":"ok","type":"boolean","optional":false},` +
	`{"field":"name","type":"string","optional":false},` +
	`{"field":"note","type":"string","optional":true},` +
	`{"field":"price","type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},` +
	`{"field":"day","type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},` +
	`{"field":"ts","type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1},` +
	`{"field":"tags","type":"array","optional":false,"items":{"type":"string","optional":false}},` +
	`{"field":"attrs","type":"map","optional":false,"keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false}}]}`

// orderColumns are the columns, with their Arrow types, that Arrow's
// reader must find in the files of orderSchema's records.
var orderColumns = []string{"id: int64", "qty: int32", "score: float64", "ok: bool", "name: utf8", "note: utf8, nullable",
	"price: decimal(38, 2)", "day: date32", "ts: timestamp[ms, tz=UTC]", "tags: list<element: utf8>", "attrs: map<utf8, int32, items_non_nullable>"}

// order is record i of the Parquet test: its JsonConverter envelope, and
// the row Arrow's reader must read from the file (Arrow's JSON rendering).
func order(i int) (value []byte, row string) {
	ts := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	day := int32(ts.Unix() / 86400)
	unscaled := int64(i*7919%1_000_000 - 500_000)
	note, noteRow := `"n-`+strconv.Itoa(i%13)+`"`, `"n-`+strconv.Itoa(i%13)+`"`
	if i%5 == 0 {
		note, noteRow = "null", "null"
	}
	var tags, tagsRow []string
	for j := 0; j < i%3; j++ {
		tags = append(tags, fmt.Sprintf(`"t%d"`, j))
	}
	tagsRow = tags
	value = fmt.Appendf(nil, `{"schema":%s,"payload":{"id":%d,"qty":%d,"score":%g,"ok":%t,"name":"name-%d","note":%s,"price":"%s","day":%d,"ts":%d,"tags":[%s],"attrs":{"b":%d,"a":%d}}}`,
		orderSchema, i, i%1000, float64(i)/4, i%3 == 0, i, note, base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, uint64(unscaled))),
		day, ts.UnixMilli(), strings.Join(tags, ","), i%7, i%10)
	row = fmt.Sprintf(`{"attrs":[{"key":"a","value":%d},{"key":"b","value":%d}],"day":"%s","id":%d,"name":"name-%d","note":%s,"ok":%t,"price":"%s","qty":%d,"score":%g,"tags":[%s],"ts":"%s"}`,
		i%10, i%7, ts.Format("2006-01-02"), i, i, noteRow, i%3 == 0, decimalString(unscaled, 2), i%1000, float64(i)/4, strings.Join(tagsRow, ","), ts.Format("2006-01-02T15:04:05Z"))
	return value, row
}

// decimalString renders unscaled*10^-scale as Arrow does, without
// trailing zeros: -5000, 12.3.
func decimalString(unscaled int64, scale int) string {
	s := new(big.Rat).SetFrac(big.NewInt(unscaled), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// The must-show of format.class=parquet: 100k records with a schema over 4
// partitions, written as Parquet by S3Sink on two worker processes, one of
// them SIGKILLed while they write and started again. Arrow's reader (not
// the parquet-go the sink writes with) then reads from the bucket exactly
// the objects flush.size=1000 cuts per partition, each holding its
// records in offset order with their types: every record once.
func TestS3ParquetAfterWorkerSIGKILL(t *testing.T) {
	const parts, total, flush = 4, 100_000, 1000
	e := newEnv(t, harness.Options{})
	ctx := t.Context()
	lake := startLake(t)
	e.createTopic(ctx, "orders", parts)
	var recs []*kgo.Record
	rows := make([][]string, parts)
	for i := 0; i < total; i++ {
		v, row := order(i)
		p := i % parts
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(p), Key: []byte("k-" + strconv.Itoa(i)), Value: v})
		rows[p] = append(rows[p], row)
	}
	objects := map[string][]string{}
	for p, rs := range rows {
		for start := 0; start < len(rs); start += flush {
			objects[fmt.Sprintf("orders/partition=%d/orders+%d+%010d.snappy.parquet", p, p, start)] = rs[start:min(start+flush, len(rs))]
		}
	}

	ws := e.start(ctx, "w1", "w2")
	if err := ws[0].REST.PutConnector(ctx, "lake", lake.sinkConfig("orders", "value.converter.schemas.enable", "true",
		"format.class", "io.confluent.connect.s3.format.parquet.ParquetFormat", "flush.size", strconv.Itoa(flush))); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, ws[0], 60*time.Second, "the 4 sink tasks RUNNING", harness.AllRunning(4), "lake")
	e.killMidway(ctx, recs, func() (bool, string) {
		n := lake.count(ctx)
		return n >= 5, fmt.Sprintf("%d objects", n)
	}, "orders", "lake")

	read := 0
	got := lake.objects(ctx, func(name string, b []byte) {
		want, ok := objects[name]
		if !ok {
			t.Fatalf("unexpected object %s", name)
		}
		f, err := parquetread.Read(ctx, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(f.Rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", name, len(f.Rows), len(want))
		}
		for i, r := range f.Rows {
			if r != want[i] {
				t.Fatalf("%s row %d: Arrow reads\n%s\nwant\n%s", name, i, r, want[i])
			}
		}
		if got := f.Columns(); !slices.Equal(got, orderColumns) {
			t.Fatalf("%s: Arrow reads the columns\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(orderColumns, "\n"))
		}
		read += len(f.Rows)
	})
	if len(got) != len(objects) || read != total {
		t.Fatalf("%d objects with %d rows in the bucket, want exactly the %d objects that flush.size=%d cuts, %d rows", len(got), read, len(objects), flush, total)
	}
	t.Logf("S3: %d Parquet objects, read by Arrow: %d rows, each record once, in offset order, with its types", len(got), read)
}
