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
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/mariadbtest"
)

// The issue asks for 100k rows and 20k writes; CI runs 60k rows and 3k writes
// (the same kills, the same checks), and the full figure is run by hand:
//
//	go test ./test/cluster -run TestMySqlCDCSnapshotAndStreamAcrossSIGKILLs -v -args -mysqlcdc.rows=100000 -mysqlcdc.writes=20000
var (
	cdcRows   = flag.Int("mysqlcdc.rows", 60_000, "rows in the MySQL CDC test's tables before the connector starts")
	cdcWrites = flag.Int("mysqlcdc.writes", 3_000, "inserts and updates the MySQL CDC test commits while the connector runs")
	cdcRate   = flag.Int("mysqlcdc.rate", 300, "the MySQL CDC test's writes per second")
)

// cdcTables are the captured tables; each gets half of the rows.
var cdcTables = []string{"alpha", "beta"}

// cdcWrite is one committed change of the writer: seq is its commit order
// (one writer) and the value it wrote into
// the row's seq column.
type cdcWrite struct {
	seq   int
	table string
	id    int
	op    string // "c" or "u"
}

// TestMySqlCDCSnapshotAndStreamAcrossSIGKILLs runs the MySQL CDC source on a
// conveyor-worker process against a real MariaDB: two tables of
// -mysqlcdc.rows rows in all, a writer committing -mysqlcdc.writes inserts
// and updates (a transaction every 10ms) from before the connector
// starts to after the stream resumed, the worker SIGKILLed once while the
// snapshot is being read and once while the binlog is being streamed (each
// time started again at once, as a kubelet restarts a container). Read back
// from Kafka (one partition per table):
//   - the last snapshot holds every row once, exactly as the writer's first
//     S commits left the tables (S: the highest seq in it), so it is one
//     consistent cut;
//   - the streamed changes are exactly the commits after S, none before
//     (no overlap) and none missing (no gap), each first seen in commit order
//     per table; a replayed change is one seen before;
//   - the duplicates: the interrupted snapshot's rows (a snapshot starts
//     again from the beginning) and the changes replayed after the stream's
//     kill, printed beside their bounds (the rows a snapshot holds; the
//     changes produced in one offset flush interval plus 1s at the stream's
//     fastest observed rate).
func TestMySqlCDCSnapshotAndStreamAcrossSIGKILLs(t *testing.T) {
	db, err := mariadbtest.Start(mariadbtest.Options{})
	if err != nil {
		t.Fatalf("starting MariaDB: %v", err)
	}
	t.Cleanup(func() { _ = db.Stop() })
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	started := time.Now()

	rows, writes := *cdcRows, *cdcWrites
	database, err := db.NewDatabase(ctx, "cdc")
	if err != nil {
		t.Fatal(err)
	}
	per := rows / len(cdcTables)
	for _, tb := range cdcTables {
		// seq_1_to_N is MariaDB's sequence engine: the rows in one statement.
		db.ExecT(t, database,
			"CREATE TABLE "+tb+" (id INT PRIMARY KEY, seq INT NOT NULL, v INT NOT NULL, pad VARCHAR(64) NOT NULL)",
			fmt.Sprintf("INSERT INTO %s SELECT seq, 0, 0, REPEAT('x', 64) FROM seq_1_to_%d", tb, per))
	}

	// Offsets stored every 50ms: the first kill waits for one stored
	// during the snapshot, which lasts about a second here (60k rows; at
	// 300k rows/s it would still last 200ms).
	e := newEnv(t, harness.Options{OffsetFlushInterval: 50 * time.Millisecond})
	topics := make([]string, len(cdcTables))
	for i, tb := range cdcTables {
		topics[i] = "my." + database + "." + tb
	}
	if _, err := e.broker.Admin.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
	rd := startCDCReader(t, e.broker.Addr, "connect-offsets", topics...)
	e.start(ctx, "w1")

	wr := startCDCWriter(t, db.DSN(database), per, writes, *cdcRate)
	conn := "mycdc"
	cfg := map[string]string{
		"connector.class": "MySqlCDCSource", "tasks.max": "1",
		"connection.url": "jdbc:" + db.URL(database), "topic.prefix": "my.",
		"table.include.list": strings.Join(cdcTables, ","), "tombstones.on.delete": "false",
		"batch.size": "500", "poll.interval.ms": "100",
		"key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
	}
	if err := e.c.Worker("w1").REST.PutConnector(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}

	// Kill 1: once the snapshot's first rows are in Kafka and the worker
	// stored an offset of the unfinished snapshot (so the restart must
	// see it is one).
	w1 := e.c.Worker("w1")
	until(t, ctx, time.Minute, "an offset of the unfinished snapshot stored", func() bool { return rd.snapshotOffsets() >= 1 })
	if err := w1.Kill(); err != nil {
		t.Fatal(err)
	}
	killedSnapshotAt := rd.snapshotRecords()
	t.Logf("SIGKILL mid-snapshot: %d snapshot rows in Kafka, %d of %d writes committed", killedSnapshotAt, wr.committed(), writes)
	if lines := harness.Tail(w1.LogPath, 1<<20); !strings.Contains(lines, "taking the snapshot") || strings.Contains(lines, "snapshot finished") {
		t.Fatalf("the first kill did not land mid-snapshot (the snapshot had not started or had finished): raise -mysqlcdc.rows\n%s", harness.Tail(w1.LogPath, 3000))
	}
	e.start(ctx, "w1")

	// Kill 2: once the stream after the second snapshot delivered changes
	// for a while (the writer still writing).
	until(t, ctx, time.Minute, "streamed changes in Kafka", func() bool { return rd.streamRecords() >= 1 })
	mark := rd.streamRecords()
	until(t, ctx, time.Minute, "more streamed changes", func() bool { return rd.streamRecords() >= mark+*cdcRate/2 })
	if wr.committed() >= writes {
		t.Fatalf("the writer finished before the mid-stream kill: raise -mysqlcdc.writes or lower -mysqlcdc.rate")
	}
	w1 = e.c.Worker("w1")
	if err := w1.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL mid-stream: %d streamed changes in Kafka, %d of %d writes committed", rd.streamRecords(), wr.committed(), writes)
	e.start(ctx, "w1")

	if err := wr.wait(); err != nil {
		t.Fatal(err)
	}
	log := wr.log()
	until(t, ctx, 2*time.Minute, "the last write in Kafka", func() bool { return rd.seen(log[len(log)-1].seq) })

	res := checkCDC(t, rd.records(), log, per)
	window := e.c.Options().OffsetFlushInterval + time.Second
	streamBound := int(rd.peakStreamRate() * window.Seconds())
	snapshotBound := rows + writes
	fmt.Printf("conveyor-chaos: mysql_cdc_rows=%d\n", rows)
	fmt.Printf("conveyor-chaos: mysql_cdc_writes=%d\n", writes)
	fmt.Printf("conveyor-chaos: mysql_cdc_kills=2\n")
	fmt.Printf("conveyor-chaos: mysql_cdc_snapshot_at=%d\n", res.cut)
	fmt.Printf("conveyor-chaos: mysql_cdc_missing=%d\n", res.missing)
	fmt.Printf("conveyor-chaos: mysql_cdc_out_of_order=%d\n", res.outOfOrder)
	fmt.Printf("conveyor-chaos: mysql_cdc_snapshot_duplicates=%d\n", res.snapshotDupes)
	fmt.Printf("conveyor-chaos: mysql_cdc_snapshot_duplicate_bound=%d\n", snapshotBound)
	fmt.Printf("conveyor-chaos: mysql_cdc_stream_duplicates=%d\n", res.streamDupes)
	fmt.Printf("conveyor-chaos: mysql_cdc_stream_duplicate_bound=%d\n", streamBound)
	fmt.Printf("conveyor-chaos: mysql_cdc_s=%.1f\n", time.Since(started).Seconds())
	if res.snapshotDupes > snapshotBound {
		t.Errorf("%d snapshot rows delivered twice, more than a snapshot holds (%d)", res.snapshotDupes, snapshotBound)
	}
	if res.streamDupes > streamBound {
		t.Errorf("%d streamed changes delivered twice, more than %s of the stream's fastest rate (%d)", res.streamDupes, window, streamBound)
	}
}

