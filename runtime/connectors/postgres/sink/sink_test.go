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

package sink

import (
	"context"
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
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
	"github.com/jackc/pgx/v5"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg)) }

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

func baseConfig(url string) map[string]string {
	return map[string]string{"name": "pg-sink", "connector.class": "PostgresSink", "topics": "orders", pgcommon.KeyConnectionURL: url}
}

func TestValidate(t *testing.T) {
	url := pg.CreateDatabase(t)
	db := pgtest.DatabaseName(url)
	role := "writer_" + db
	pgtest.ExecURL(t, url, "CREATE TABLE orders (id bigint PRIMARY KEY, v text)",
		"DROP ROLE IF EXISTS "+role, "CREATE ROLE "+role+" LOGIN PASSWORD 'Writer-Pw-1'", "GRANT INSERT ON orders TO "+role)
	writer := pg.URLAs(role, "Writer-Pw-1", db)
	cases := []struct {
		name, field, substr string
		cfg                 map[string]string
	}{
		{"upsert without key", KeyPKMode, "insert.mode=upsert needs a primary key", with(baseConfig(url), KeyInsertMode, "upsert")},
		{"delete without record key", KeyDeleteEnabled, "needs pk.mode=record_key", with(baseConfig(url), KeyDeleteEnabled, "true", KeyPKMode, "record_value")},
		{"missing table", KeyAutoCreate, "table nothere for topic nothere does not exist: create it, or set auto.create=true", with(baseConfig(url), "topics", "nothere")},
		{"update denied", KeyTableNameFormat, `lacks the UPDATE privilege on table public.orders`, with(baseConfig(writer), KeyInsertMode, "upsert", KeyPKMode, "record_key")},
		{"bad url", pgcommon.KeyConnectionURL, "invalid PostgreSQL URL", with(baseConfig("postgres://x:Writer-Pw-1@127.0.0.1:0x/db"))},
		{"bad mode", KeyInsertMode, "String must be one of", with(baseConfig(url), KeyInsertMode, "merge")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := plugin.ValidateConfig(context.Background(), Plugin(), c.cfg)
			var all []string
			found := false
			for _, fe := range res.Errors() {
				all = append(all, fe.Error())
				if fe.Name == c.field && strings.Contains(fe.Message, c.substr) {
					found = true
				}
				if strings.Contains(fe.Message, "Writer-Pw-1") {
					t.Fatalf("password shown: %s", fe.Message)
				}
			}
			if !found {
				t.Fatalf("want an error on %s containing %q, got %v", c.field, c.substr, all)
			}
		})
	}
	for _, ok := range []map[string]string{
		with(baseConfig(writer)),
		with(baseConfig(url), KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyDeleteEnabled, "true"),
		with(baseConfig(url), "topics", "new_topic", KeyAutoCreate, "true"),
	} {
		if res := plugin.ValidateConfig(context.Background(), Plugin(), ok); res.ErrorCount != 0 {
			t.Errorf("valid config refused: %v", res.Errors())
		}
	}
}

var (
	keySchema   = data.StructOf("orders.Key", data.F("id", data.Int64Schema))
	valueSchema = data.StructOf("orders", data.F("id", data.Int64Schema), data.F("qty", data.Int32Schema),
		data.F("note", data.OptionalStringSchema), data.F("price", data.DecimalSchema(2).AsOptional()), data.F("at", data.TimestampSchema()))
)

func order(offset int64, id int64, qty int32, note any) *plugin.SinkRecord {
	v := data.NewStruct(valueSchema).Put("id", id).Put("qty", qty).Put("note", note).
		Put("price", data.NewDecimal(int64(qty)*125, 2)).Put("at", time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC))
	return &plugin.SinkRecord{Topic: "orders", Partition: 0, Offset: offset, KeySchema: keySchema, Key: data.NewStruct(keySchema).Put("id", id), ValueSchema: valueSchema, Value: v}
}

func tombstone(offset int64, id int64) *plugin.SinkRecord {
	return &plugin.SinkRecord{Topic: "orders", Partition: 0, Offset: offset, KeySchema: keySchema, Key: data.NewStruct(keySchema).Put("id", id)}
}

