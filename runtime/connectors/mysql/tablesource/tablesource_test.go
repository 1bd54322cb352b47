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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/offsettest"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/mariadbtest"
)

var srv *mariadbtest.Server

func TestMain(m *testing.M) { os.Exit(mariadbtest.Run(m, &srv)) }

func baseConfig(database string) map[string]string {
	return map[string]string{
		"name": "mysql-source", plugin.KeyConnectorClass: "MySqlSource",
		jdbc.KeyConnectionURL: "jdbc:" + srv.URL(database), jdbc.KeyMode: jdbc.ModeIncrementing,
		jdbc.KeyIncrementingColumn: "id", jdbc.KeyTopicPrefix: "shop.", jdbc.KeyPollIntervalMs: "100",
		jdbc.KeyTablePollIntervalMs: "0", jdbc.KeyBatchMaxRows: "500",
	}
}

// seedTables are the seeds' five tables and their rows: audit_log is the
// largest, larger than the other four together.
var seedTables = map[string]int{"audit_log": 6000, "orders": 2500, "users": 1200, "products": 500, "inventory": 300}

// createSeed creates the five tables with their rows and refreshes
// InnoDB's statistics, so that information_schema's estimates are current.
func createSeed(t *testing.T, database string) {
	t.Helper()
	var stmts []string
	for name, n := range seedTables {
		stmts = append(stmts,
			fmt.Sprintf("CREATE TABLE %s (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload VARCHAR(100) NOT NULL, created DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3))", name),
			fmt.Sprintf("INSERT INTO %s (payload) SELECT CONCAT('%s-', seq) FROM seq_1_to_%d", name, name, n),
			"ANALYZE TABLE "+name)
	}
	srv.ExecT(t, database, stmts...)
}

func startConnector(t *testing.T, cfg map[string]string) plugin.Connector {
	t.Helper()
	ctx := context.Background()
	p := Plugin()
	if res := plugin.ValidateConfig(ctx, p, cfg); res.ErrorCount != 0 {
		t.Fatalf("valid config refused: %v", res.Errors())
	}
	conn := p.NewConnector()
	if err := conn.Start(ctx, plugintest.NewConnectorContext(nil), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Stop() })
	return conn
}