func until(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := testkit.Until(ctx, timeout, what, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatal(err)
	}
}

// cdcWriter commits the writes, paced, on one connection.
type cdcWriter struct {
	mu   sync.Mutex
	done []cdcWrite
	err  error
	end  chan struct{}
}

func startCDCWriter(t *testing.T, dsn string, per, writes, perSecond int) *cdcWriter {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	w := &cdcWriter{end: make(chan struct{})}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); <-w.end; db.Close() })
	go func() {
		defer close(w.end)
		rng := rand.New(rand.NewPCG(1, 27))
		next := map[string]int{}
		for _, tb := range cdcTables {
			next[tb] = per + 1
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		// Each tick commits one transaction of batch writes: seq is the
		// commit order all the same (one writer).
		batch := max(1, perSecond/100)
		for seq := 1; seq <= writes; {
			select {
			case <-stop:
				return
			case <-tick.C: // the pace
			}
			tx, err := db.Begin()
			var done []cdcWrite
			for ; err == nil && len(done) < batch && seq <= writes; seq++ {
				wr := cdcWrite{seq: seq, table: cdcTables[rng.IntN(len(cdcTables))]}
				var q string
				if rng.IntN(2) == 0 {
					wr.op, wr.id = "c", next[wr.table]
					next[wr.table]++
					q = fmt.Sprintf("INSERT INTO %s VALUES (%d, %d, 0, REPEAT('y', 64))", wr.table, wr.id, seq)
				} else {
					wr.op, wr.id = "u", 1+rng.IntN(next[wr.table]-1)
					q = fmt.Sprintf("UPDATE %s SET seq = %d, v = v + 1 WHERE id = %d", wr.table, seq, wr.id)
				}
				if _, err = tx.Exec(q); err != nil {
					err = fmt.Errorf("write %d: %s: %w", seq, q, err)
				}
				done = append(done, wr)
			}
			if err == nil {
				err = tx.Commit()
			}
			if err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			w.mu.Lock()
			w.done = append(w.done, done...)
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *cdcWriter) committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.done)
}

