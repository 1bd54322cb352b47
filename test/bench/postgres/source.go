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
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/task"
)

func benchSource(ctx context.Context, conn *pgx.Conn, url string, n int) error {
	// The first SELECT warms the cache for all that follow.
	if _, err := selectAll(ctx, conn); err != nil {
		return err
	}
	taskRate, _, err := best("source task alone", func() (float64, error) { return sourceTaskOnly(ctx, url, n) })
	if err != nil {
		return err
	}
	enc, err := probeEncoder(ctx, conn, url)
	if err != nil {
		return err
	}
	ps, err := paired("source", step{"source into Kafka", func() (float64, error) { return sourceThroughKafka(ctx, url, n) }},
		step{"SELECT", func() (float64, error) { return selectAll(ctx, conn) }},
		step{"hand-written pipeline", func() (float64, error) { return sourcePipeline(ctx, conn, enc, n) }})
	if err != nil {
		return err
	}
	sel, pipe := ps[0], ps[1]
	figure("pg_source_rows_per_s", sel.conn)
	figure("pg_source_vs_select_ratio", sel.ratio())
	figure("pg_source_vs_pipeline_ratio", pipe.ratio())
	figure("pg_source_task_rows_per_s", taskRate)
	figure("pg_select_cpu_us_per_row", sel.baseCPU)
	figure("pg_source_pipeline_cpu_us_per_row", pipe.baseCPU)
	figure("pg_source_cpu_us_per_row", sel.connCPU)
	return nil
}

func selectAll(ctx context.Context, conn *pgx.Conn) (float64, error) {
	cpu := startCPU()
	start := time.Now()
	rs, err := conn.Query(ctx, `SELECT id, name, qty, price, at, note FROM src ORDER BY id`)
	if err != nil {
		return 0, err
	}
	var (
		id    int64
		name  string
		qty   int32
		price pgtype.Numeric
		at    time.Time
		note  *string
		count int
	)
	for rs.Next() {
		if err := rs.Scan(&id, &name, &qty, &price, &at, &note); err != nil {
			return 0, err
		}
		count++
	}
	if err := rs.Err(); err != nil {
		return 0, err
	}
	rate := float64(count) / time.Since(start).Seconds()
	cpu.endCPU(count)
	return rate, nil
}

func sourceConfig(url string) map[string]string {
	return map[string]string{
		"name": "bench-source", "connector.class": tablesource.Class, "connection.url": url,
		tablesource.KeyTableWhitelist: "src", tablesource.KeyMode: tablesource.ModeIncrementing, tablesource.KeyIncrementingColumn: "id",
		tablesource.KeyTopicPrefix: "pg.", tablesource.KeyBatchMaxRows: "2000", tablesource.KeyPollIntervalMs: "100",
		tablesource.KeyTablePollIntervalMs: "0",
	}
}

// sourceTaskOnly polls a table source task until it returned every row.
func sourceTaskOnly(ctx context.Context, url string, n int) (float64, error) {
	t := tablesource.Plugin().NewSourceTask()
	start, cpu := time.Now(), cpuSeconds()
	if err := t.Start(ctx, &plugintest.SourceTaskContext{Store: plugintest.NewOffsetStore()}, sourceConfig(url)); err != nil {
		return 0, err
	}
	defer t.Stop()
	started := time.Since(start)
	start = time.Now() // timed from here: the task's connection is open, as the SELECT's is
	got := 0
	for got < n {
		recs, err := t.Poll(ctx)
		if err != nil {
			return 0, err
		}
		if got == 0 {
			logf("source task alone: started in %s, first poll returned %d records %s later", started, len(recs), time.Since(start))
		}
		got += len(recs)
		if len(recs) == 0 && time.Since(start) > 5*time.Minute {
			return 0, fmt.Errorf("source task returned %d of %d rows", got, n)
		}
	}
	rate := float64(got) / time.Since(start).Seconds()
	logf("source task alone: %.0f rows/s, %.2f CPU s in this process", rate, cpuSeconds()-cpu)
	return rate, nil
}

// nopOffsets is an offset store that keeps nothing (nothing resumes).
type nopOffsets struct{}

func (nopOffsets) Read(_ context.Context, _ string, parts []map[string]any) ([]map[string]any, error) {
	return make([]map[string]any, len(parts)), nil
}

func (nopOffsets) Write(context.Context, string, []task.SourceOffset) error { return nil }

// sourceThroughKafka runs the table source through the source runner
// until Kafka holds every row.
func sourceThroughKafka(ctx context.Context, url string, n int) (float64, error) {
	e, err := newKafkaEnv("pg.src", "bench-source", sourceConfig(url))
	if err != nil {
		return 0, err
	}
	defer e.close()
	spec, adm := e.spec, e.adm
	spec.Plugin, spec.Offsets = tablesource.Plugin(), nopOffsets{}
	start, cpu, pgCPU := time.Now(), cpuSeconds(), postgresCPUSeconds()
	r, stop, err := startRunner(ctx, spec)
	if err != nil {
		return 0, err
	}
	defer stop()
	var first time.Duration
	var progress []int64 // rows in Kafka every 50ms, for -v
	for {
		ends, err := adm.ListEndOffsets(ctx, "pg.src")
		if err != nil {
			return 0, err
		}
		total := int64(0)
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if *verbose && time.Since(start) > time.Duration(len(progress)+1)*50*time.Millisecond {
			progress = append(progress, total)
		}
		if total > 0 && first == 0 {
			first = time.Since(start)
		}
		if total >= int64(n) {
			break
		}
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("source task failed: %w", err)
		}
		if time.Since(start) > 5*time.Minute {
			return 0, fmt.Errorf("source wrote %d of %d rows in 5 minutes", total, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	rate := float64(n) / e.since(start).Seconds()
	cpuWindow{cpu, pgCPU}.endCPU(n)
	logf("source into Kafka: %.0f rows/s, %.2f CPU s in this process and %.2f in PostgreSQL, first records in Kafka after %s; rows in Kafka every 50ms: %v",
		rate, cpuSeconds()-cpu, postgresCPUSeconds()-pgCPU, first.Round(time.Millisecond), progress)
	return rate, nil
}