func taskTables(t *testing.T, cfg map[string]string) []string {
	t.Helper()
	pairs, err := jdbc.TaskTables(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pairs {
		out = append(out, p[1])
	}
	sort.Strings(out)
	return out
}

// The seeds' example as written: five tables, tasks.max=3 → three tasks,
// balanced by information_schema's row estimates with the largest table
// alone; every row once in Kafka (kfake) through the worker's source
// runners. With tasks.max=10 the tables bind: 5 tasks, reason Tables, as
// GET /connectors/{c}/limits reports it and the operator mirrors it into
// effectiveTasks and TasksLimited.
func TestSeedExampleFiveTablesThreeTasks(t *testing.T) {
	database := srv.CreateDatabase(t)
	createSeed(t, database)
	cfg := baseConfig(database)
	cfg[jdbc.KeyTablePattern] = ".*"
	conn := startConnector(t, cfg)
	ctx := context.Background()

	cfgs, lim, err := plugin.PlanTasks(ctx, "mysql-source", conn, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 3 || lim.NaturalLimit != 5 || lim.EffectiveTasks != 3 || lim.Reason != plugin.TasksMax {
		t.Fatalf("tasks.max=3: %d configs, limits %+v; want 3 configs, natural limit 5, reason TasksMax", len(cfgs), lim)
	}
	var groups [][]string
	for _, c := range cfgs {
		groups = append(groups, taskTables(t, c))
	}
	t.Logf("tasks.max=3: %v", groups)
	if !slices.Equal(groups[0], []string{"audit_log"}) || !slices.Equal(groups[1], []string{"orders"}) ||
		!slices.Equal(groups[2], []string{"inventory", "products", "users"}) {
		t.Fatalf("task tables %v; want [audit_log] alone, [orders], [inventory products users]", groups)
	}

	_, lim10, err := plugin.PlanTasks(ctx, "mysql-source", conn, 10)
	if err != nil {
		t.Fatal(err)
	}
	body := connectapi.LimitsOf(10, lim10.NaturalLimit, plugin.Tables, lim10.EffectiveTasks)
	if lim10.EffectiveTasks != 5 || lim10.Reason != plugin.Tables || body.Reason != string(plugin.Tables) || body.EffectiveTasks != 5 {
		t.Fatalf("tasks.max=10: limits %+v, REST body %+v; want 5 effective tasks, reason Tables", lim10, body)
	}

	// Every row once, through three runners into kfake.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics()...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store := offsettest.New()
	var runners []task.Runner
	for i, tc := range cfgs {
		r, err := task.New(task.Spec{Common: task.Common{
			ID: task.ID{Connector: "mysql-source", Task: i}, Config: tc,
			Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Status: task.StatusFunc(func(task.ID, task.State, string) {}),
			OffsetFlushInterval: 100 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
		}, Plugin: Plugin(), Connector: tc, Offsets: store})
		runners = append(runners, tasktest.Start(t, r, err))
	}
	counts := consume(t, c, sum(seedTables))
	for name, n := range seedTables {
		ids := counts["shop."+name]
		if len(ids) != n {
			t.Errorf("topic shop.%s: %d distinct rows, want %d", name, len(ids), n)
		}
		for id, k := range ids {
			if k != 1 || id < 1 || id > int64(n) {
				t.Errorf("topic shop.%s: row %d seen %d times", name, id, k)
				break
			}
		}
	}
	// The offsets reach the end of each table.
	err = testkit.Until(ctx, 10*time.Second, "every table's stored offset reaches its last id", func(context.Context) (bool, error) {
		for name, n := range seedTables {
			off := store.Offset("mysql-source", map[string]any{jdbc.PartitionTable: database + "." + name})
			if v, _ := off[jdbc.OffsetIncrementing].(float64); int(v) != n {
				return false, fmt.Errorf("table %s: offset %v, want %d", name, off, n)
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runners {
		if err := r.Err(); err != nil {
			t.Errorf("runner failed: %v", err)
		}
	}
}

func topics() []string {
	var out []string
	for name := range seedTables {
		out = append(out, "shop."+name)
	}
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// consume reads the seed topics until want records arrived (and a little
// longer, to catch duplicates) and counts the ids per topic.
func consume(t *testing.T, c *kfake.Cluster, want int) map[string]map[int64]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topics()...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var mu sync.Mutex
	counts := map[string]map[int64]int{}
	total := 0
	deadline := time.Now().Add(30 * time.Second)
	var settle time.Time
	for time.Now().Before(deadline) && (settle.IsZero() || time.Now().Before(settle)) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		f := cl.PollFetches(ctx)
		cancel()
		f.EachRecord(func(r *kgo.Record) {
			var env struct {
				Payload struct {
					ID      int64  `json:"id"`
					Payload string `json:"payload"`
				} `json:"payload"`
			}
			if err := json.Unmarshal(r.Value, &env); err != nil {
				t.Errorf("record on %s: %v: %s", r.Topic, err, r.Value)
				return
			}
			if !strings.HasPrefix(env.Payload.Payload, strings.TrimPrefix(r.Topic, "shop.")+"-") {
				t.Errorf("record on %s carries %q", r.Topic, env.Payload.Payload)
			}
			mu.Lock()
			if counts[r.Topic] == nil {
				counts[r.Topic] = map[int64]int{}
			}
			counts[r.Topic][env.Payload.ID]++
			total++
			mu.Unlock()
		})
		if total >= want && settle.IsZero() {
			settle = time.Now().Add(500 * time.Millisecond)
		}
	}
	t.Logf("consumed %d records (want %d)", total, want)
	return counts
}

// Validation names the field and the fix: a column type without a Connect
// mapping is refused naming the column (never read as a silent string), a
// missing table names the table, a wrong password never shows up in the
// answer, and a task started on such a table fails naming the column.
func TestValidateRefusesNamingTheProblem(t *testing.T) {
	database := srv.CreateDatabase(t)
	srv.ExecT(t, database,
		"CREATE TABLE places (id INT PRIMARY KEY, spot POINT, label VARCHAR(10))",
		"CREATE TABLE notes (id INT PRIMARY KEY, body TEXT, at DATETIME(6))")
	ctx := context.Background()
	errs := func(cfg map[string]string) map[string]string {
		res := plugin.ValidateConfig(ctx, Plugin(), cfg)
		out := map[string]string{}
		for _, e := range res.Errors() {
			out[e.Name] += e.Message + "; "
		}
		return out
	}
	cfg := baseConfig(database)
	cfg[jdbc.KeyTableWhitelist] = "places"
	if got := errs(cfg)[jdbc.KeyTableWhitelist]; !strings.Contains(got, "`spot`") || !strings.Contains(got, "point") {
		t.Errorf("POINT column: table.whitelist error %q; want it to name column `spot` and its type", got)
	}
	cfg[jdbc.KeyTableWhitelist] = "nowhere"
	if got := errs(cfg)[jdbc.KeyTableWhitelist]; !strings.Contains(got, "nowhere") {
		t.Errorf("missing table: error %q; want it named", got)
	}
	cfg[jdbc.KeyTableWhitelist] = "notes"
	cfg[jdbc.KeyMode] = jdbc.ModeTimestamp
	cfg[jdbc.KeyTimestampColumn] = "body"
	if got := errs(cfg)[jdbc.KeyTimestampColumn]; !strings.Contains(got, "datetime or timestamp") {
		t.Errorf("text timestamp column: error %q", got)
	}
	cfg[jdbc.KeyTimestampColumn] = "at"
	if got := errs(cfg); len(got) != 0 {
		t.Errorf("valid timestamp config refused: %v", got)
	}
	secret := "s3cr3t-pw-" + database
	bad := baseConfig(database)
	bad[jdbc.KeyTableWhitelist] = "notes"
	bad[jdbc.KeyConnectionPassword] = secret
	got := errs(bad)
	if !strings.Contains(got[jdbc.KeyConnectionPassword], "refused the login") {
		t.Errorf("wrong password: errors %v; want a refused login on connection.password", got)
	}
	for k, v := range got {
		if strings.Contains(v, secret) {
			t.Errorf("field %s shows the password: %s", k, v)
		}
	}
	bad[jdbc.KeyConnectionURL] = "jdbc:postgresql://x/y"
	if got := errs(bad)[jdbc.KeyConnectionURL]; !strings.Contains(got, "jdbc:mysql://") {
		t.Errorf("wrong scheme: error %q; want the expected form", got)
	}

	// A task on the POINT table fails at start, naming the column.
	tcfg := baseConfig(database)
	tcfg[jdbc.KeyTableWhitelist] = "places"
	tk := &Task{}
	err := tk.Start(ctx, &plugintest.SourceTaskContext{Store: plugintest.NewOffsetStore()}, tcfg)
	_ = tk.Stop()
	if err == nil || !strings.Contains(err.Error(), "`spot`") {
		t.Errorf("task start on a POINT column: %v; want an error naming `spot`", err)
	}
}

func pollAll(t *testing.T, tk *Task, want int) []*plugin.SourceRecord {
	t.Helper()
	var out []*plugin.SourceRecord
	deadline := time.Now().Add(15 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		recs, err := tk.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

// Timestamp mode on DATETIME(6): rows with equal timestamps (to the
// microsecond) are handed out as one group, positions keep microseconds,
// and a task restarted from the stored offset sends only what changed
// since: an updated row and a new one, no row again.
func TestTimestampModeResumesExactly(t *testing.T) {
	database := srv.CreateDatabase(t)
	srv.ExecT(t, database,
		"CREATE TABLE events (id INT PRIMARY KEY, v VARCHAR(10) NOT NULL, at DATETIME(6) NOT NULL)",
		`INSERT INTO events VALUES (1, 'a', '2024-01-01 00:00:00.000001'), (2, 'b', '2024-01-01 00:00:00.000001'),
			(3, 'c', '2024-01-01 00:00:00.000002'), (4, 'd', '2024-01-01 00:00:00.000003')`)
	cfg := baseConfig(database)
	cfg[jdbc.KeyTableWhitelist] = "events"
	cfg[jdbc.KeyMode] = jdbc.ModeTimestamp
	cfg[jdbc.KeyTimestampColumn] = "at"
	cfg[jdbc.KeyBatchMaxRows] = "1"
	store := plugintest.NewOffsetStore()
	tk := &Task{}
	if err := tk.Start(context.Background(), &plugintest.SourceTaskContext{Store: store}, cfg); err != nil {
		t.Fatal(err)
	}
	recs := pollAll(t, tk, 4)
	_ = tk.Stop()
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	last := recs[len(recs)-1]
	if ns, _ := last.SourceOffset[jdbc.OffsetTimestampNano].(int64); ns != 3000 {
		t.Fatalf("last offset %v; want 3000 ns (microsecond 3) kept", last.SourceOffset)
	}
	// The offset of row 1 (its group with row 2 not yet complete) is the
	// position before the group.
	if off := recs[0].SourceOffset; off != nil && off[jdbc.OffsetTimestampNano] == int64(1000) {
		t.Fatalf("row 1 carries the offset after its group %v: a restart would skip row 2", off)
	}
	if err := store.Put(last.SourcePartition, last.SourceOffset); err != nil {
		t.Fatal(err)
	}
	srv.ExecT(t, database, "UPDATE events SET v = 'c2', at = '2024-01-01 00:00:00.000009' WHERE id = 3",
		"INSERT INTO events VALUES (5, 'e', '2024-01-01 00:00:00.000010')")
	tk2 := &Task{}
	if err := tk2.Start(context.Background(), &plugintest.SourceTaskContext{Store: store}, cfg); err != nil {
		t.Fatal(err)
	}
	defer tk2.Stop()
	again := pollAll(t, tk2, 2)
	var got []string
	for _, r := range again {
		got = append(got, fmt.Sprint(r.Value.(interface{ Get(string) any }).Get("v")))
	}
	if !slices.Equal(got, []string{"c2", "e"}) {
		t.Fatalf("after restart: %v; want [c2 e]", got)
	}
}
