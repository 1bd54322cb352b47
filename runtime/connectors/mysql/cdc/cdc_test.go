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

package cdc

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/mariadbtest"
)

var srv *mariadbtest.Server

func TestMain(m *testing.M) { os.Exit(mariadbtest.Run(m, &srv)) }

type env struct {
	t        *testing.T
	database string
	opts     []kgo.Opt
	offsets  *store.OffsetStore
	config   map[string]string
	statuses chan string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, database: srv.CreateDatabase(t), statuses: make(chan string, 100)}
	_, e.opts = kafkatest.Cluster(t, kfake.AllowAutoTopicCreation())
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if e.offsets, err = store.OpenOffsetStore(ctx, kafkatest.Opener(e.opts), kafkalog.Topic{Name: "connect-offsets"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.offsets.Close)
	e.config = map[string]string{
		"name": "mycdc", "connector.class": "MySqlCDCSource",
		"connection.url": "jdbc:" + srv.URL(e.database), KeyTopicPrefix: "my.",
		KeyPollIntervalMs: "100", KeyBatchSize: "300",
	}
	return e
}

var jsonWithoutSchemas = map[string]string{
	"key.converter": converter.JSONClass, "key.converter.schemas.enable": "false", "key.converter.decimal.format": "NUMERIC",
	"value.converter": converter.JSONClass, "value.converter.schemas.enable": "false", "value.converter.decimal.format": "NUMERIC",
}

func (e *env) run() task.Runner {
	e.t.Helper()
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	r, err := task.New(task.Spec{
		Common: task.Common{
			ID: task.ID{Connector: "mycdc", Task: 0}, Config: e.config,
			Kafka: e.opts,
			Status: task.StatusFunc(func(_ task.ID, st task.State, msg string) {
				select {
				case e.statuses <- fmt.Sprintf("%s: %s", st, msg):
				default:
				}
			}),
			Logger:              log,
			OffsetFlushInterval: 100 * time.Millisecond,
			RetryBackoff:        50 * time.Millisecond,
		},
		Plugin: Plugin(), Connector: e.config, WorkerConverters: jsonWithoutSchemas,
		Offsets: store.TaskOffsets{Store: e.offsets},
	})
	return tasktest.StartMayFail(e.t, r, err)
}

func (e *env) stop(r task.Runner) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tasktest.StopTimeout)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		e.t.Errorf("stopping the runner: %v", err)
	}
}

// event is a consumed change record, or a tombstone (no value).
type event struct {
	Key       map[string]any
	Tombstone bool
	Op        string         `json:"op"`
	Before    map[string]any `json:"before"`
	After     map[string]any `json:"after"`
	Source    map[string]any `json:"source"`
}

func (ev event) id() int64 {
	row := ev.After
	if row == nil {
		row = ev.Before
	}
	if ev.Tombstone {
		row = ev.Key
	}
	n, _ := row["id"].(float64)
	return int64(n)
}

// consumer reads a topic from the start, keeping what it read.
type consumer struct {
	t   *testing.T
	cl  *kgo.Client
	evs []event
}

func (e *env) consumer(topic string) *consumer {
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.opts...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return &consumer{t: e.t, cl: cl}
}

// until reads until cond holds for what was read (20 s at most).
func (c *consumer) until(what string, cond func([]event) bool) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond(c.evs) {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within 20s; read %d records", what, len(c.evs))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := c.cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			var ev event
			if r.Value == nil {
				ev.Tombstone = true
			} else if err := json.Unmarshal(r.Value, &ev); err != nil {
				c.t.Fatalf("record value %s: %v", r.Value, err)
			}
			if len(r.Key) > 0 && string(r.Key) != "null" {
				if err := json.Unmarshal(r.Key, &ev.Key); err != nil {
					c.t.Fatalf("record key %s: %v", r.Key, err)
				}
			}
			c.evs = append(c.evs, ev)
		})
	}
}

// count of events with the op (or "tombstone").
func count(evs []event, op string) int {
	n := 0
	for _, ev := range evs {
		if ev.Op == op && !ev.Tombstone || op == "tombstone" && ev.Tombstone {
			n++
		}
	}
	return n
}

