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

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/sink"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
)

func benchSink(ctx context.Context, conn *pgx.Conn, url string) error {
	// Sink: the same rows as records.
	recs, err := records(ctx, conn)
	if err != nil {
		return err
	}
	sinkTaskRate, _, err := best("sink task alone", func() (float64, error) { return sinkTaskOnly(ctx, conn, url, recs) })
	if err != nil {
		return err
	}
	// The records as Kafka holds them (JSON with schemas). The records
	// themselves go: they are a live heap of pointers the garbage
	// collector would mark again and again while the sink runs, which a
	// worker does not carry. COPY gets its rows from these bytes before
	// each of its runs.
	encoded, err := encode(recs)
	if err != nil {
		return err
	}
	recs = nil
	ps, err := paired("sink", step{"sink from Kafka", func() (float64, error) {
		runtime.GC() // COPY's rows are garbage now
		rate, err := sinkThroughKafka(ctx, conn, url, encoded)
		if err == nil { // as COPY's, the table goes before the next run
			_, err = conn.Exec(ctx, `DROP TABLE sink`)
		}
		return rate, err
	}}, step{"COPY", func() (float64, error) { return plainCopy(ctx, conn, encoded) }},
		step{"hand-written pipeline", func() (float64, error) { return sinkPipeline(ctx, conn, encoded) }})
	if err != nil {
		return err
	}
	cp, pipe := ps[0], ps[1]
	figure("pg_sink_rows_per_s", cp.conn)
	figure("pg_sink_vs_copy_ratio", cp.ratio())
	figure("pg_sink_vs_pipeline_ratio", pipe.ratio())
	figure("pg_sink_task_rows_per_s", sinkTaskRate)
	figure("pg_sink_task_vs_copy_ratio", sinkTaskRate/cp.base)
	figure("pg_copy_cpu_us_per_row", cp.baseCPU)
	figure("pg_sink_pipeline_cpu_us_per_row", pipe.baseCPU)
	figure("pg_sink_cpu_us_per_row", cp.connCPU)
	return nil
}

var (
	keySchema   = data.StructOf("sink.Key", data.F("id", data.Int64Schema))
	valueSchema = data.StructOf("sink", data.F("id", data.Int64Schema), data.F("name", data.StringSchema), data.F("qty", data.Int32Schema),
		data.F("price", data.DecimalSchema(2).AsOptional()), data.F("at", data.TimestampSchema()), data.F("note", data.OptionalStringSchema))
)