func (w *cdcWriter) wait() error {
	<-w.end
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *cdcWriter) log() []cdcWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.done)
}

// cdcRecord is one change read back from Kafka.
type cdcRecord struct {
	table    string
	op       string
	id, seq  int
	v        int
	snapshot string // the snapshot's binlog position, for op r
}

// cdcReader consumes the tables' topics from the start and keeps every
// record in order.
type cdcReader struct {
	mu     sync.Mutex
	recs   []cdcRecord
	snap   int
	stream int
	// snapOffsets counts offsets stored while a snapshot was unfinished.
	snapOffsets int
	seqs        map[int]bool
	samples     []sample
	err         error
	cancel      context.CancelFunc
	finished    chan struct{}
}

type sample struct {
	at     time.Time
	stream int
}

// startCDCReader reads the tables' topics and, from the offsets topic, the
// offsets stored while a snapshot was unfinished.
func startCDCReader(t *testing.T, addr, offsetsTopic string, topics ...string) *cdcReader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(append([]string{offsetsTopic}, topics...)...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &cdcReader{seqs: map[int]bool{}, cancel: cancel, finished: make(chan struct{})}
	t.Cleanup(func() { cancel(); <-r.finished; cl.Close() })
	go func() {
		defer close(r.finished)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(rec *kgo.Record) {
				if rec.Topic == offsetsTopic {
					if strings.Contains(string(rec.Value), `"snapshot":"running"`) {
						r.mu.Lock()
						r.snapOffsets++
						r.mu.Unlock()
					}
					return
				}
				c, err := decodeCDC(rec)
				r.mu.Lock()
				defer r.mu.Unlock()
				if err != nil {
					r.err = err
					return
				}
				r.recs = append(r.recs, c)
				if c.op == "r" {
					r.snap++
				} else {
					r.stream++
					r.seqs[c.seq] = true
				}
			})
			select {
			case <-tk.C:
				r.mu.Lock()
				r.samples = append(r.samples, sample{time.Now(), r.stream})
				r.mu.Unlock()
			default:
			}
		}
	}()
	return r
}

func decodeCDC(rec *kgo.Record) (cdcRecord, error) {
	var env struct {
		Op     string `json:"op"`
		After  *struct{ ID, Seq, V int }
		Source struct {
			Table string `json:"table"`
			File  string `json:"file"`
			Pos   int64  `json:"pos"`
		} `json:"source"`
	}
	if err := json.Unmarshal(rec.Value, &env); err != nil || env.After == nil {
		return cdcRecord{}, fmt.Errorf("record at %s/%d: not a change with an after image (%v): %s", rec.Topic, rec.Offset, err, rec.Value)
	}
	c := cdcRecord{table: env.Source.Table, op: env.Op, id: env.After.ID, seq: env.After.Seq, v: env.After.V}
	if c.op == "r" {
		c.snapshot = fmt.Sprintf("%s:%d", env.Source.File, env.Source.Pos)
	}
	return c, nil
}

