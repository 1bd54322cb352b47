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

// Command mysql measures the MySQL connectors against hand-written
// pipelines in the same run, on a real MariaDB (mariadbtest) and an
// in-process kfake broker, and prints one figure per line,
// "conveyor-bench: NAME=VALUE":
//
//   - mysql_source_rows_per_s: rows/s of MySqlTableSource (one task,
//     incrementing mode) through the worker's source runner into Kafka
//     (JSON converter with schemas), timed until Kafka holds every row;
//     mysql_source_vs_pipeline_ratio divides it by a hand-written
//     pipeline's: one SELECT of the same rows, each row appended as a
//     JSON-with-schema record by hand (no reflection), and a franz-go
//     produce with the same settings (idempotent, acks=all), timed until
//     every record is acknowledged;
//   - mysql_sink_rows_per_s: rows/s of MySqlSink (one task, upsert by
//     primary key) through the worker's sink runner from those records
//     until every row is in an empty table; mysql_sink_vs_pipeline_ratio
//     divides it by a hand-written pipeline's: a franz-go consumer of the
//     same records, encoding/json into a struct of this one shape, and
//     multi-row INSERTs of 500 rows in transactions of 3000.
//
// Each figure is the median of -tries paired runs (baseline, then the
// connector). The targets (issue 27): both ratios ≥ 0.8.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/test/testkit/servers/mariadbtest"
)

var (
	rows  = flag.Int("rows", 100_000, "rows in the table")
	tries = flag.Int("tries", 3, "paired runs per figure (the median ratio is reported)")
	// go run ./test/bench/mysql -cpuprofile /tmp/src.pprof -profile source,
	// then go tool pprof -top /tmp/src.pprof.
	cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of the connector runs named by -profile to this file")
	profile    = flag.String("profile", "source", "the connector runs -cpuprofile covers: source or sink")
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mysql-bench: "+format+"\n", args...)
}

func figure(name string, v float64) {
	fmt.Printf("conveyor-bench: %s=%s\n", name, strconv.FormatFloat(v, 'f', 2, 64))
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "mysql-bench: %v\n", err)
		os.Exit(1)
	}
}

const columns = `id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, qty INT NOT NULL, price DECIMAL(10,2) NOT NULL,
	at DATETIME(3) NOT NULL, note VARCHAR(100) NULL`

func run() error {
	ctx := context.Background()
	srv, err := mariadbtest.Start(mariadbtest.Options{})
	if err != nil {
		return err
	}
	defer srv.Stop()
	database, err := srv.NewDatabase(ctx, "bench")
	if err != nil {
		return err
	}
	n := *rows
	if err := srv.Exec(ctx, database, "CREATE TABLE src ("+columns+")",
		fmt.Sprintf(`INSERT INTO src SELECT seq, CONCAT('name-', seq), seq %% 1000, seq * 0.01, TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND,
			IF(seq %% 3 = 0, NULL, CONCAT('note number ', seq)) FROM seq_1_to_%d`, n), "ANALYZE TABLE src"); err != nil {
		return err
	}
	// Statements built client-side, as the connectors' (mycommon.Config):
	// no prepare round trip per multi-row INSERT.
	db, err := sql.Open("mysql", srv.DSN(database)+"?interpolateParams=true")
	if err != nil {
		return err
	}
	defer db.Close()
	b := &bench{srv: srv, database: database, db: db, n: n}
	defer func() {
		if b.input != nil {
			b.input.Close()
		}
	}()
	logf("table src has %d rows", n)
	src, err := b.paired("source", b.sourcePipeline, b.sourceConnector)
	if err != nil {
		return err
	}
	figure("mysql_source_rows_per_s", src[1])
	figure("mysql_source_vs_pipeline_ratio", src[1]/src[0])
	sink, err := b.paired("sink", b.sinkPipeline, b.sinkConnector)
	if err != nil {
		return err
	}
	figure("mysql_sink_rows_per_s", sink[1])
	figure("mysql_sink_vs_pipeline_ratio", sink[1]/sink[0])
	return nil
}

type bench struct {
	srv      *mariadbtest.Server
	database string
	db       *sql.DB
	n        int
	runs     int
	input    *kfake.Cluster // the sinks' input, filled once
	pending  [][]any        // sinkPipeline's statement arguments
}

// paired runs base then conn -tries times and returns the pair (rows/s)
// whose ratio is the median.
func (b *bench) paired(what string, base, conn func(context.Context) (float64, error)) ([2]float64, error) {
	var all [][2]float64
	for i := 0; i < max(*tries, 1); i++ {
		r0, err := base(context.Background())
		if err != nil {
			return [2]float64{}, fmt.Errorf("%s pipeline: %w", what, err)
		}
		stop, err := startProfile(what)
		if err != nil {
			return [2]float64{}, err
		}
		r1, err := conn(context.Background())
		stop()
		if err != nil {
			return [2]float64{}, fmt.Errorf("%s connector: %w", what, err)
		}
		logf("%s try %d: hand-written %.0f rows/s, connector %.0f rows/s, ratio %.2f", what, i+1, r0, r1, r1/r0)
		all = append(all, [2]float64{r0, r1})
	}
	sort.Slice(all, func(i, j int) bool { return all[i][1]/all[i][0] < all[j][1]/all[j][0] })
	return all[len(all)/2], nil
}

// profiled is the CPU profile of -cpuprofile, written across the runs.
var profiled *os.File

// startProfile resumes the CPU profile for a run of the connector what
// (when -cpuprofile names a file and -profile names what).
func startProfile(what string) (stop func(), err error) {
	if *cpuprofile == "" || *profile != what {
		return func() {}, nil
	}
	if profiled == nil {
		if profiled, err = os.Create(*cpuprofile); err != nil {
			return nil, err
		}
	}
	// One profile per file: the last run's (pprof cannot resume one).
	if _, err := profiled.Seek(0, 0); err != nil {
		return nil, err
	}
	if err := profiled.Truncate(0); err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(profiled); err != nil {
		return nil, err
	}
	return pprof.StopCPUProfile, nil
}

func rate(n int, start time.Time) float64 { return float64(n) / time.Since(start).Seconds() }
