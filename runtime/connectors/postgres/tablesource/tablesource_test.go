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

package tablesource

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg)) }

// threeTables creates big, mid and small tables (rows 3x, x, x/3 for
// x = n) with fresh planner statistics.
func threeTables(t testing.TB, url string, n int) map[string]int {
	sizes := map[string]int{"big": 3 * n, "mid": n, "small": n / 3}
	for name, rows := range sizes {
		pgtest.ExecURL(t, url,
			fmt.Sprintf(`CREATE TABLE %s (id bigserial PRIMARY KEY, payload text NOT NULL, note text)`, name),
			fmt.Sprintf(`INSERT INTO %s (payload, note) SELECT '%s-' || g, CASE WHEN g %% 2 = 0 THEN NULL ELSE 'odd' END FROM generate_series(1, %d) g`, name, name, rows),
			"ANALYZE "+name)
	}
	return sizes
}

func baseConfig(url string) map[string]string {
	return map[string]string{
		"name": "pg-source", "connector.class": "PostgresTableSource", pgcommon.KeyConnectionURL: url,
		KeyMode: ModeIncrementing, KeyIncrementingColumn: "id", KeyTopicPrefix: "pg.", KeyPollIntervalMs: "20",
	}
}

func with(cfg map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func taskTables(t *testing.T, cfg map[string]string) []string {
	t.Helper()
	var pairs [][2]string
	if err := json.Unmarshal([]byte(cfg[KeyTaskTables]), &pairs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pairs {
		out = append(out, p[0]+"."+p[1])
	}
	return out
}

func TestAssign(t *testing.T) {
	ti := func(name string, rows float64) TableInfo {
		return TableInfo{Table: pgcommon.Table{Schema: "s", Name: name}, Rows: rows}
	}
	names := func(gs [][]TableInfo) [][]string {
		var out [][]string
		for _, g := range gs {
			var n []string
			for _, x := range g {
				n = append(n, x.Table.Name)
			}
			out = append(out, n)
		}
		return out
	}
	cases := []struct {
		tables []TableInfo
		n      int
		want   [][]string
	}{
		{[]TableInfo{ti("small", 10), ti("big", 1000), ti("mid", 300)}, 2, [][]string{{"big"}, {"mid", "small"}}},
		{[]TableInfo{ti("a", 500), ti("b", 400), ti("c", 300), ti("d", 200), ti("e", 100)}, 2, [][]string{{"a", "d", "e"}, {"b", "c"}}},
		// Never analysed: no estimates, tables still spread one per task.
		{[]TableInfo{ti("x", 0), ti("y", 0), ti("z", 0)}, 3, [][]string{{"x"}, {"y"}, {"z"}}},
		{[]TableInfo{ti("x", 0), ti("y", 0)}, 5, [][]string{{"x"}, {"y"}}},
		{nil, 3, nil},
	}
	for _, c := range cases {
		if got := names(Assign(c.tables, c.n)); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("Assign(%v, %d) = %v, want %v", c.tables, c.n, got, c.want)
		}
	}
}

// Three tables of different sizes over tasks.max=2: two tasks, the largest
// table alone; the natural limit is the number of tables.
func TestTaskConfigsBalanceTablesByEstimatedRows(t *testing.T) {
	url := pg.CreateDatabase(t)
	threeTables(t, url, 3000)
	ctx := context.Background()
	p := Plugin()
	cfg := with(baseConfig(url), KeyTableWhitelist, "small, mid, public.big", KeyTablePollIntervalMs, "0")
	if res := plugin.ValidateConfig(ctx, p, cfg); res.ErrorCount != 0 {
		t.Fatalf("valid config refused: %v", res.Errors())
	}
	conn := p.NewConnector()
	if err := conn.Start(ctx, plugintest.NewConnectorContext(nil), cfg); err != nil {
		t.Fatal(err)
	}
	defer conn.Stop()
	cfgs, lim, err := plugin.PlanTasks(ctx, "pg-source", conn, 2)
	if err != nil {
		t.Fatal(err)
	}
	if lim.NaturalLimit != 3 || lim.EffectiveTasks != 2 || lim.Reason != plugin.TasksMax {
		t.Fatalf("limits %+v, want natural 3, effective 2 (tasks.max binds)", lim)
	}
	if len(cfgs) != 2 {
		t.Fatalf("%d task configs, want 2", len(cfgs))
	}
	got := [][]string{taskTables(t, cfgs[0]), taskTables(t, cfgs[1])}
	if !slices.Equal(got[0], []string{"public.big"}) || !slices.Equal(got[1], []string{"public.mid", "public.small"}) {
		t.Fatalf("task tables %v, want [public.big] alone and [public.mid public.small]", got)
	}
	t.Logf("task tables: %v", got)
	cfgs, lim, err = plugin.PlanTasks(ctx, "pg-source", conn, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 3 || lim.NaturalLimit != 3 || lim.EffectiveTasks != 3 || lim.Reason != plugin.Tables {
		t.Fatalf("tasks.max=5: %d configs, limits %+v; want 3 and reason Tables", len(cfgs), lim)
	}
	// table.pattern finds the same tables.
	pc := with(baseConfig(url), KeyTablePattern, "big|mid|sm.*", KeyTablePollIntervalMs, "0")
	c2 := p.NewConnector()
	if err := c2.Start(ctx, plugintest.NewConnectorContext(nil), pc); err != nil {
		t.Fatal(err)
	}
	defer c2.Stop()
	if n, r, err := c2.NaturalLimit(ctx); n != 3 || r != plugin.Tables || err != nil {
		t.Fatalf("pattern: natural limit %d %s %v", n, r, err)
	}
}

// A new table matching the pattern triggers a task reconfiguration.
func TestNewTableRequestsReconfiguration(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, "CREATE TABLE t1 (id bigint PRIMARY KEY)")
	ctx := context.Background()
	cc := plugintest.NewConnectorContext(nil)
	conn := Plugin().NewConnector()
	if err := conn.Start(ctx, cc, with(baseConfig(url), KeyTablePattern, "t[0-9]+", KeyTablePollIntervalMs, "50")); err != nil {
		t.Fatal(err)
	}
	defer conn.Stop()
	if n, _, err := conn.NaturalLimit(ctx); n != 1 || err != nil {
		t.Fatalf("natural limit %d, %v", n, err)
	}
	pgtest.ExecURL(t, url, "CREATE TABLE t2 (id bigint PRIMARY KEY)")
	select {
	case <-cc.Reconfigured():
	case <-time.After(10 * time.Second):
		t.Fatal("no reconfiguration request after a table appeared")
	}
}

func fieldErrors(res plugin.ValidationResult) map[string]string {
	out := map[string]string{}
	for _, fe := range res.Errors() {
		out[fe.Name] += fe.Message + "\n"
	}
	return out
}

// Validation names the field and the fix: bad URL, missing table, SELECT
// denied, missing or mistyped mode columns; the password never shows.
func TestValidate(t *testing.T) {
	url := pg.CreateDatabase(t)
	db := pgtest.DatabaseName(url)
	pgtest.ExecURL(t, url,
		"CREATE TABLE open (id bigint PRIMARY KEY, ts timestamp, label text)",
		"CREATE TABLE secret (id bigint PRIMARY KEY)",
		"DROP ROLE IF EXISTS reader_"+db, "CREATE ROLE reader_"+db+" LOGIN PASSWORD 'Reader-Pw-1'",
		"GRANT SELECT ON open TO reader_"+db)
	reader := pg.URLAs("reader_"+db, "Reader-Pw-1", db)
	p := Plugin()
	ctx := context.Background()
	cases := []struct {
		name   string
		cfg    map[string]string
		field  string
		substr string
	}{
		{"bad url", with(baseConfig("postgres://u:Reader-Pw-1@127.0.0.1:99999999/x"), KeyTableWhitelist, "open"), pgcommon.KeyConnectionURL, "invalid PostgreSQL URL"},
		{"wrong password", with(baseConfig(pg.URLAs("reader_"+db, "nope-Reader-Pw-1", db)), KeyTableWhitelist, "open"), pgcommon.KeyConnectionPassword, "refused the login"},
		{"missing table", with(baseConfig(url), KeyTableWhitelist, "open,nothere"), KeyTableWhitelist, "table nothere does not exist"},
		{"case matters", with(baseConfig(url), KeyTableWhitelist, `"Open"`), KeyTableWhitelist, "does not exist"},
		{"select denied", with(baseConfig(reader), KeyTableWhitelist, "open, secret"), KeyTableWhitelist, `lacks the SELECT privilege on table public.secret: GRANT SELECT ON "public"."secret" TO "reader_`},
		{"pattern select denied", with(baseConfig(reader), KeyTablePattern, "open|secret"), KeyTablePattern, "lacks the SELECT privilege on table public.secret"},
		{"missing incrementing column", with(baseConfig(url), KeyTableWhitelist, "open", KeyIncrementingColumn, "seq"), KeyIncrementingColumn, `table public.open has no column "seq"`},
		{"incrementing column not integer", with(baseConfig(url), KeyTableWhitelist, "open", KeyIncrementingColumn, "label"), KeyIncrementingColumn, "must be smallint, integer or bigint"},
		{"no incrementing column", with(baseConfig(url), KeyTableWhitelist, "open", KeyIncrementingColumn, ""), KeyIncrementingColumn, "needs incrementing.column.name"},
		{"timestamp column not timestamp", with(baseConfig(url), KeyTableWhitelist, "open", KeyMode, ModeTimestamp, KeyTimestampColumn, "label"), KeyTimestampColumn, "must be timestamp or timestamptz"},
		{"both lists", with(baseConfig(url), KeyTableWhitelist, "open", KeyTablePattern, "o.*"), KeyTablePattern, "mutually exclusive"},
		{"no tables", baseConfig(url), KeyTableWhitelist, "set table.whitelist"},
		{"bad mode", with(baseConfig(url), KeyTableWhitelist, "open", KeyMode, "sometimes"), KeyMode, "String must be one of"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := plugin.ValidateConfig(ctx, p, c.cfg)
			errs := fieldErrors(res)
			if !strings.Contains(errs[c.field], c.substr) {
				t.Fatalf("want an error on %s containing %q; got %v", c.field, c.substr, errs)
			}
			for f, m := range errs {
				if strings.Contains(m, "Reader-Pw-1") || strings.Contains(m, pg.Password) {
					t.Fatalf("error on %s shows a password: %s", f, m)
				}
			}
		})
	}
	ok := with(baseConfig(reader), KeyTableWhitelist, "open", KeyMode, ModeTimestampIncrementing, KeyTimestampColumn, "ts")
	if res := plugin.ValidateConfig(ctx, p, ok); res.ErrorCount != 0 {
		t.Fatalf("valid config refused: %v", res.Errors())
	}
}