func (r *cdcReader) snapshotRecords() int { r.mu.Lock(); defer r.mu.Unlock(); return r.snap }
func (r *cdcReader) snapshotOffsets() int { r.mu.Lock(); defer r.mu.Unlock(); return r.snapOffsets }
func (r *cdcReader) streamRecords() int   { r.mu.Lock(); defer r.mu.Unlock(); return r.stream }
func (r *cdcReader) seen(seq int) bool    { r.mu.Lock(); defer r.mu.Unlock(); return r.seqs[seq] }

func (r *cdcReader) records() []cdcRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// peakStreamRate is the fastest rate, in changes per second over 500ms,
// at which streamed changes arrived.
func (r *cdcReader) peakStreamRate() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	peak := 0.0
	for i, s := range r.samples {
		for j := i + 1; j < len(r.samples); j++ {
			if d := r.samples[j].at.Sub(s.at); d >= 500*time.Millisecond {
				peak = max(peak, float64(r.samples[j].stream-s.stream)/d.Seconds())
				break
			}
		}
	}
	return peak
}

type cdcResult struct {
	cut                        int // the last snapshot's seq
	missing, outOfOrder        int
	snapshotDupes, streamDupes int
}

// checkCDC checks what Kafka holds against the writer's log; rows per
// table were there before the writes (ids 1..per, seq 0, v 0).
func checkCDC(t *testing.T, recs []cdcRecord, log []cdcWrite, per int) cdcResult {
	t.Helper()
	var res cdcResult
	// The last snapshot: the op r records of the last binlog position
	// seen on one.
	last := ""
	for _, c := range recs {
		if c.op == "r" {
			last = c.snapshot
		}
	}
	type key struct {
		table string
		id    int
	}
	type state struct{ seq, v int }
	snap := map[key]state{}
	for _, c := range recs {
		if c.op != "r" {
			continue
		}
		if c.snapshot != last {
			res.snapshotDupes++
			continue
		}
		k := key{c.table, c.id}
		if _, dup := snap[k]; dup {
			t.Errorf("the last snapshot holds %s id %d twice", c.table, c.id)
		}
		snap[k] = state{c.seq, c.v}
		res.cut = max(res.cut, c.seq)
	}
	// The tables as the writer's first cut commits left them.
	want := map[key]state{}
	for _, tb := range cdcTables {
		for id := 1; id <= per; id++ {
			want[key{tb, id}] = state{}
		}
	}
	for _, w := range log[:res.cut] {
		k := key{w.table, w.id}
		want[k] = state{w.seq, want[k].v + b2i(w.op == "u")}
	}
	bad := 0
	for k, s := range want {
		if got, ok := snap[k]; !ok || got != s {
			if bad++; bad <= 5 {
				t.Errorf("the last snapshot (cut after write %d) has %s id %d as %+v (present %v), want %+v", res.cut, k.table, k.id, got, ok, s)
			}
		}
	}
	if len(snap) != len(want) {
		t.Errorf("the last snapshot holds %d rows, the tables held %d at its cut", len(snap), len(want))
	}

	// The stream, per table: first sightings in commit order, replays of
	// changes seen before, nothing at or before the cut.
	seen := map[int]bool{}
	lastSeq := map[string]int{}
	for _, c := range recs {
		if c.op == "r" {
			continue
		}
		if c.seq <= res.cut {
			t.Errorf("overlap: streamed change %d (%s %s id %d) is in the snapshot (cut after %d)", c.seq, c.op, c.table, c.id, res.cut)
			continue
		}
		w := log[c.seq-1]
		if w.table != c.table || w.id != c.id || w.op != c.op {
			t.Errorf("streamed change %d is %s %s id %d, the writer committed %s %s id %d", c.seq, c.op, c.table, c.id, w.op, w.table, w.id)
		}
		if seen[c.seq] {
			res.streamDupes++
			continue
		}
		seen[c.seq] = true
		if c.seq < lastSeq[c.table] {
			res.outOfOrder++
			if res.outOfOrder <= 5 {
				t.Errorf("table %s: change %d first seen after change %d", c.table, c.seq, lastSeq[c.table])
			}
		}
		lastSeq[c.table] = c.seq
	}
	for _, w := range log[res.cut:] {
		if !seen[w.seq] {
			if res.missing++; res.missing <= 5 {
				t.Errorf("gap: change %d (%s %s id %d) never streamed", w.seq, w.op, w.table, w.id)
			}
		}
	}
	return res
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