func startTask(t *testing.T, cfg map[string]string) *Task {
	t.Helper()
	task := &Task{}
	if err := task.Start(context.Background(), plugintest.NewSinkTaskContext(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

func putFlush(t *testing.T, task *Task, recs ...*plugin.SinkRecord) {
	t.Helper()
	if err := putErr(task, recs...); err != nil {
		t.Fatal(err)
	}
}

// putErr puts the records and flushes, and returns the first error.
func putErr(task *Task, recs ...*plugin.SinkRecord) error {
	err := task.Put(context.Background(), recs)
	if err == nil {
		err = task.Flush(context.Background(), nil)
	}
	return err
}

// Upsert with auto.create: the table comes from the record schemas, a
// batch with several versions of a key keeps the last, redelivery changes
// nothing, a tombstone deletes.
func TestUpsertAutoCreateAndDelete(t *testing.T) {
	url := pg.CreateDatabase(t)
	task := startTask(t, with(baseConfig(url), KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyAutoCreate, "true", KeyDeleteEnabled, "true", KeyBatchSize, "2"))
	batch := []*plugin.SinkRecord{order(0, 1, 10, "a"), order(1, 2, 20, nil), order(2, 1, 11, "a2"), order(3, 3, 30, "c"), tombstone(4, 3)}
	putFlush(t, task, batch...)
	putFlush(t, task, batch...) // redelivered
	got := pgtest.QueryString(t, url, `SELECT string_agg(format('%s:%s:%s:%s:%s', id, qty, coalesce(note, 'NULL'), price, at), ' ' ORDER BY id) FROM orders`)
	if want := "1:11:a2:13.75:2024-01-02 03:04:05.000006 2:20:NULL:25.00:2024-01-02 03:04:05.000006"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if pk := pgtest.QueryString(t, url, `SELECT string_agg(a.attname, ',') FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'orders'::regclass AND i.indisprimary`); pk != "id" {
		t.Fatalf("primary key %q", pk)
	}
}

// Insert mode writes every record (COPY); kafka pk mode keys rows by their
// Kafka coordinates, so a redelivered batch fails on the key instead of
// duplicating rows.
func TestInsertModeAndKafkaKeys(t *testing.T) {
	url := pg.CreateDatabase(t)
	task := startTask(t, with(baseConfig(url), KeyPKMode, "kafka", KeyAutoCreate, "true"))
	putFlush(t, task, order(7, 1, 1, "x"), order(8, 1, 2, "y"))
	if got := pgtest.QueryString(t, url, `SELECT string_agg(format('%s/%s/%s:%s', __connect_topic, __connect_partition, __connect_offset, qty), ' ' ORDER BY __connect_offset) FROM orders`); got != "orders/0/7:1 orders/0/8:2" {
		t.Fatalf("rows %q", got)
	}
	err := putErr(task, order(7, 1, 1, "x"))
	if err == nil || plugin.IsRetriable(err) || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("redelivery in insert mode: %v, want a non-retriable duplicate key error", err)
	}
}

// Schemaless JSON objects go into an existing table by column name;
// record_value keys upsert by a value field; a field without a column is
// an error that names it.
func TestSchemalessValuesAndRecordValueKeys(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE SCHEMA shop`, `CREATE TABLE shop."Events" (code text PRIMARY KEY, n bigint, flag boolean)`)
	task := startTask(t, with(baseConfig(url), "topics", "events", KeyTableNameFormat, `shop."Events"`, KeyInsertMode, "upsert", KeyPKMode, "record_value", KeyPKFields, "code"))
	rec := func(off int64, m map[string]any) *plugin.SinkRecord {
		return &plugin.SinkRecord{Topic: "events", Offset: off, Value: m}
	}
	putFlush(t, task, rec(0, map[string]any{"code": "a", "n": int64(1), "flag": true}), rec(1, map[string]any{"code": "b", "n": int64(2)}), rec(2, map[string]any{"code": "a", "n": int64(3), "flag": false}))
	if got := pgtest.QueryString(t, url, `SELECT string_agg(format('%s=%s/%s', code, n, coalesce(flag::text, 'NULL')), ' ' ORDER BY code) FROM shop."Events"`); got != "a=3/false b=2/NULL" {
		t.Fatalf("rows %q", got)
	}
	err := putErr(task, rec(3, map[string]any{"code": "c", "extra": "x"}))
	if err == nil || !strings.Contains(err.Error(), `has field "extra" but table shop.Events has no such column`) {
		t.Fatalf("unknown field: %v", err)
	}
}

// The sink's natural limit is the partition count of its topics.
func TestNaturalLimitIsTopicPartitions(t *testing.T) {
	ctx := context.Background()
	conn := Plugin().NewConnector()
	cc := plugintest.NewConnectorContext(map[string]int32{"orders": 4, "returns": 2})
	if err := conn.Start(ctx, cc, with(baseConfig("postgres://u@127.0.0.1/db"), "topics", "orders,returns")); err != nil {
		t.Fatal(err)
	}
	defer conn.Stop()
	cfgs, lim, err := plugin.PlanTasks(ctx, "pg-sink", conn, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 6 || lim.NaturalLimit != 6 || lim.Reason != plugin.TopicPartitions {
		t.Fatalf("%d task configs, limits %+v; want 6 and TopicPartitions", len(cfgs), lim)
	}
}

// A value pgx cannot encode for its column (a text field for an integer
// column) fails the write for good, with pgx's reason, in both COPY paths:
// it must not read as PostgreSQL's "COPY cancelled", which is retriable
// and would be retried forever. Records of a planned shape (the second
// batch) are filled as COPY streams them and fail the same way.
func TestValueThatDoesNotFitItsColumnIsNotRetried(t *testing.T) {
	for _, mode := range []string{InsertModeInsert, InsertModeUpsert} {
		t.Run(mode, func(t *testing.T) {
			url := pg.CreateDatabase(t)
			pgtest.ExecURL(t, url, "CREATE TABLE orders (id bigint PRIMARY KEY, qty integer, note integer, price numeric, at timestamptz)")
			task := startTask(t, with(baseConfig(url), KeyInsertMode, mode, KeyPKMode, "record_key"))
			putFlush(t, task, order(0, 1, 10, nil)) // plans the shape; a NULL fits
			err := putErr(task, order(1, 2, 20, nil), order(2, 3, 30, "not a number"))
			if err == nil || plugin.IsRetriable(err) || !strings.Contains(err.Error(), "not a number") ||
				!strings.Contains(err.Error(), "record orders-0/2") {
				t.Fatalf("got %v, want a non-retriable error naming the record and the value", err)
			}
			if got := pgtest.QueryString(t, url, "SELECT string_agg(id::text, ',' ORDER BY id) FROM orders"); got != "1" {
				t.Fatalf("rows %q, want only the first batch's", got)
			}
		})
	}
}

// With an errant record reporter (a dead letter queue or an error log), a
// batch that fails for good is written again one record at a time: the
// records the table takes are written, in order, and only the ones it
// refuses (here one pgx cannot encode and one PostgreSQL refuses) go to
// the reporter. A reporter that does not tolerate them (errors.tolerance
// =none) fails the write.
func TestBadRecordsGoToTheErrantRecordReporter(t *testing.T) {
	for _, tolerate := range []bool{true, false} {
		t.Run(fmt.Sprintf("tolerate=%v", tolerate), func(t *testing.T) {
			url := pg.CreateDatabase(t)
			pgtest.ExecURL(t, url, "CREATE TABLE orders (id bigint PRIMARY KEY, qty integer CHECK (qty < 100), note text, price numeric, at timestamptz)")
			tc := plugintest.NewSinkTaskContext()
			tc.Errant = &plugintest.ErrantRecords{Tolerate: tolerate}
			task := &Task{}
			if err := task.Start(context.Background(), tc, with(baseConfig(url), KeyInsertMode, InsertModeUpsert, KeyPKMode, "record_key")); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = task.Stop() })
			bad := order(2, 3, 300, "breaks the check")
			err := putErr(task, order(0, 1, 10, "a"), order(1, 2, 20, "b"), bad, order(3, 4, 40, "d"), order(4, 2, 21, "b2"))
			rows := pgtest.QueryString(t, url, "SELECT string_agg(format('%s:%s', id, qty), ' ' ORDER BY id) FROM orders")
			reported, errs := tc.Errant.Reported()
			if !tolerate {
				if err == nil || plugin.IsRetriable(err) || !strings.Contains(err.Error(), "orders_qty_check") {
					t.Fatalf("got %v, want the check violation, not retriable", err)
				}
				if rows != "1:10 2:20" {
					t.Fatalf("rows %q, want those before the bad record", rows)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rows != "1:10 2:21 4:40" {
				t.Fatalf("rows %q, want every record but the bad one, the last version of key 2", rows)
			}
			if len(reported) != 1 || reported[0] != bad || !strings.Contains(errs[0].Error(), "orders_qty_check") {
				t.Fatalf("reported %v (%v), want the bad record with the check violation", reported, errs)
			}
			// A value pgx cannot encode is reported the same way.
			pgtest.ExecURL(t, url, "ALTER TABLE orders ALTER COLUMN note TYPE integer USING NULL")
			if err := putErr(task, order(5, 5, 50, nil), order(6, 6, 60, "not a number")); err != nil {
				t.Fatal(err)
			}
			if reported, _ := tc.Errant.Reported(); len(reported) != 2 || reported[1].Offset != 6 {
				t.Fatalf("reported %v, want the record at offset 6 too", reported)
			}
			if got := pgtest.QueryString(t, url, "SELECT count(*) FROM orders WHERE id = 5"); got != "1" {
				t.Fatalf("record 5 not written (%s)", got)
			}
		})
	}
}

// Two tasks of one connector auto-create the table of their first batch at
// once: both find it missing, and PostgreSQL answers the one that commits
// second with a unique violation on the catalog. Here another session
// plays the first task, holding its CREATE TABLE open until the task's own
// CREATE waits on it; the task must then write into the table the other
// session created, not fail.
func TestAutoCreateRaceWithAnotherTask(t *testing.T) {
	ctx := context.Background()
	url := pg.CreateDatabase(t)
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Exec(ctx, `BEGIN; CREATE TABLE orders (id bigint PRIMARY KEY, qty integer NOT NULL, note text, price numeric, at timestamp NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	task := startTask(t, with(baseConfig(url), KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyAutoCreate, "true"))
	done := make(chan error, 1)
	go func() { done <- putErr(task, order(0, 1, 10, "a"), order(1, 2, 20, nil)) }()
	testkit.EventuallyTrue(t, 10*time.Second, "the task's CREATE TABLE to wait for the other session's", func() bool {
		var n int
		if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	if _, err := other.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the task that lost the CREATE TABLE race failed: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the task's write did not return within 20s of the other session's commit")
	}
	if got := ordersRows(t, url); got != "1:10:a 2:20:NULL" {
		t.Fatalf("rows %q, want %q", got, "1:10:a 2:20:NULL")
	}
}

// auto.evolve adds the value fields a table lacks as columns that allow
// NULL, and refuses a required field without a default, naming it.
func TestAutoEvolve(t *testing.T) {
	url := pg.CreateDatabase(t)
	task := startTask(t, with(baseConfig(url), KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyAutoCreate, "true", KeyAutoEvolve, "true"))
	putFlush(t, task, order(0, 1, 10, "a"))
	v2 := data.StructOf("orders", append(slices.Clone(valueSchema.Fields),
		data.F("color", data.OptionalStringSchema), data.F("size", data.Int32Schema.WithDefault(int32(3))))...)
	rec := func(offset, id int64, s *data.Schema, kv ...any) *plugin.SinkRecord {
		v := data.NewStruct(s).Put("id", id).Put("qty", int32(1)).Put("at", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
		for i := 0; i+1 < len(kv); i += 2 {
			v.Put(kv[i].(string), kv[i+1])
		}
		return &plugin.SinkRecord{Topic: "orders", Offset: offset, KeySchema: keySchema, Key: data.NewStruct(keySchema).Put("id", id), ValueSchema: s, Value: v}
	}
	putFlush(t, task, rec(1, 2, v2, "color", "red", "size", int32(7)))
	got := pgtest.QueryString(t, url, `SELECT string_agg(format('%s:%s:%s', id, coalesce(color, 'NULL'), coalesce(size::text, 'NULL')), ' ' ORDER BY id) FROM orders`)
	if want := "1:NULL:NULL 2:red:7"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
	v3 := data.StructOf("orders", append(slices.Clone(v2.Fields), data.F("weight", data.Int64Schema))...)
	err := putErr(task, rec(2, 3, v3, "weight", int64(1)))
	if err == nil || !strings.Contains(err.Error(), `required field "weight" without a default`) {
		t.Fatalf("required field: %v", err)
	}
}
