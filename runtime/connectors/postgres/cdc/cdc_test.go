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
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// taskConfigs validates the connector config, starts the connector and
// plans its tasks for tasksMax, as the herder does.
func taskConfigs(t *testing.T, config map[string]string, tasksMax int) ([]map[string]string, plugin.Limits) {
	t.Helper()
	ctx := context.Background()
	if res := plugin.ValidateConfig(ctx, Plugin(), config); res.ErrorCount != 0 {
		t.Fatalf("validation: %+v", res.Errors())
	}
	c := Plugin().NewConnector()
	if err := c.Start(ctx, plugintest.NewConnectorContext(nil), config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	cfgs, lim, err := plugin.PlanTasks(ctx, "cdc", c, tasksMax)
	if err != nil {
		t.Fatal(err)
	}
	return cfgs, lim
}

// tasks.max=5 still gives one task; the limit's reason is SingleReader.
// Then inserts, updates and deletes of several transactions, two of them
// interleaved, arrive in commit order with their before and after images.
func TestStreamInCommitOrder(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "public.items,public.plain", "tasks.max": "5"})
	e.exec(
		"CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2))",
		"ALTER TABLE items REPLICA IDENTITY FULL",
		"CREATE TABLE plain (id bigint PRIMARY KEY, note text)",
		"CREATE TABLE ignored (id int PRIMARY KEY)",
	)
	cfgs, lim := taskConfigs(t, e.config, 5)
	if len(cfgs) != 1 || lim != (plugin.Limits{TasksMax: 5, NaturalLimit: 1, EffectiveTasks: 1, Reason: plugin.SingleReader}) {
		t.Fatalf("tasks.max=5 gave %d task configs and limits %+v; want 1 and SingleReader", len(cfgs), lim)
	}
	e.run(cfgs[0])
	e.waitSlotActive("cdc_slot")

	e.exec("INSERT INTO items VALUES (1, 'apple', 10, 1.50), (2, 'pear', 5, 2.25)",
		"INSERT INTO plain VALUES (100, 'a'), (101, 'b')",
		"INSERT INTO ignored VALUES (1)")
	// Two interleaved transactions: B starts later but commits first.
	ctx := context.Background()
	a, err := pgx.Connect(ctx, e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	txA, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txA.Exec(ctx, "UPDATE items SET qty = 11 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	e.exec("BEGIN", "UPDATE items SET name = 'pear2', price = 3.00 WHERE id = 2", "UPDATE plain SET note = 'b2' WHERE id = 101", "COMMIT")
	if _, err := txA.Exec(ctx, "DELETE FROM items WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.exec("DELETE FROM plain WHERE id = 100", "INSERT INTO items VALUES (3, 'fig', NULL, NULL)", "TRUNCATE plain")

	evs := e.consume([]string{"pg.public.items", "pg.public.plain"}, 13, 300*time.Millisecond)
	byCommit(evs)
	type row = map[string]any
	want := []struct {
		topic, op     string
		key           row
		before, after row
	}{
		{"pg.public.items", "c", row{"id": 1.0}, nil, row{"id": 1.0, "name": "apple", "qty": 10.0, "price": 1.5}},
		{"pg.public.items", "c", row{"id": 2.0}, nil, row{"id": 2.0, "name": "pear", "qty": 5.0, "price": 2.25}},
		{"pg.public.plain", "c", row{"id": 100.0}, nil, row{"id": 100.0, "note": "a"}},
		{"pg.public.plain", "c", row{"id": 101.0}, nil, row{"id": 101.0, "note": "b"}},
		// B, committed first: full before image on items (REPLICA IDENTITY FULL), none on plain (default identity, key unchanged).
		{"pg.public.items", "u", row{"id": 2.0}, row{"id": 2.0, "name": "pear", "qty": 5.0, "price": 2.25}, row{"id": 2.0, "name": "pear2", "qty": 5.0, "price": 3.0}},
		{"pg.public.plain", "u", row{"id": 101.0}, nil, row{"id": 101.0, "note": "b2"}},
		// A.
		{"pg.public.items", "u", row{"id": 1.0}, row{"id": 1.0, "name": "apple", "qty": 10.0, "price": 1.5}, row{"id": 1.0, "name": "apple", "qty": 11.0, "price": 1.5}},
		{"pg.public.items", "d", row{"id": 2.0}, row{"id": 2.0, "name": "pear2", "qty": 5.0, "price": 3.0}, nil},
		{"pg.public.items", tombstoneOp, row{"id": 2.0}, nil, nil},
		// Default identity: the delete's before image holds the key only.
		{"pg.public.plain", "d", row{"id": 100.0}, row{"id": 100.0, "note": nil}, nil},
		{"pg.public.plain", tombstoneOp, row{"id": 100.0}, nil, nil},
		{"pg.public.items", "c", row{"id": 3.0}, nil, row{"id": 3.0, "name": "fig", "qty": nil, "price": nil}},
		{"pg.public.plain", "t", nil, nil, nil},
	}
	if len(evs) != len(want) {
		t.Fatalf("got %d records, want %d:\n%s", len(evs), len(want), list(evs))
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Topic != w.topic || ev.op() != w.op || !reflect.DeepEqual(ev.Key, w.key) ||
			!reflect.DeepEqual(ev.Before, w.before) || !reflect.DeepEqual(ev.After, w.after) {
			t.Errorf("record %d:\n got %v\nwant %s %s key=%v before=%v after=%v", i, ev, w.topic, w.op, w.key, w.before, w.after)
		}
		if ev.Source["snapshot"] != "false" || ev.Source["table"] == nil || ev.Source["txId"] == nil || ev.Source["ts_ms"] == nil {
			t.Errorf("record %d: source %v lacks snapshot=false, table, txId or ts_ms", i, ev.Source)
		}
	}
}

// Stopping the task and starting it again from the stored offsets resumes
// after the last delivered change (a delete's tombstone included): what
// happened while it was stopped arrives (a delete with its tombstone),
// nothing is lost and nothing is sent twice.
func TestRestartResumesFromStoredPosition(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "t"})
	e.exec("CREATE TABLE t (id int PRIMARY KEY, v int)")
	cfgs, _ := taskConfigs(t, e.config, 1)
	r1 := e.run(cfgs[0])
	e.waitSlotActive("cdc_slot")
	e.exec("INSERT INTO t SELECT g, 0 FROM generate_series(1, 3) g", "UPDATE t SET v = 1 WHERE id = 2", "DELETE FROM t WHERE id = 3")
	evs := e.consume([]string{"pg.public.t"}, 6, 0)
	byCommit(evs)
	if len(evs) != 6 || !evs[5].Tombstone {
		t.Fatalf("before the restart: %d records, want 6 ending with a tombstone:\n%s", len(evs), list(evs))
	}
	e.stop(r1)
	stored := e.offsets.Offset("cdc", map[string]any{PartitionSlot: "cdc_slot"})
	if stored == nil {
		t.Fatal("no offset stored after a graceful stop")
	}
	// Changes while the task is down, one transaction of 50 rows among them.
	e.exec("INSERT INTO t VALUES (4, 0), (5, 0)",
		"BEGIN", "INSERT INTO t SELECT g, 0 FROM generate_series(6, 55) g", "COMMIT",
		"DELETE FROM t WHERE id = 1")
	e.run(cfgs[0])
	evs = e.consume([]string{"pg.public.t"}, 6+2+50+2, 500*time.Millisecond)
	if len(evs) != 60 {
		t.Fatalf("after the restart: %d records in the topic, want 60 (no loss, no duplicate):\n%s", len(evs), list(evs))
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		k := fmt.Sprintf("%s/%d/%v", ev.op(), ev.id(), ev.After["v"])
		if seen[k] {
			t.Errorf("duplicate record %v", ev)
		}
		seen[k] = true
	}
	for i := 6; i <= 55; i++ {
		if !seen[fmt.Sprintf("c/%d/0", i)] {
			t.Errorf("insert of row %d is missing", i)
		}
	}
	for _, k := range []string{"d/1/<nil>", "tombstone/1/<nil>", "d/3/<nil>", "tombstone/3/<nil>"} {
		if !seen[k] {
			t.Errorf("record %s is missing:\n%s", k, list(evs))
		}
	}
}

