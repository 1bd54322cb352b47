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

// Command postgres measures the PostgreSQL connectors against plain pgx in
// the same run and prints one figure per line, "conveyor-bench: NAME=VALUE":
//
//   - pg_source_rows_per_s: rows/s of the table source (one task,
//     incrementing mode) through the worker's source runner into Kafka
//     (JSON converter with schemas), timed until Kafka acknowledged every
//     row; pg_source_vs_select_ratio divides it by the rows/s of a plain pgx
//     SELECT of the same table scanning every row;
//   - pg_source_task_rows_per_s: the table source task alone (Poll loop, no
//     Kafka), to tell the connector's cost from the runtime's;
//   - pg_sink_rows_per_s: rows/s of the sink (one task, upsert by primary
//     key) through the worker's sink runner, from records in Kafka (JSON
//     with schemas) until every row is in the table (offsets are committed
//     at the worker's default interval, 10s, as in a worker);
//     pg_sink_vs_copy_ratio divides it by the rows/s of a plain pgx COPY of
//     the same rows into an empty table;
//   - pg_sink_task_rows_per_s: the sink task alone (Put and Flush of
//     converted records), and pg_sink_task_vs_copy_ratio;
//   - pg_select_cpu_us_per_row, pg_source_cpu_us_per_row,
//     pg_copy_cpu_us_per_row and pg_sink_cpu_us_per_row: the CPU time per
//     row that the counted runs of SELECT, the source, COPY and the sink
//     used, this process's (the clients, the runners and the Kafka broker)
//     and PostgreSQL's together. On a machine with few cores the rates
//     follow these: all of it shares the same cores.
//
// A baseline and its connector run in turn, -tries times, and the figures
// come from the try whose ratio is the median: the machine's speed drifts
// (other virtual machines share it), and it moves both runs of a try
// alike. The task-alone figures are the best of -tries. A connector is
// timed from its
// task's start (the runner reports RUNNING once the task opened its
// database connection; the baselines' connection is open too) until the
// last row is in Kafka or in the table. The runners run with the worker's
// GOGC (worker.DefaultGCPercent) unless GOGC is set.
//
// PostgreSQL is a real server started by pgtest (hack/postgres.sh installs
// it); Kafka is kfake inside this program. Run it with `make bench`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgtest"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/sink"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/worker"
)

var (
	rows    = flag.Int("rows", 100_000, "rows per measurement")
	tries   = flag.Int("tries", 5, "tries of every measurement: the try with the median ratio counts (the best for the task-alone figures)")
	verbose = flag.Bool("v", false, "log progress to stderr")
	cpuProf = flag.String("cpuprofile", "", "write CPU profiles of the source-into-Kafka and sink-from-Kafka runs to this file with the suffixes .source.N and .sink.N (try N)")
	traceTo = flag.String("trace", "", "write Go execution traces of the source-into-Kafka and sink-from-Kafka runs to this file with the suffixes .source.N and .sink.N (go tool trace)")
	only    = flag.String("only", "", `measure only "source" or only "sink" (for profiling one of them)`)
)

// cpuSeconds is this process's user+system CPU time so far; -v logs it
// per measurement, which the machine's load does not change as much as
// the wall-clock rates (PostgreSQL's own CPU is not included).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// pgPID is the PostgreSQL server's postmaster.
var pgPID string

// postgresCPUSeconds is the user+system CPU time the PostgreSQL server
// used so far: the postmaster's own, its exited backends' (which it
// waited for) and its running backends' (-v logs the change per
// measurement: how busy the server was).
func postgresCPUSeconds() float64 {
	dirs, _ := os.ReadDir("/proc")
	ticks := 0.0
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		end := strings.LastIndexByte(string(b), ')')
		if end < 0 {
			continue
		}
		// After "(comm)": state ppid ... utime stime cutime cstime
		// (fields 3, 4, ..., 14, 15, 16, 17).
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 15 {
			continue
		}
		n := 2 // utime, stime
		switch {
		case d.Name() == pgPID:
			n = 4 // and the waited-for children's
		case f[1] != pgPID:
			continue
		}
		for _, v := range f[11 : 11+n] {
			t, _ := strconv.ParseFloat(v, 64)
			ticks += t
		}
	}
	return ticks / 100 // USER_HZ
}

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench-postgres: "+format+"\n", args...)
	}
}

func figure(name string, v float64) {
	fmt.Printf("conveyor-bench: %s=%s\n", name, strconv.FormatFloat(v, 'f', 2, 64))
}

func main() {
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		// The runners here run as in a worker process.
		debug.SetGCPercent(worker.DefaultGCPercent)
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-postgres: %v\n", err)
		os.Exit(1)
	}
}

const columns = `id bigint PRIMARY KEY, name text NOT NULL, qty integer NOT NULL, price numeric(10,2), at timestamptz NOT NULL, note text`