// records reads the source table into sink records of topic "sink".
func records(ctx context.Context, conn *pgx.Conn) ([]*plugin.SinkRecord, error) {
	rs, err := conn.Query(ctx, `SELECT id, name, qty, price::text, at, note FROM src ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var out []*plugin.SinkRecord
	for rs.Next() {
		var (
			id    int64
			name  string
			qty   int32
			price *string
			at    time.Time
			note  *string
		)
		if err := rs.Scan(&id, &name, &qty, &price, &at, &note); err != nil {
			return nil, err
		}
		v := data.NewStruct(valueSchema).Put("id", id).Put("name", name).Put("qty", qty).Put("at", at.UTC())
		if price != nil {
			d, err := data.ParseDecimal(*price)
			if err != nil {
				return nil, err
			}
			v.Put("price", d)
		}
		if note != nil {
			v.Put("note", *note)
		}
		out = append(out, &plugin.SinkRecord{Topic: "sink", Partition: int32(id % 4), Offset: id, KeySchema: keySchema,
			Key: data.NewStruct(keySchema).Put("id", id), ValueSchema: valueSchema, Value: v})
	}
	return out, rs.Err()
}

func resetTable(ctx context.Context, conn *pgx.Conn, name string) error {
	_, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+name+`; CREATE TABLE `+name+` (`+columns+`)`)
	return err
}

// plainCopy copies the records' rows into an empty table with COPY.
func plainCopy(ctx context.Context, conn *pgx.Conn, encoded [][2][]byte) (float64, error) {
	if err := resetTable(ctx, conn, "copied"); err != nil {
		return 0, err
	}
	vc, err := converter.New(converter.JSONClass, nil, false)
	if err != nil {
		return 0, err
	}
	rowsIn := make([][]any, len(encoded))
	for i, kv := range encoded {
		_, value, err := vc.ToConnectData("sink", kv[1])
		if err != nil {
			return 0, err
		}
		v := value.(*data.Struct)
		// Prices as pgx's own numeric type, pgx's natural input for a
		// numeric column (a string would add parsing to the baseline).
		var price any
		if d, ok := v.Get("price").(data.Decimal); ok {
			price = pgtype.Numeric{Int: d.Unscaled, Exp: -d.Scale, Valid: true}
		}
		rowsIn[i] = []any{v.Get("id"), v.Get("name"), v.Get("qty"), price, v.Get("at"), v.Get("note")}
	}
	cpu := startCPU()
	start := time.Now()
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"copied"}, []string{"id", "name", "qty", "price", "at", "note"}, pgx.CopyFromRows(rowsIn))
	if err != nil {
		return 0, err
	}
	rate := float64(n) / time.Since(start).Seconds()
	cpu.endCPU(int(n))
	// The table goes, so that PostgreSQL does not write its pages back
	// during the next run.
	if _, err := conn.Exec(ctx, `DROP TABLE copied`); err != nil {
		return 0, err
	}
	return rate, nil
}

func sinkConfig(url string) map[string]string {
	return map[string]string{"name": "bench-sink", "connector.class": sink.Class, "topics": "sink", "connection.url": url,
		sink.KeyInsertMode: sink.InsertModeUpsert, sink.KeyPKMode: sink.PKModeRecordKey, sink.KeyBatchSize: "5000"}
}

// sinkTaskOnly puts the records into a sink task in batches of 500 (the
// runner's default) and flushes every 5000.
func sinkTaskOnly(ctx context.Context, conn *pgx.Conn, url string, recs []*plugin.SinkRecord) (float64, error) {
	if err := resetTable(ctx, conn, "sink"); err != nil {
		return 0, err
	}
	t := sink.Plugin().NewSinkTask()
	start, cpu, pgCPU := time.Now(), cpuSeconds(), postgresCPUSeconds()
	if err := t.Start(ctx, plugintest.NewSinkTaskContext(), sinkConfig(url)); err != nil {
		return 0, err
	}
	defer t.Stop()
	start = time.Now() // timed from here: the task's connection is open, as the COPY's is
	for i := 0; i < len(recs); i += 500 {
		if err := t.Put(ctx, recs[i:min(i+500, len(recs))]); err != nil {
			return 0, err
		}
	}
	if err := t.Flush(ctx, nil); err != nil {
		return 0, err
	}
	rate := float64(len(recs)) / time.Since(start).Seconds()
	if err := checkCount(ctx, conn, "sink", len(recs)); err != nil {
		return 0, err
	}
	logf("sink task alone: %.0f rows/s, %.2f CPU s in this process and %.2f in PostgreSQL", rate, cpuSeconds()-cpu, postgresCPUSeconds()-pgCPU)
	return rate, nil
}

func checkCount(ctx context.Context, conn *pgx.Conn, table string, want int) error {
	var got int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&got); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("table %s has %d rows, want %d", table, got, want)
	}
	return nil
}

// sinkThroughKafka produces the records to Kafka (JSON with schemas) and
// times a sink runner from start to committed end offsets.
// encode serialises records as the sink's converters read them: keys and
// values in JSON with schemas, in one buffer (no pointers to mark).
func encode(recs []*plugin.SinkRecord) ([][2][]byte, error) {
	kc, err := converter.New(converter.JSONClass, nil, true)
	if err != nil {
		return nil, err
	}
	vc, err := converter.New(converter.JSONClass, nil, false)
	if err != nil {
		return nil, err
	}
	var buf []byte
	lens := make([][2]int, len(recs))
	for i, r := range recs {
		k, err := kc.FromConnectData("sink", r.KeySchema, r.Key)
		if err != nil {
			return nil, err
		}
		v, err := vc.FromConnectData("sink", r.ValueSchema, r.Value)
		if err != nil {
			return nil, err
		}
		buf = append(append(buf, k...), v...)
		lens[i] = [2]int{len(k), len(v)}
	}
	out := make([][2][]byte, len(recs))
	off := 0
	for i, l := range lens {
		k, v := off+l[0], off+l[0]+l[1]
		out[i] = [2][]byte{buf[off:k:k], buf[k:v:v]}
		off = v
	}
	return out, nil
}

// sinkThroughKafka produces the records to Kafka (ids 1..n in order) and
// times a sink runner from RUNNING until every row is in the table.
func sinkThroughKafka(ctx context.Context, conn *pgx.Conn, url string, recs [][2][]byte) (float64, error) {
	if err := resetTable(ctx, conn, "sink"); err != nil {
		return 0, err
	}
	e, lastIDs, err := kafkaWithRecords(ctx, recs)
	if err != nil {
		return 0, err
	}
	defer e.close()
	spec := e.spec
	spec.Config, spec.Connector = sinkConfig(url), sinkConfig(url)
	spec.Plugin = sink.Plugin()
	start, cpu, pgCPU := time.Now(), cpuSeconds(), postgresCPUSeconds()
	r, stop, err := startRunner(ctx, spec)
	if err != nil {
		return 0, err
	}
	defer stop()
	var progress []int64 // rows in the table every 50ms, for -v
	for {
		var found int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM sink WHERE id = ANY($1)`, lastIDs).Scan(&found); err != nil {
			return 0, err
		}
		if found == len(lastIDs) {
			// Confirm once with a full count (the ordering argument above
			// should make this a formality).
			var all int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM sink`).Scan(&all); err != nil {
				return 0, err
			}
			if all == len(recs) {
				break
			}
		}
		if *verbose && e.since(start) > time.Duration(len(progress)+1)*50*time.Millisecond {
			var top *int64
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM sink`).Scan(&top); err != nil {
				return 0, err
			}
			progress = append(progress, valueOr(top, 0))
		}
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("sink task failed: %w", err)
		}
		if time.Since(start) > 5*time.Minute {
			return 0, errors.New("the sink did not write every row in 5 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rate := float64(len(recs)) / e.since(start).Seconds()
	cpuWindow{cpu, pgCPU}.endCPU(len(recs))
	logf("sink from Kafka: %.0f rows/s, %.2f CPU s in this process and %.2f in PostgreSQL; rows in the table every 50ms after RUNNING: %v",
		rate, cpuSeconds()-cpu, postgresCPUSeconds()-pgCPU, progress)
	return rate, nil
}

// kafkaWithRecords starts a broker holding the records in topic "sink"
// (ids 1..n in order) and returns it with the last id of each partition:
// the sink commits a partition's rows in their order, so once these are
// in the table, all rows are.
func kafkaWithRecords(ctx context.Context, recs [][2][]byte) (*kafkaEnv, []int64, error) {
	e, err := newKafkaEnv("sink", "bench-sink", nil)
	if err != nil {
		return nil, nil, err
	}
	last := map[int32]int64{}
	var batch []*kgo.Record
	for i, kv := range recs {
		batch = append(batch, &kgo.Record{Topic: "sink", Key: kv[0], Value: kv[1], Context: context.WithValue(ctx, idKey{}, int64(i+1))})
		if len(batch) == 10000 || i == len(recs)-1 {
			if err := e.client.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				e.close()
				return nil, nil, err
			}
			for _, r := range batch {
				last[r.Partition] = r.Context.Value(idKey{}).(int64)
			}
			batch = batch[:0]
		}
	}
	lastIDs := make([]int64, 0, len(last))
	for _, id := range last {
		lastIDs = append(lastIDs, id)
	}
	return e, lastIDs, nil
}

// idKey carries a produced record's row id in its context.
type idKey struct{}

func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