// startTask starts a task over the given config and store.
func startTask(t *testing.T, cfg map[string]string, store *plugintest.OffsetStore) *Task {
	t.Helper()
	task := &Task{}
	if err := task.Start(context.Background(), &plugintest.SourceTaskContext{Store: store}, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

func ids(t *testing.T, recs []*plugin.SourceRecord) []int64 {
	t.Helper()
	var out []int64
	for _, r := range recs {
		n, err := plugin.OffsetInt64(r.Value.(*data.Struct).Get("id"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// Incrementing mode: every row once, in order, NULLs kept, the key is the
// primary key; new rows follow; a restarted task resumes after the stored
// offset.
func TestIncrementingModeResumes(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL, price numeric(8,2), seen timestamptz)`,
		`INSERT INTO items (name, price, seen) SELECT 'item-' || g, CASE WHEN g % 3 = 0 THEN NULL ELSE g * 1.25 END, '2024-01-01T00:00:00Z'::timestamptz + g * interval '1 minute' FROM generate_series(1, 10) g`)
	cfg := with(baseConfig(url), KeyTableWhitelist, "items", KeyBatchMaxRows, "3")
	store := plugintest.NewOffsetStore()
	task := startTask(t, cfg, store)
	ctx := context.Background()
	recs, err := plugintest.Drain(ctx, task, store, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, recs); !slices.Equal(got, seq(1, 10)) {
		t.Fatalf("ids %v", got)
	}
	r := recs[2]
	if r.Topic != "pg.items" || r.Value.(*data.Struct).Get("price") != nil || r.SourcePartition[PartitionTable] != "public.items" {
		t.Fatalf("record 3: topic %s value %v partition %v", r.Topic, r.Value, r.SourcePartition)
	}
	if k := r.Key.(*data.Struct); k.Get("id") != int64(3) || r.KeySchema.Fields[0].Name != "id" {
		t.Fatalf("key %v", r.Key)
	}
	if err := r.ValueSchema.Validate(r.Value); err != nil {
		t.Fatal(err)
	}
	if p := recs[0].Value.(*data.Struct).Get("price").(data.Decimal); p.String() != "1.25" {
		t.Fatalf("price %s", p)
	}
	pgtest.ExecURL(t, url, `INSERT INTO items (name) SELECT 'more-' || g FROM generate_series(1, 5) g`)
	recs, err = plugintest.Drain(ctx, task, store, 5, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, recs); !slices.Equal(got, seq(11, 15)) {
		t.Fatalf("new rows %v", got)
	}
	// Restart: the stored offset says 15.
	task.Stop()
	pgtest.ExecURL(t, url, `INSERT INTO items (name) VALUES ('after-restart')`)
	task = startTask(t, cfg, store)
	recs, err = plugintest.Drain(ctx, task, store, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, recs); !slices.Equal(got, []int64{16}) {
		t.Fatalf("after restart %v, want [16]", got)
	}
}

// In incrementing mode the offsets advance per batch: the records before a
// batch's last carry the position before the batch. Whichever record's
// offset was stored last, a restarted task loses nothing and re-sends at
// most the rows of that record's batch.
func TestIncrementingOffsetsAdvancePerBatch(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL)`,
		`INSERT INTO items SELECT g, 'item-' || g FROM generate_series(1, 13) g`)
	cfg := with(baseConfig(url), KeyTableWhitelist, "items", KeyBatchMaxRows, "5") // batches 1-5, 6-10, 11-13
	ctx := context.Background()
	for _, tc := range []struct {
		stored    int   // index (0-12) of the record whose offset is stored
		wantFirst int64 // the first id after a restart (0: none, all were sent)
	}{{0, 1}, {2, 1}, {4, 6}, {5, 6}, {8, 6}, {9, 11}, {11, 11}, {12, 0}} {
		store := plugintest.NewOffsetStore()
		task := startTask(t, cfg, store)
		var recs []*plugin.SourceRecord
		for len(recs) < 13 {
			batch, err := task.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, batch...)
		}
		task.Stop()
		if got := ids(t, recs); !slices.Equal(got, seq(1, 13)) {
			t.Fatalf("ids %v", got)
		}
		r := recs[tc.stored]
		if err := store.Put(r.SourcePartition, r.SourceOffset); err != nil {
			t.Fatal(err)
		}
		task = startTask(t, cfg, store)
		batch, err := plugintest.Drain(ctx, task, store, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		task.Stop()
		got := ids(t, batch)
		if (tc.wantFirst == 0 && len(got) > 0) || (tc.wantFirst != 0 && (len(got) == 0 || got[0] != tc.wantFirst)) {
			t.Fatalf("offset of record %d (id %d) stored: restart began with ids %v, want %d first", tc.stored, tc.stored+1, got, tc.wantFirst)
		}
	}
}

// Timestamp mode never stores a position inside a group of equal
// timestamps, so a restart re-sends at most the group it stopped in and
// loses nothing; updated rows are sent again.
func TestTimestampModeKeepsEqualTimestampsTogether(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE TABLE ev (id int PRIMARY KEY, at timestamp NOT NULL)`,
		`INSERT INTO ev SELECT g, '2024-05-01 10:00:00'::timestamp + ((g - 1) / 3) * interval '1 second' FROM generate_series(1, 10) g`)
	// Groups: {1,2,3} {4,5,6} {7,8,9} {10}.
	cfg := with(baseConfig(url), KeyTableWhitelist, "ev", KeyMode, ModeTimestamp, KeyTimestampColumn, "at", KeyBatchMaxRows, "2")
	store := plugintest.NewOffsetStore()
	task := startTask(t, cfg, store)
	ctx := context.Background()
	var got []int64
	// Poll a few batches: 2 records each, the last of a batch held back.
	for len(got) < 5 {
		recs, err := task.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := store.Put(r.SourcePartition, r.SourceOffset); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, ids(t, recs)...)
	}
	off, _ := store.Offset(ctx, map[string]any{PartitionTable: "public.ev"})
	stored := time.UnixMilli(int64(off[OffsetTimestamp].(float64))).UTC()
	if want := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC); len(got) >= 4 && !stored.Equal(want) && !stored.Equal(want.Add(time.Second)) {
		t.Fatalf("stored position %v after ids %v", stored, got)
	}
	task.Stop()
	task = startTask(t, cfg, store)
	rest, err := plugintest.Drain(ctx, task, store, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	all := append(got, ids(t, rest)...)
	seen := map[int64]int{}
	for _, id := range all {
		seen[id]++
	}
	for id := int64(1); id <= 10; id++ {
		if seen[id] == 0 {
			t.Fatalf("row %d lost (got %v then %v)", id, got, ids(t, rest))
		}
	}
	// Re-sent rows are exactly the group the first task was in when it
	// stopped: ids sharing one timestamp.
	var dups []int64
	for id, n := range seen {
		if n > 1 {
			dups = append(dups, (id-1)/3)
		}
	}
	slices.Sort(dups)
	if len(slices.Compact(dups)) > 1 {
		t.Fatalf("re-sent rows span several timestamp groups: %v (first %v, then %v)", seen, got, ids(t, rest))
	}
	off, _ = store.Offset(ctx, map[string]any{PartitionTable: "public.ev"})
	if ms := int64(off[OffsetTimestamp].(float64)); ms != time.Date(2024, 5, 1, 10, 0, 3, 0, time.UTC).UnixMilli() {
		t.Fatalf("final offset %v", off)
	}
	// An update moves a row's timestamp forward: it is sent again.
	pgtest.ExecURL(t, url, `UPDATE ev SET at = '2024-05-01 11:00:00' WHERE id = 2`)
	recs, err := plugintest.Drain(ctx, task, store, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, recs); !slices.Equal(got, []int64{2}) {
		t.Fatalf("after update %v", got)
	}
}

// timestamp+incrementing is exact with equal timestamps: a restart in the
// middle of a group re-sends nothing.
func TestTimestampIncrementingModeIsExact(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE TABLE ev (id bigint PRIMARY KEY, at timestamptz NOT NULL)`,
		`INSERT INTO ev SELECT g, '2024-05-01 10:00:00+00'::timestamptz + ((g - 1) / 4) * interval '1 millisecond' + interval '7 microseconds' FROM generate_series(1, 12) g`)
	cfg := with(baseConfig(url), KeyTableWhitelist, "ev", KeyMode, ModeTimestampIncrementing, KeyTimestampColumn, "at", KeyBatchMaxRows, "3")
	store := plugintest.NewOffsetStore()
	ctx := context.Background()
	var all []int64
	for len(all) < 12 {
		task := startTask(t, cfg, store)
		recs, err := plugintest.Drain(ctx, task, store, 3, 5) // one batch, then restart
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ids(t, recs)...)
		task.Stop()
	}
	if !slices.Equal(all, seq(1, 12)) {
		t.Fatalf("ids over restarts %v", all)
	}
}

// Bulk mode sends the whole table on every pass.
func TestBulkMode(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE TABLE b (id int PRIMARY KEY)`, `INSERT INTO b SELECT generate_series(1, 4)`)
	task := startTask(t, with(baseConfig(url), KeyTableWhitelist, "b", KeyMode, ModeBulk), plugintest.NewOffsetStore())
	recs, err := plugintest.Drain(context.Background(), task, nil, 8, 50)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids32(recs); !slices.Equal(got, []int32{1, 2, 3, 4, 1, 2, 3, 4}) {
		t.Fatalf("two passes: %v", got)
	}
}

func ids32(recs []*plugin.SourceRecord) []int32 {
	var out []int32
	for _, r := range recs {
		out = append(out, r.Value.(*data.Struct).Get("id").(int32))
	}
	return out
}