func run() error {
	ctx := context.Background()
	// No autovacuum: it would work on one run's table during the next run
	// (a COPY's 100k new rows during the sink's run, say).
	pg, err := pgtest.Start(pgtest.Options{Settings: map[string]string{"autovacuum": "off"}})
	if err != nil {
		return err
	}
	defer pg.Stop()
	pgPID = strconv.Itoa(pg.PID())
	db, err := pg.NewDatabase(ctx, "bench")
	if err != nil {
		return err
	}
	url := pg.URL(db)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	n := *rows
	if _, err := conn.Exec(ctx, `CREATE TABLE src (`+columns+`)`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO src SELECT g, 'name-' || g, g %% 1000, g * 0.01, '2024-01-01'::timestamptz + g * interval '1 second',
		CASE WHEN g %% 3 = 0 THEN NULL ELSE 'note number ' || g END FROM generate_series(1, %d) g`, n)); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE src`); err != nil {
		return err
	}
	logf("table src has %d rows", n)
	if *only != "sink" {
		if err := benchSource(ctx, conn, url, n); err != nil {
			return err
		}
	}
	if *only != "source" {
		return benchSink(ctx, conn, url)
	}
	return nil
}

func benchSource(ctx context.Context, conn *pgx.Conn, url string, n int) error {
	// The first SELECT warms the cache for all that follow.
	if _, err := selectAll(ctx, conn); err != nil {
		return err
	}
	taskRate, _, err := best("source task alone", func() (float64, error) { return sourceTaskOnly(ctx, url, n) })
	if err != nil {
		return err
	}
	p, err := paired("source", "SELECT", func() (float64, error) { return selectAll(ctx, conn) },
		"source into Kafka", func() (float64, error) { return sourceThroughKafka(ctx, url, n) })
	if err != nil {
		return err
	}
	figure("pg_source_rows_per_s", p.conn)
	figure("pg_source_vs_select_ratio", p.ratio())
	figure("pg_source_task_rows_per_s", taskRate)
	figure("pg_select_cpu_us_per_row", p.baseCPU)
	figure("pg_source_cpu_us_per_row", p.connCPU)
	return nil
}

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
	p, err := paired("sink", "COPY", func() (float64, error) { return plainCopy(ctx, conn, encoded) },
		"sink from Kafka", func() (float64, error) {
			runtime.GC() // COPY's rows are garbage now
			rate, err := sinkThroughKafka(ctx, conn, url, encoded)
			if err == nil { // as COPY's, the table goes before the next run
				_, err = conn.Exec(ctx, `DROP TABLE sink`)
			}
			return rate, err
		})
	if err != nil {
		return err
	}
	figure("pg_sink_rows_per_s", p.conn)
	figure("pg_sink_vs_copy_ratio", p.ratio())
	figure("pg_sink_task_rows_per_s", sinkTaskRate)
	figure("pg_sink_task_vs_copy_ratio", sinkTaskRate/p.base)
	figure("pg_copy_cpu_us_per_row", p.baseCPU)
	figure("pg_sink_cpu_us_per_row", p.connCPU)
	return nil
}

// pair is one try of a baseline and a connector: their rates and CPU per
// row.
type pair struct{ base, conn, baseCPU, connCPU float64 }

func (p pair) ratio() float64 { return p.conn / p.base }

// paired runs the baseline and right after it the connector, -tries times,
// and returns the try whose ratio is the median: the machine's speed
// drifts (other virtual machines, other processes), and it moves both
// runs of a try alike. The connector's runs are profiled into -cpuprofile
// and -trace, one file per try (suffix .what.N).
func paired(what, baseName string, base func() (float64, error), connName string, conn func() (float64, error)) (pair, error) {
	var all []pair
	for i := 0; i < max(*tries, 1); i++ {
		var p pair
		lastCPUPerRow = 0
		r, err := base()
		if err != nil {
			return pair{}, err
		}
		p.base, p.baseCPU = r, lastCPUPerRow
		lastCPUPerRow = 0
		stop := startProfiles(fmt.Sprintf("%s.%d", what, i+1))
		r, err = conn()
		stop()
		if err != nil {
			return pair{}, err
		}
		p.conn, p.connCPU = r, lastCPUPerRow
		logf("try %d: %s %.0f rows/s (%.2f µs CPU/row), %s %.0f rows/s (%.2f µs CPU/row), ratio %.2f",
			i+1, baseName, p.base, p.baseCPU, connName, p.conn, p.connCPU, p.ratio())
		all = append(all, p)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ratio() < all[j].ratio() })
	return all[len(all)/2], nil
}