// The snapshot of 3000 rows while 500 more are inserted one transaction
// at a time, then the stream of updates and deletes, a graceful restart
// from the stored offsets with changes made while the task was away
// (inserts, ALTER TABLE ADD COLUMN, inserts with the new column), and the
// check that every change came once and in commit order per key.
func TestSnapshotStreamRestartAlter(t *testing.T) {
	e := newEnv(t)
	const snapRows, concurrent = 3000, 500
	srv.ExecT(t, e.database,
		"CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL, name VARCHAR(40), price DECIMAL(10,2), kind ENUM('Small','Big'), big BIGINT UNSIGNED, at DATETIME(6))",
		fmt.Sprintf("INSERT INTO items SELECT seq, 0, CONCAT('n', seq), seq / 100, IF(seq %% 2 = 0, 'Big', 'Small'), 18446744073709551615 - seq, '2026-01-02 03:04:05.123456' FROM seq_1_to_%d", snapRows),
		"CREATE TABLE other (id INT PRIMARY KEY)") // not listed: never captured
	e.config[KeyTableIncludeList] = "items"
	c := e.consumer("my." + e.database + ".items")

	r1 := e.run()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writes while the snapshot runs
		defer wg.Done()
		for i := snapRows + 1; i <= snapRows+concurrent; i++ {
			if err := srv.Exec(context.Background(), e.database, fmt.Sprintf("INSERT INTO items (id, v, name) VALUES (%d, 0, 'late')", i), fmt.Sprintf("INSERT INTO other VALUES (%d)", i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	c.until("snapshot and concurrent inserts", func(evs []event) bool { return len(evs) >= snapRows+concurrent })
	if n := count(c.evs, "r"); n < snapRows {
		t.Fatalf("%d snapshot rows, want at least %d", n, snapRows)
	}
	t.Logf("snapshot: %d rows read (op r), %d concurrent inserts streamed (op c)", count(c.evs, "r"), count(c.evs, "c"))

	srv.ExecT(t, e.database,
		"UPDATE items SET v = v + 1 WHERE id <= 100",
		"DELETE FROM items WHERE id > 100 AND id <= 150",
		"UPDATE items SET v = v + 1 WHERE id <= 10")
	c.until("updates and deletes", func(evs []event) bool { return count(evs, "u") >= 110 && count(evs, "tombstone") >= 50 })
	e.stop(r1)

	// While the task is away: a multi-row transaction, a new column, rows
	// that use it, and changes after it.
	srv.ExecT(t, e.database,
		"START TRANSACTION",
		"INSERT INTO items (id, v) SELECT seq, 1 FROM seq_5001_to_5100",
		"UPDATE items SET v = 9 WHERE id = 1",
		"COMMIT",
		"ALTER TABLE items ADD COLUMN extra VARCHAR(20) DEFAULT 'dflt'",
		"INSERT INTO items (id, v, extra) VALUES (6001, 2, 'new')",
		"UPDATE items SET extra = 'changed' WHERE id = 2")
	r2 := e.run()
	defer e.stop(r2)
	c.until("changes made while the task was away", func(evs []event) bool {
		for _, ev := range evs {
			if ev.After != nil && ev.After["id"] == float64(2) && ev.After["extra"] == "changed" {
				return true
			}
		}
		return false
	})
	// Live, after the restart.
	srv.ExecT(t, e.database, "DELETE FROM items WHERE id = 6001", "UPDATE items SET id = 7001 WHERE id = 3")
	c.until("a live delete and key change after the restart", func(evs []event) bool {
		return count(evs, "d") >= 52 && slices.ContainsFunc(evs, func(ev event) bool { return ev.After != nil && ev.After["id"] == float64(7001) })
	})
	time.Sleep(300 * time.Millisecond) // catch duplicates that would follow

	// Every change once, in order per key.
	byID := map[int64][]event{}
	for _, ev := range c.evs {
		byID[ev.id()] = append(byID[ev.id()], ev)
	}
	ops := func(evs []event) string {
		var s []string
		for _, ev := range evs {
			if ev.Tombstone {
				s = append(s, "tombstone")
			} else {
				s = append(s, ev.Op)
			}
		}
		return strings.Join(s, ",")
	}
	want := func(id int64) string {
		switch {
		case id == 1:
			return "r,u,u,u"
		case id == 2:
			return "r,u,u,u"
		case id == 3: // its key changed to 7001: a delete and a create
			return "r,u,u,d,tombstone"
		case id == 7001:
			return "c"
		case id <= 10:
			return "r,u,u"
		case id <= 100:
			return "r,u"
		case id <= 150:
			return "r,d,tombstone"
		case id <= snapRows:
			return "r"
		case id <= snapRows+concurrent:
			return "" // r or c: checked below
		case id >= 5001 && id <= 5100:
			return "c"
		case id == 6001:
			return "c,d,tombstone"
		}
		return "?"
	}
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var bad []string
	for _, id := range ids {
		got, w := ops(byID[id]), want(id)
		if w == "" && (got == "r" || got == "c") {
			continue
		}
		if got != w {
			bad = append(bad, fmt.Sprintf("id %d: %s, want %s", id, got, w))
		}
	}
	if n := len(ids); n != snapRows+concurrent+100+2 {
		bad = append(bad, fmt.Sprintf("%d ids, want %d", n, snapRows+concurrent+102))
	}
	if len(bad) > 0 {
		t.Fatalf("%d problems (%d records):\n%s", len(bad), len(c.evs), strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
	// Values: the snapshot's and the stream's decoding agree.
	first := byID[2][0]
	if first.After["name"] != "n2" || first.After["price"] != 0.02 || first.After["kind"] != "Big" || first.After["big"] != 18446744073709551613.0 || first.Source["snapshot"] != "true" {
		t.Errorf("snapshot row 2: %v source %v", first.After, first.Source)
	}
	upd := byID[2][1]
	if upd.Before["kind"] != "Big" || upd.After["big"] != 18446744073709551613.0 || upd.After["price"] != 0.02 || upd.Source["gtid"] == nil || upd.Source["snapshot"] != "false" {
		t.Errorf("streamed update of row 2: before %v after %v source %v", upd.Before, upd.After, upd.Source)
	}
	// ALTER TABLE: records of changes before it have no extra column,
	// those after it do.
	if _, ok := byID[5001][0].After["extra"]; ok {
		t.Errorf("insert before the ALTER has column extra: %v", byID[5001][0].After)
	}
	if got := byID[6001][0].After["extra"]; got != "new" {
		t.Errorf("insert after the ALTER: extra = %v, want new", got)
	}
	t.Logf("%d records, 0 duplicates, 0 missing", len(c.evs))
}

// A stored position whose binlog the server no longer has fails the task
// with an error that says what to do.
func TestPurgedBinlog(t *testing.T) {
	e := newEnv(t)
	srv.ExecT(t, e.database, "CREATE TABLE p (id INT PRIMARY KEY)", "INSERT INTO p VALUES (1)")
	e.config[KeyTableIncludeList] = "p"
	c := e.consumer("my." + e.database + ".p")
	r := e.run()
	c.until("the snapshot", func(evs []event) bool { return len(evs) >= 1 })
	srv.ExecT(t, e.database, "INSERT INTO p VALUES (2)")
	c.until("a streamed insert", func(evs []event) bool { return len(evs) >= 2 })
	e.stop(r)

	srv.ExecT(t, e.database, "INSERT INTO p VALUES (3)", "FLUSH BINARY LOGS")
	var file string
	ctx := context.Background()
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin_basename").Scan(&file); err != nil {
		t.Fatal(err)
	}
	var cur string
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	vals[0] = &cur
	if !rows.Next() {
		t.Fatal("no master status")
	}
	if err := rows.Scan(vals...); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	// The server keeps a binlog that a replica (the stopped task's dump
	// thread, until the server notices it left) still reads: purge until
	// the current binlog is the first.
	err = testkit.Until(ctx, 10*time.Second, "binlogs before "+cur+" purged", func(ctx context.Context) (bool, error) {
		if _, err := db.ExecContext(ctx, "PURGE BINARY LOGS TO '"+cur+"'"); err != nil {
			return false, err
		}
		var first string
		var size any
		if err := db.QueryRowContext(ctx, "SHOW BINARY LOGS").Scan(&first, &size); err != nil {
			return false, err
		}
		return first == cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	r2 := e.run()
	defer func() { _ = r2.Stop(context.Background()) }()
	err = testkit.Until(ctx, 15*time.Second, "the task fails", func(context.Context) (bool, error) { return r2.Err() != nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	msg := r2.Err().Error()
	for _, wantText := range []string{"no longer has the binlog", "reset its offsets", "new snapshot"} {
		if !strings.Contains(msg, wantText) {
			t.Errorf("error %q lacks %q", msg, wantText)
		}
	}
	if strings.Contains(msg, srv.Password) {
		t.Errorf("error shows the password")
	}
	t.Logf("task error: %s", msg)
}

// pollUntil polls a task until it handed out n records (10 s at most).
func pollUntil(t *testing.T, tk *Task, n int) []*plugin.SourceRecord {
	t.Helper()
	var out []*plugin.SourceRecord
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("polled %d of %d records within 10s", len(out), n)
		}
		recs, err := tk.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

// A task restarted from the offset of a record in the middle of a
// transaction resumes right after that record: the rest of the
// transaction once, nothing of it twice.
func TestRestartMidTransaction(t *testing.T) {
	e := newEnv(t)
	srv.ExecT(t, e.database, "CREATE TABLE m (id INT PRIMARY KEY, v INT)")
	e.config[KeyTableIncludeList] = "m"
	e.config[KeySnapshotMode] = SnapshotNever
	e.config[KeyPollIntervalMs] = "50"
	ctx := context.Background()
	store := plugintest.NewOffsetStore()
	start := func() *Task {
		tk := &Task{}
		if err := tk.Start(ctx, &plugintest.SourceTaskContext{Store: store}, e.config); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	t1 := start()
	if recs, err := t1.Poll(ctx); err != nil || len(recs) != 0 { // connects and reads the current position
		t.Fatal(recs, err)
	}
	srv.ExecT(t, e.database, "INSERT INTO m SELECT seq, seq FROM seq_1_to_100")
	recs := pollUntil(t, t1, 100)
	_ = t1.Stop()
	mid := recs[39]
	if err := store.Put(mid.SourcePartition, mid.SourceOffset); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarting from %v", mid.SourceOffset)

	srv.ExecT(t, e.database, "INSERT INTO m VALUES (101, 101)")
	t2 := start()
	defer t2.Stop()
	recs = pollUntil(t, t2, 61)
	recs = append(recs, pollExtra(t, t2)...)
	var ids []string
	for _, r := range recs {
		after := r.Value.(*data.Struct).Get("after").(*data.Struct)
		ids = append(ids, fmt.Sprint(after.Get("id")))
	}
	var want []string
	for i := 41; i <= 101; i++ {
		want = append(want, fmt.Sprint(i))
	}
	if got := strings.Join(ids, ","); got != strings.Join(want, ",") {
		t.Fatalf("after the restart: ids %s\nwant %s", got, strings.Join(want, ","))
	}
}

// pollExtra polls a few more times to catch records beyond those expected.
func pollExtra(t *testing.T, tk *Task) []*plugin.SourceRecord {
	t.Helper()
	var out []*plugin.SourceRecord
	for range 3 {
		recs, err := tk.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

// A task that stopped in the middle of the snapshot (its stored offset
// says snapshot: running) takes the snapshot again from the start, then
// streams: every row at least once; the duplicates are the snapshot rows
// delivered before the restart, and no more.
func TestRestartMidSnapshot(t *testing.T) {
	e := newEnv(t)
	const rows, before = 2000, 900
	srv.ExecT(t, e.database, "CREATE TABLE s (id INT PRIMARY KEY, v INT)", fmt.Sprintf("INSERT INTO s SELECT seq, seq FROM seq_1_to_%d", rows))
	e.config[KeyTableIncludeList] = "s"
	ctx := context.Background()
	store := plugintest.NewOffsetStore()
	start := func() *Task {
		tk := &Task{}
		if err := tk.Start(ctx, &plugintest.SourceTaskContext{Store: store}, e.config); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	ids := func(recs []*plugin.SourceRecord) map[int32]int {
		m := map[int32]int{}
		for _, r := range recs {
			if v, ok := r.Value.(*data.Struct); ok {
				m[v.Get("after").(*data.Struct).Get("id").(int32)]++
			}
		}
		return m
	}
	t1 := start()
	first := pollUntil(t, t1, before)[:before]
	_ = t1.Stop()
	last := first[before-1]
	if last.SourceOffset[OffsetSnapshot] != snapshotRunning {
		t.Fatalf("offset of snapshot row %d: %v, want snapshot running", before, last.SourceOffset)
	}
	if err := store.Put(last.SourcePartition, last.SourceOffset); err != nil {
		t.Fatal(err)
	}
	srv.ExecT(t, e.database, "INSERT INTO s SELECT seq, 0 FROM seq_2001_to_2100") // while the task is away

	t2 := start()
	defer t2.Stop()
	second := pollUntil(t, t2, rows+100)
	srv.ExecT(t, e.database, "INSERT INTO s SELECT seq, 0 FROM seq_2101_to_2150") // streamed
	second = append(second, pollUntil(t, t2, 50)...)
	second = append(second, pollExtra(t, t2)...)
	got := ids(second)
	for id := int32(1); id <= 2150; id++ {
		if got[id] != 1 {
			t.Fatalf("after the restart: row %d %d times, want once", id, got[id])
		}
	}
	if len(got) != 2150 {
		t.Fatalf("after the restart: %d rows, want 2150", len(got))
	}
	dups := 0
	for id := range ids(first) {
		dups += got[id]
	}
	t.Logf("restart mid-snapshot: %d duplicates (bound: the %d snapshot rows delivered before the restart), 0 missing", dups, before)
	if dups > before {
		t.Fatalf("%d duplicates exceed the bound %d", dups, before)
	}
}