// The initial snapshot and the stream meet without a gap or an overlap:
// rows changed while the snapshot is being read arrive as changes after
// it, and replaying everything gives exactly the table's final content.
func TestSnapshotThenStream(t *testing.T) {
	e := newEnv(t, map[string]string{"table.include.list": "public.t", "batch.size": "10"})
	e.exec("CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL, at timestamptz)",
		"INSERT INTO t SELECT g, 0, '2026-01-02 03:04:05+00' FROM generate_series(1, 1000) g")
	cfgs, _ := taskConfigs(t, e.config, 1)
	e.run(cfgs[0])
	testkit.EventuallyTrue(t, 20*time.Second, "the slot created", func() bool {
		var n int
		err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'cdc_slot'").Scan(&n)
		return err == nil && n == 1
	})
	// Changes made after the slot's consistent point, most likely while
	// the snapshot is still being read.
	e.exec("UPDATE t SET v = 1 WHERE id <= 10",
		"INSERT INTO t SELECT g, 2, NULL FROM generate_series(1001, 1020) g",
		"DELETE FROM t WHERE id BETWEEN 990 AND 999",
		"UPDATE t SET v = 3 WHERE id = 1001")
	evs := e.consume([]string{"pg.public.t"}, 1000+10+20+10+10+1, 500*time.Millisecond)
	if len(evs) != 1051 {
		t.Fatalf("%d records, want 1000 snapshot rows, 41 changes and 10 tombstones", len(evs))
	}
	var snap, stream []event
	for _, ev := range evs {
		if ev.op() == "r" {
			snap = append(snap, ev)
		} else {
			stream = append(stream, ev)
		}
	}
	if len(snap) != 1000 {
		t.Fatalf("%d snapshot rows, want 1000", len(snap))
	}
	state := map[int64]map[string]any{}
	for _, ev := range snap {
		if ev.Source["snapshot"] != "true" || ev.Before != nil {
			t.Fatalf("snapshot row %v", ev)
		}
		if _, dup := state[ev.id()]; dup {
			t.Fatalf("row %d twice in the snapshot", ev.id())
		}
		if ev.After["v"] != 0.0 || ev.After["at"] != float64(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()) {
			t.Fatalf("snapshot row %v: the snapshot saw a later change or mapped a type wrongly", ev)
		}
		state[ev.id()] = ev.After
	}
	byCommit(stream)
	for _, ev := range stream {
		switch ev.Op {
		case "c", "u":
			state[ev.id()] = ev.After
		case "d":
			delete(state, ev.id())
		}
	}
	rows, err := e.db.Query(context.Background(), "SELECT id, v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]float64{}
	for rows.Next() {
		var id, v int32
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		want[int64(id)] = float64(v)
	}
	if len(state) != len(want) {
		t.Fatalf("replayed %d rows, the table has %d", len(state), len(want))
	}
	for id, v := range want {
		if state[id]["v"] != v {
			t.Errorf("row %d: replayed v=%v, table v=%v", id, state[id]["v"], v)
		}
	}
}

// An UPDATE that leaves a large (TOASTed) value alone makes the server
// skip that value. Without REPLICA IDENTITY FULL the after image carries
// unavailable.value.placeholder for text and bytea columns, not a NULL
// that would read as "the value was cleared"; with FULL it carries the
// value, from the before image.
func TestUnchangedToastedValues(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "big,bigfull", KeyUnavailablePlaceholder: "<unchanged>"})
	e.exec("CREATE TABLE big (id int PRIMARY KEY, v int, doc text, blob bytea)",
		"CREATE TABLE bigfull (id int PRIMARY KEY, v int, doc text)", "ALTER TABLE bigfull REPLICA IDENTITY FULL")
	cfgs, _ := taskConfigs(t, e.config, 1)
	e.run(cfgs[0])
	e.waitSlotActive("cdc_slot")
	// 19,200 hex digits of random data: far above the 2 kB beyond which
	// PostgreSQL moves values out of line, even compressed.
	const large = "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 600))"
	e.exec("INSERT INTO big VALUES (1, 0, "+large+", decode("+large+", 'hex'))",
		"INSERT INTO bigfull VALUES (1, 0, "+large+")",
		"UPDATE big SET v = 1 WHERE id = 1", "UPDATE bigfull SET v = 1 WHERE id = 1")
	evs := e.consume([]string{"pg.public.big", "pg.public.bigfull"}, 4, 200*time.Millisecond)
	byCommit(evs)
	if len(evs) != 4 {
		t.Fatalf("got %d records, want 4:\n%s", len(evs), list(evs))
	}
	insBig, insFull, updBig, updFull := evs[0], evs[1], evs[2], evs[3]
	if doc, _ := insBig.After["doc"].(string); len(doc) != 19200 {
		t.Fatalf("the insert carries a doc of %d characters, want 19200", len(doc))
	}
	if updBig.Op != OpUpdate || updBig.After["v"] != 1.0 || updBig.After["doc"] != "<unchanged>" ||
		updBig.After["blob"] != base64.StdEncoding.EncodeToString([]byte("<unchanged>")) {
		t.Fatalf("update without REPLICA IDENTITY FULL: v=%v doc=%.40v blob=%.40v; want v=1 and the placeholder in doc and blob",
			updBig.After["v"], updBig.After["doc"], updBig.After["blob"])
	}
	if updFull.Op != OpUpdate || updFull.After["v"] != 1.0 || updFull.After["doc"] != insFull.After["doc"] {
		t.Fatalf("update with REPLICA IDENTITY FULL: v=%v doc=%.40v; want v=1 and the inserted doc", updFull.After["v"], updFull.After["doc"])
	}
}