// startProfiles starts an execution trace into -trace and a CPU profile into
// -cpuprofile, each with the suffix ".what" (when set), and returns their
// stop.
func startProfiles(what string) func() {
	var stops []func()
	for _, o := range []struct {
		file  string
		start func(io.Writer) error
		stop  func()
	}{{*traceTo, trace.Start, trace.Stop}, {*cpuProf, pprof.StartCPUProfile, pprof.StopCPUProfile}} {
		if o.file == "" {
			continue
		}
		f, err := os.Create(o.file + "." + what)
		if err == nil {
			err = o.start(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-postgres: %s: %v\n", o.file, err)
			continue
		}
		stops = append(stops, func() { o.stop(); f.Close() })
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// cpuWindow is the CPU used so far by this process and by PostgreSQL,
// at the start of a measurement.
type cpuWindow struct{ self, pg float64 }

func startCPU() cpuWindow { return cpuWindow{cpuSeconds(), postgresCPUSeconds()} }

// lastCPUPerRow is the CPU per row, in µs, of the last measurement (this
// process's, which holds the Kafka broker, and PostgreSQL's): set by
// endCPU, read by best.
var lastCPUPerRow float64

func (w cpuWindow) endCPU(rows int) {
	lastCPUPerRow = (cpuSeconds() - w.self + postgresCPUSeconds() - w.pg) / float64(rows) * 1e6
}

// best runs f -tries times and returns the highest rate and the CPU per
// row of that run (lastCPUPerRow).
func best(what string, f func() (float64, error)) (rate, cpuPerRow float64, err error) {
	var all []string
	defer func() { logf("%s: %s rows/s", what, strings.Join(all, ", ")) }()
	for i := 0; i < max(*tries, 1); i++ {
		lastCPUPerRow = 0
		r, err := f()
		if err != nil {
			return 0, 0, err
		}
		all = append(all, fmt.Sprintf("%.0f (%.2f µs CPU/row)", r, lastCPUPerRow))
		if r > rate {
			rate, cpuPerRow = r, lastCPUPerRow
		}
	}
	return rate, cpuPerRow, nil
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

// kafkaEnv is an in-process Kafka with one 4-partition topic, the task
// settings of a connector on it and an admin client.
type kafkaEnv struct {
	cluster *kfake.Cluster
	common  task.Common
	client  *kgo.Client
	adm     *kadm.Client
	// running is when the runner first reported RUNNING: its task started,
	// with its database connection open (as the baselines' connection is).
	running atomic.Pointer[time.Time]
}

func ptr[T any](v T) *T { return &v }

// since returns the time since the runner reported RUNNING (or since
// start, when it did not yet).
func (e *kafkaEnv) since(start time.Time) time.Duration {
	if t := e.running.Load(); t != nil {
		return time.Since(*t)
	}
	return time.Since(start)
}

func newKafkaEnv(topic, connector string, cfg map[string]string) (*kafkaEnv, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	if err != nil {
		return nil, err
	}
	e := &kafkaEnv{cluster: c}
	kc, err := converter.New(converter.JSONClass, nil, true)
	if err == nil {
		var vc converter.Converter
		if vc, err = converter.New(converter.JSONClass, nil, false); err == nil {
			e.common = task.Common{
				ID: task.ID{Connector: connector}, Config: cfg, KeyConverter: kc, ValueConverter: vc,
				Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
				Status: task.StatusFunc(func(_ task.ID, st task.State, _ string) {
					if st == task.StateRunning {
						e.running.CompareAndSwap(nil, ptr(time.Now()))
					}
				}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				// The worker's default offset.flush.interval.ms.
				OffsetFlushInterval: 10 * time.Second,
			}
			e.client, err = kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MetadataMinAge(10*time.Millisecond))
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	e.adm = kadm.NewClient(e.client)
	return e, nil
}

func (e *kafkaEnv) close() {
	e.client.Close()
	e.cluster.Close()
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
	cm, adm := e.common, e.adm
	r, err := task.New(tablesource.Plugin(), cm, nopOffsets{})
	if err != nil {
		return 0, err
	}
	start, cpu, pgCPU := time.Now(), cpuSeconds(), postgresCPUSeconds()
	if err := r.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}()
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
	e, err := newKafkaEnv("sink", "bench-sink", sinkConfig(url))
	if err != nil {
		return 0, err
	}
	defer e.close()
	cm, cl := e.common, e.client
	// The last id of each partition: the sink commits a partition's rows in
	// their order, so once these are in the table, all rows are.
	last := map[int32]int64{}
	var batch []*kgo.Record
	for i, kv := range recs {
		batch = append(batch, &kgo.Record{Topic: "sink", Key: kv[0], Value: kv[1], Context: context.WithValue(ctx, idKey{}, int64(i+1))})
		if len(batch) == 10000 || i == len(recs)-1 {
			if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				return 0, err
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
	r, err := task.New(sink.Plugin(), cm, nil)
	if err != nil {
		return 0, err
	}
	start, cpu, pgCPU := time.Now(), cpuSeconds(), postgresCPUSeconds()
	if err := r.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}()
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

// idKey carries a produced record's row id in its context.
type idKey struct{}

func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
