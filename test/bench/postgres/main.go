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
//   - pg_source_vs_pipeline_ratio: the source's rows/s divided by a
//     hand-written pipeline's (pipeline.go) in the same try: one pgx SELECT
//     of the same rows scanned into typed values, the same JSON-with-schema
//     bytes (envelopes taken once from the JSON converter; every row of the
//     table source's first poll checked byte for byte against the
//     converter before anything is timed) appended into 1 MiB slabs, and a
//     franz-go produce to a fresh broker with the source runner's own
//     producer options (task.ProducerOpts and task.ProducerSettings:
//     idempotent, acks=all, snappy, 10000 records in flight), timed from
//     the query until Kafka acknowledged every row;
//   - pg_sink_vs_pipeline_ratio: the sink's rows/s divided by a
//     hand-written pipeline's: a franz-go consumer (direct, no group) of
//     the same records, a by-hand decoder of this one record shape (the
//     envelope's schema compared as a prefix, the payload's fields read in
//     order, no reflection) and one streaming pgx COPY into an empty
//     table, timed from the consumer's creation until the COPY ended;
//   - neither hand-written pipeline is slowed on purpose: no extra copies,
//     no per-record allocation beyond what pgx and franz-go need, no
//     logging; pg_source_pipeline_cpu_us_per_row and
//     pg_sink_pipeline_cpu_us_per_row give their CPU per row;
//   - pg_sink_task_rows_per_s: the sink task alone (Put and Flush of
//     converted records), and pg_sink_task_vs_copy_ratio;
//   - pg_select_cpu_us_per_row, pg_source_cpu_us_per_row,
//     pg_copy_cpu_us_per_row and pg_sink_cpu_us_per_row: the CPU time per
//     row that the counted runs of SELECT, the source, COPY and the sink
//     used, this process's (the clients, the runners and the Kafka broker)
//     and PostgreSQL's together. On a machine with few cores the rates
//     follow these: all of it shares the same cores.
//
// The baselines and their connector run in turn, -tries times, and each
// ratio comes from the try whose ratio to that baseline is the median: the machine's speed drifts
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
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
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

// pair is one try of a baseline and a connector: their rates and CPU per
// row.
type pair struct{ base, conn, baseCPU, connCPU float64 }

func (p pair) ratio() float64 { return p.conn / p.base }

// step is a named measurement: a baseline or a connector.
type step struct {
	name string
	f    func() (float64, error)
}

// paired runs each baseline and right after them the connector, -tries
// times, and returns for each baseline the try whose ratio is the median:
// the machine's speed drifts (other virtual machines, other processes),
// and it moves the runs of a try alike. The connector's runs are profiled
// into -cpuprofile and -trace, one file per try (suffix .what.N).
func paired(what string, conn step, bases ...step) ([]pair, error) {
	all := make([][]pair, len(bases))
	for i := 0; i < max(*tries, 1); i++ {
		ps := make([]pair, len(bases))
		for j, b := range bases {
			lastCPUPerRow = 0
			r, err := b.f()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", b.name, err)
			}
			ps[j].base, ps[j].baseCPU = r, lastCPUPerRow
		}
		lastCPUPerRow = 0
		stop := startProfiles(fmt.Sprintf("%s.%d", what, i+1))
		r, err := conn.f()
		stop()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", conn.name, err)
		}
		for j, b := range bases {
			ps[j].conn, ps[j].connCPU = r, lastCPUPerRow
			logf("try %d: %s %.0f rows/s (%.2f µs CPU/row), %s %.0f rows/s (%.2f µs CPU/row), ratio %.2f",
				i+1, b.name, ps[j].base, ps[j].baseCPU, conn.name, ps[j].conn, ps[j].connCPU, ps[j].ratio())
			all[j] = append(all[j], ps[j])
		}
	}
	out := make([]pair, len(bases))
	for j, ps := range all {
		sort.Slice(ps, func(i, k int) bool { return ps[i].ratio() < ps[k].ratio() })
		out[j] = ps[len(ps)/2]
	}
	return out, nil
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