// An UPDATE that changes the primary key arrives as a delete of the old
// key (with its tombstone) and a create of the new one (a consumer keyed by
// the primary key would otherwise keep the old row), whatever the replica
// identity; an update that keeps the key stays one update.
func TestKeyChangeIsDeleteThenCreate(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "k,kfull"})
	e.exec("CREATE TABLE k (id int PRIMARY KEY, v text)", "CREATE TABLE kfull (id int PRIMARY KEY, v text)", "ALTER TABLE kfull REPLICA IDENTITY FULL")
	cfgs, _ := taskConfigs(t, e.config, 1)
	e.run(cfgs[0])
	e.waitSlotActive("cdc_slot")
	e.exec("INSERT INTO k VALUES (1, 'a')", "INSERT INTO kfull VALUES (1, 'a')",
		"UPDATE k SET id = 2 WHERE id = 1", "UPDATE kfull SET id = 2, v = 'b' WHERE id = 1",
		"UPDATE kfull SET id = id, v = 'c' WHERE id = 2")
	evs := e.consume([]string{"pg.public.k", "pg.public.kfull"}, 9, 300*time.Millisecond)
	byCommit(evs)
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s %s key=%v before=%v after=%v", strings.TrimPrefix(ev.Topic, "pg.public."), ev.op(), ev.Key["id"], ev.Before, ev.After))
	}
	want := []string{
		"k c key=1 before=map[] after=map[id:1 v:a]",
		"kfull c key=1 before=map[] after=map[id:1 v:a]",
		"k d key=1 before=map[id:1 v:<nil>] after=map[]",
		"k tombstone key=1 before=map[] after=map[]",
		"k c key=2 before=map[] after=map[id:2 v:a]",
		"kfull d key=1 before=map[id:1 v:a] after=map[]",
		"kfull tombstone key=1 before=map[] after=map[]",
		"kfull c key=2 before=map[] after=map[id:2 v:b]",
		"kfull u key=2 before=map[id:2 v:b] after=map[id:2 v:c]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// With tombstones.on.delete=false a delete (also the delete half of a key
// change) is its event alone. With the default, a table without a primary
// key gets no tombstones: its records have no key for one to delete.
func TestNoTombstones(t *testing.T) {
	run := func(t *testing.T, config map[string]string, sql []string, topics []string, want []string) {
		t.Helper()
		e := newEnv(t, config)
		e.exec(sql[0])
		cfgs, _ := taskConfigs(t, e.config, 1)
		e.run(cfgs[0])
		e.waitSlotActive("cdc_slot")
		e.exec(sql[1:]...)
		evs := e.consume(topics, len(want), 500*time.Millisecond)
		byCommit(evs)
		var got []string
		for _, ev := range evs {
			got = append(got, fmt.Sprintf("%s %s %d", strings.TrimPrefix(ev.Topic, "pg.public."), ev.op(), ev.id()))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	t.Run("off", func(t *testing.T) {
		run(t, map[string]string{"snapshot.mode": "never", "table.include.list": "k", KeyTombstonesOnDelete: "FALSE"},
			[]string{"CREATE TABLE k (id int PRIMARY KEY, v text)",
				"INSERT INTO k VALUES (1, 'a'), (2, 'b')", "DELETE FROM k WHERE id = 1", "UPDATE k SET id = 3 WHERE id = 2", "INSERT INTO k VALUES (4, 'd')"},
			[]string{"pg.public.k"},
			[]string{"k c 1", "k c 2", "k d 1", "k d 2", "k c 3", "k c 4"})
	})
	t.Run("no primary key", func(t *testing.T) {
		run(t, map[string]string{"snapshot.mode": "never", "table.include.list": "nokey,k"},
			[]string{"CREATE TABLE nokey (id int, v text); ALTER TABLE nokey REPLICA IDENTITY FULL; CREATE TABLE k (id int PRIMARY KEY)",
				"INSERT INTO nokey VALUES (1, 'a')", "DELETE FROM nokey WHERE id = 1", "INSERT INTO k VALUES (5)", "DELETE FROM k WHERE id = 5"},
			[]string{"pg.public.nokey", "pg.public.k"},
			[]string{"nokey c 1", "nokey d 1", "k c 5", "k d 5", "k tombstone 5"})
	})
}
