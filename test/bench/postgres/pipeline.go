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

package main

// The hand-written pipelines: the work of a connector and its runner,
// written for this one table by someone who wants it fast. See the
// package comment for what each does.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/task"
)

// envelope is the JSON-with-schema text around a payload: prefix
// (`{"schema":{...},"payload":`) and the closing `}`.
type envelope struct{ key, value []byte }

// rowEncoder writes the src table's rows as the JSON converter (schemas
// on) writes the table source's records: the same bytes, checked by
// checkEncoder against the converter.
type rowEncoder struct{ env envelope }

func (e rowEncoder) key(b []byte, id int64) []byte {
	b = append(b, e.env.key...)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, "}}"...)
}

func (e rowEncoder) value(b []byte, id int64, name string, qty int32, price pgtype.Numeric, at time.Time, note *string) []byte {
	b = append(b, e.env.value...)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"name":`...)
	b = appendString(b, name)
	b = append(b, `,"qty":`...)
	b = strconv.AppendInt(b, int64(qty), 10)
	b = append(b, `,"price":`...)
	if price.Valid {
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, unscaledBytes(price, 2))
		b = append(b, '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, at.UnixMilli(), 10)
	b = append(b, `,"note":`...)
	if note != nil {
		b = appendString(b, *note)
	} else {
		b = append(b, "null"...)
	}
	return append(b, "}}"...)
}

// appendString writes s as a JSON string: as is when nothing needs an
// escape (the table's strings), else through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// unscaledBytes is a numeric's unscaled value at scale, big-endian two's
// complement (Kafka's Decimal bytes).
func unscaledBytes(n pgtype.Numeric, scale int32) []byte {
	u := new(big.Int).Set(n.Int)
	if e := n.Exp + scale; e > 0 {
		u.Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil))
	} else if e < 0 {
		u.Quo(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-e)), nil))
	}
	if u.Sign() >= 0 {
		b := u.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// Negative: 2^(8n) + u in the fewest bytes n whose top bit is set.
	n8 := (u.BitLen() + 8) / 8
	t := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(8*n8)), u)
	b := t.Bytes()
	for len(b) < n8 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// probeEncoder reads the table source's first poll (untimed), takes the
// envelopes from the JSON converter's bytes of its first record, and
// checks that the encoder writes every record of the poll as the
// converter does.
func probeEncoder(ctx context.Context, conn *pgx.Conn, url string) (rowEncoder, error) {
	t := tablesource.Plugin().NewSourceTask()
	if err := t.Start(ctx, &plugintest.SourceTaskContext{Store: plugintest.NewOffsetStore()}, sourceConfig(url)); err != nil {
		return rowEncoder{}, err
	}
	defer t.Stop()
	recs, err := t.Poll(ctx)
	if err != nil {
		return rowEncoder{}, err
	}
	if len(recs) == 0 {
		return rowEncoder{}, errors.New("the table source's first poll returned nothing")
	}
	kc, err := converter.New(converter.JSONClass, nil, true)
	if err != nil {
		return rowEncoder{}, err
	}
	vc, err := converter.New(converter.JSONClass, nil, false)
	if err != nil {
		return rowEncoder{}, err
	}
	want := make([][2][]byte, len(recs))
	for i, r := range recs {
		k, err := kc.FromConnectData(r.Topic, r.KeySchema, r.Key)
		if err != nil {
			return rowEncoder{}, err
		}
		v, err := vc.FromConnectData(r.Topic, r.ValueSchema, r.Value)
		if err != nil {
			return rowEncoder{}, err
		}
		want[i] = [2][]byte{bytes.Clone(k), bytes.Clone(v)}
	}
	cut := func(b []byte) ([]byte, error) {
		const p = `"payload":`
		i := bytes.Index(b, []byte(p))
		if i < 0 {
			return nil, fmt.Errorf("no payload in %s", b)
		}
		return b[:i+len(p)], nil
	}
	var e rowEncoder
	if e.env.key, err = cut(want[0][0]); err != nil {
		return e, err
	}
	if e.env.value, err = cut(want[0][1]); err != nil {
		return e, err
	}
	rs, err := conn.Query(ctx, `SELECT id, name, qty, price, at, note FROM src ORDER BY id LIMIT $1`, len(want))
	if err != nil {
		return e, err
	}
	defer rs.Close()
	i := 0
	var r srcRow
	for rs.Next() {
		if err := rs.Scan(&r.id, &r.name, &r.qty, &r.price, &r.at, &r.note); err != nil {
			return e, err
		}
		k, v := e.key(nil, r.id), e.value(nil, r.id, r.name, r.qty, r.price, r.at, r.note)
		if !bytes.Equal(k, want[i][0]) || !bytes.Equal(v, want[i][1]) {
			return e, fmt.Errorf("the hand-written encoder differs from the JSON converter at row %d:\n  %s %s\nwant\n  %s %s", i, k, v, want[i][0], want[i][1])
		}
		i++
	}
	if i != len(want) {
		return e, fmt.Errorf("probe: %d rows, want %d", i, len(want))
	}
	logf("hand-written encoder: %d rows checked byte for byte against the JSON converter", i)
	return e, rs.Err()
}

type srcRow struct {
	id    int64
	name  string
	qty   int32
	price pgtype.Numeric
	at    time.Time
	note  *string
}

// sourcePipeline: SELECT every row, encode it, produce it to a fresh
// broker with the source runner's producer settings, timed from the query
// until Kafka acknowledged every row.
func sourcePipeline(ctx context.Context, conn *pgx.Conn, enc rowEncoder, n int) (float64, error) {
	e, err := newKafkaEnv("pg.src", "bench-pipeline", nil)
	if err != nil {
		return 0, err
	}
	defer e.close()
	settings, err := task.ProducerSettings(nil)
	if err != nil {
		return 0, err
	}
	// The runner's defaults: MaxInFlight 10000 records, 64 MiB.
	opts := append([]kgo.Opt{kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.DefaultProduceTopic("pg.src")},
		append(task.ProducerOpts(10000, 64<<20), settings...)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	// The producer id first, as the runner gets it while its task starts.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "pg.src", Partition: 0, Value: []byte("warm-up")}).FirstErr(); err != nil {
		return 0, err
	}
	var failed atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	cpu := startCPU()
	start := time.Now()
	rs, err := conn.Query(ctx, `SELECT id, name, qty, price, at, note FROM src ORDER BY id`)
	if err != nil {
		return 0, err
	}
	var (
		r     srcRow
		count int
		buf   []byte
		slab  []kgo.Record
	)
	for rs.Next() {
		if err := rs.Scan(&r.id, &r.name, &r.qty, &r.price, &r.at, &r.note); err != nil {
			return 0, err
		}
		// Records and their bytes come from slabs (1000 records, 1 MiB),
		// never reused: a record's bytes live until Kafka acknowledged it.
		if len(slab) == 0 {
			slab = make([]kgo.Record, 1000)
		}
		if cap(buf)-len(buf) < 2048 {
			buf = make([]byte, 0, 1<<20)
		}
		s := len(buf)
		buf = enc.key(buf, r.id)
		k := len(buf)
		buf = enc.value(buf, r.id, r.name, r.qty, r.price, r.at, r.note)
		rec := &slab[0]
		slab = slab[1:]
		rec.Key, rec.Value = buf[s:k:k], buf[k:len(buf):len(buf)]
		cl.Produce(ctx, rec, promise)
		count++
	}
	if err := rs.Err(); err != nil {
		return 0, err
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if p := failed.Load(); p != nil {
		return 0, fmt.Errorf("producing: %w", *p)
	}
	rate := float64(count) / time.Since(start).Seconds()
	cpu.endCPU(count)
	if count != n {
		return 0, fmt.Errorf("the pipeline wrote %d rows, want %d", count, n)
	}
	return rate, nil
}

// sinkPipeline: consume the records (a direct consumer, no group), decode
// their JSON payloads by hand and COPY the rows into an empty table in one
// stream, timed from the consumer's creation until the COPY ended.
func sinkPipeline(ctx context.Context, conn *pgx.Conn, recs [][2][]byte) (float64, error) {
	if err := resetTable(ctx, conn, "copied"); err != nil {
		return 0, err
	}
	e, _, err := kafkaWithRecords(ctx, recs)
	if err != nil {
		return 0, err
	}
	defer e.close()
	prefix, err := valuePrefix(recs[0][1])
	if err != nil {
		return 0, err
	}
	cpu := startCPU()
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.ConsumeTopics("sink"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var (
		pending []*kgo.Record
		got     int
		row     = make([]any, 6) // pgx encodes a row before asking for the next
		dec     payloadDecoder
	)
	next := func() ([]any, error) {
		for len(pending) == 0 {
			if got == len(recs) {
				return nil, nil
			}
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				return nil, err
			}
			pending = fs.Records()
			got += len(pending)
		}
		kr := pending[0]
		pending = pending[1:]
		v, ok := bytes.CutPrefix(kr.Value, prefix)
		if !ok {
			return nil, fmt.Errorf("record %d: another schema", kr.Offset)
		}
		return dec.decode(v, row)
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"copied"}, []string{"id", "name", "qty", "price", "at", "note"},
		pgx.CopyFromFunc(func() ([]any, error) { return next() }))
	if err != nil {
		return 0, err
	}
	rate := float64(n) / time.Since(start).Seconds()
	cpu.endCPU(int(n))
	if int(n) != len(recs) {
		return 0, fmt.Errorf("the pipeline copied %d rows, want %d", n, len(recs))
	}
	if _, err := conn.Exec(ctx, `DROP TABLE copied`); err != nil {
		return 0, err
	}
	return rate, nil
}

// valuePrefix is the envelope before the payload, the same in every
// record of the topic.
func valuePrefix(v []byte) ([]byte, error) {
	const p = `"payload":`
	i := bytes.Index(v, []byte(p))
	if i < 0 {
		return nil, errors.New("no payload in the first record")
	}
	return bytes.Clone(v[:i+len(p)]), nil
}

// payloadDecoder reads {"id":N,"name":S,"qty":N,"price":B64|null,"at":N,
// "note":S|null}} (the payload and the envelope's closing brace), the
// fields in the order the converter writes them.
type payloadDecoder struct {
	b   []byte
	err error
}

func (d *payloadDecoder) decode(b []byte, row []any) ([]any, error) {
	d.b, d.err = b, nil
	d.lit(`{"id":`)
	row[0] = d.int()
	d.lit(`,"name":`)
	row[1] = d.str()
	d.lit(`,"qty":`)
	row[2] = int32(d.int())
	d.lit(`,"price":`)
	if d.null() {
		row[3] = nil
	} else if s := d.raw(); d.err == nil {
		u, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		row[3] = pgtype.Numeric{Int: signed(u), Exp: -2, Valid: true}
	}
	d.lit(`,"at":`)
	row[4] = time.UnixMilli(d.int()).UTC()
	d.lit(`,"note":`)
	if d.null() {
		row[5] = nil
	} else {
		row[5] = d.str()
	}
	d.lit(`}}`)
	return row, d.err
}

func (d *payloadDecoder) lit(s string) {
	if d.err == nil && !bytes.HasPrefix(d.b, []byte(s)) {
		d.err = fmt.Errorf("payload: want %s at %.20q", s, d.b)
		return
	}
	d.b = d.b[len(s):]
}

func (d *payloadDecoder) int() int64 {
	if d.err != nil {
		return 0
	}
	i := 0
	for i < len(d.b) && (d.b[i] == '-' || d.b[i] >= '0' && d.b[i] <= '9') {
		i++
	}
	v, err := strconv.ParseInt(string(d.b[:i]), 10, 64)
	d.err, d.b = err, d.b[i:]
	return v
}

func (d *payloadDecoder) null() bool {
	if d.err == nil && bytes.HasPrefix(d.b, []byte("null")) {
		d.b = d.b[4:]
		return true
	}
	return false
}

// raw reads a string without escapes; str reads any string.
func (d *payloadDecoder) raw() string {
	if d.err != nil || len(d.b) == 0 || d.b[0] != '"' {
		d.err = errors.Join(d.err, errors.New("payload: want a string"))
		return ""
	}
	end := bytes.IndexByte(d.b[1:], '"')
	if end < 0 || bytes.IndexByte(d.b[1:1+end], '\\') >= 0 {
		d.err = errors.New("payload: an escaped string")
		return ""
	}
	s := string(d.b[1 : 1+end])
	d.b = d.b[end+2:]
	return s
}

func (d *payloadDecoder) str() string {
	if d.err == nil && len(d.b) > 0 && d.b[0] == '"' {
		if end := bytes.IndexByte(d.b[1:], '"'); end >= 0 && bytes.IndexByte(d.b[1:1+end], '\\') < 0 {
			return d.raw()
		}
		// Escapes: the slow way.
		var s string
		dec := json.NewDecoder(bytes.NewReader(d.b))
		if d.err = dec.Decode(&s); d.err == nil {
			d.b = d.b[dec.InputOffset():]
		}
		return s
	}
	return d.raw()
}

// signed reads big-endian two's complement bytes.
func signed(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}
