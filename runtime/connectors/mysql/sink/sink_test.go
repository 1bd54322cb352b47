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
	"database/sql"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
)

var (
	keySchema = data.StructOf("k", data.F("id", data.Int64Schema))
	v1Schema  = data.StructOf("v", data.F("id", data.Int64Schema), data.F("name", data.StringSchema))
	v2Schema  = data.StructOf("v", data.F("id", data.Int64Schema), data.F("name", data.StringSchema), data.F("qty", data.OptionalInt32Schema))
)

func rec(off int64, id int64, value *data.Struct) *plugin.SinkRecord {
	r := &plugin.SinkRecord{Topic: "items", Offset: off, KeySchema: keySchema, Key: data.NewStruct(keySchema).Put("id", id)}
	if value != nil {
		r.ValueSchema, r.Value = value.Schema(), value
	}
	return r
}

func put(t *testing.T, tk *Task, recs ...*plugin.SinkRecord) error {
	t.Helper()
	if err := tk.Put(context.Background(), recs); err != nil {
		return err
	}
	return tk.Flush(context.Background(), nil)
}

// Upserts by record key leave one row per key (a redelivery changes
// nothing), tombstones delete, auto.create makes the table and auto.evolve
// adds a field that appears later; without auto.evolve that record fails
// naming the table and the column.
func TestUpsertDeleteCreateEvolve(t *testing.T) {
	database := srv.CreateDatabase(t)
	cfg := map[string]string{
		"name": "items-sink", plugin.KeyTopics: "items", jdbc.KeyConnectionURL: "jdbc:" + srv.URL(database),
		jdbc.KeyInsertMode: jdbc.InsertModeUpsert, jdbc.KeyPKMode: jdbc.PKModeRecordKey, jdbc.KeyAutoCreate: "true",
		jdbc.KeyDeleteEnabled: "true",
	}
	tk := &Task{}
	if err := tk.Start(context.Background(), plugintest.NewSinkTaskContext(), cfg); err != nil {
		t.Fatal(err)
	}
	batch := []*plugin.SinkRecord{
		rec(0, 1, data.NewStruct(v1Schema).Put("id", int64(1)).Put("name", "one")),
		rec(1, 2, data.NewStruct(v1Schema).Put("id", int64(2)).Put("name", "two")),
		rec(2, 1, data.NewStruct(v1Schema).Put("id", int64(1)).Put("name", "uno")),
		rec(3, 3, data.NewStruct(v1Schema).Put("id", int64(3)).Put("name", "three")),
		rec(4, 3, nil), // tombstone
	}
	if err := put(t, tk, batch...); err != nil {
		t.Fatal(err)
	}
	if err := put(t, tk, batch...); err != nil { // redelivered
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", srv.DSN(database))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := func(cols string) string {
		t.Helper()
		var s sql.NullString
		if err := db.QueryRow("SELECT GROUP_CONCAT(CONCAT_WS(':', " + cols + ") ORDER BY id) FROM items").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s.String
	}
	if got := rows("id, name"); got != "1:uno,2:two" {
		t.Fatalf("rows %q; want 1:uno,2:two (upserted, 3 deleted, redelivery absorbed)", got)
	}
	// A new optional field without auto.evolve fails, naming the column.
	v2 := rec(5, 4, data.NewStruct(v2Schema).Put("id", int64(4)).Put("name", "four").Put("qty", int32(7)))
	err = put(t, tk, v2)
	_ = tk.Stop()
	if err == nil || !strings.Contains(err.Error(), "qty") || !strings.Contains(err.Error(), "auto.evolve") {
		t.Fatalf("new field without auto.evolve: %v; want an error naming qty and auto.evolve", err)
	}
	cfg[jdbc.KeyAutoEvolve] = "true"
	tk = &Task{}
	if err := tk.Start(context.Background(), plugintest.NewSinkTaskContext(), cfg); err != nil {
		t.Fatal(err)
	}
	defer tk.Stop()
	if err := put(t, tk, v2); err != nil {
		t.Fatal(err)
	}
	if got := rows("id, name, qty"); got != "1:uno,2:two,4:four:7" {
		t.Fatalf("rows %q after auto.evolve; want 1:uno,2:two,4:four:7", got)
	}
}

// Configuration rules between keys are refused naming the field.
func TestConfigRules(t *testing.T) {
	res := plugin.ValidateConfig(context.Background(), Plugin(), map[string]string{
		"name": "x", plugin.KeyConnectorClass: "MySqlSink", plugin.KeyTopics: "t", jdbc.KeyConnectionURL: "jdbc:mysql://127.0.0.1:1/db",
		jdbc.KeyInsertMode: jdbc.InsertModeUpsert, jdbc.KeyDeleteEnabled: "true",
	})
	got := map[string]string{}
	for _, e := range res.Errors() {
		got[e.Name] += e.Message
	}
	if !strings.Contains(got[jdbc.KeyPKMode], "upsert needs a primary key") || !strings.Contains(got[jdbc.KeyDeleteEnabled], "record_key") {
		t.Fatalf("errors %v; want pk.mode (upsert) and delete.enabled (record_key) named", got)
	}
}

// exactly.once: batches and their offsets commit together, so plain
// inserts (no key) stay exactly once when Kafka delivers records again; a
// new task seeks to the stored offsets on Open.
func TestExactlyOnceInsertsDropRedeliveries(t *testing.T) {
	database := srv.CreateDatabase(t)
	srv.ExecT(t, database, "CREATE TABLE items (id BIGINT NOT NULL, name VARCHAR(20) NOT NULL)")
	cfg := map[string]string{
		"name": "eos-sink", plugin.KeyTopics: "items", jdbc.KeyConnectionURL: "jdbc:" + srv.URL(database),
		jdbc.KeyExactlyOnce: "true",
	}
	batch := func(from, to int64) []*plugin.SinkRecord {
		var out []*plugin.SinkRecord
		for o := from; o <= to; o++ {
			out = append(out, &plugin.SinkRecord{Topic: "items", Offset: o, ValueSchema: v1Schema,
				Value: data.NewStruct(v1Schema).Put("id", o).Put("name", "n")})
		}
		return out
	}
	tk := &Task{}
	if err := tk.Start(context.Background(), plugintest.NewSinkTaskContext(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := put(t, tk, batch(0, 4)...); err != nil {
		t.Fatal(err)
	}
	_ = tk.Stop()
	// The next owner: seeks to 5, and the records Kafka delivers again
	// (3 and 4, say, committed to the group before the crash) are dropped.
	tc := plugintest.NewSinkTaskContext()
	tk = &Task{}
	if err := tk.Start(context.Background(), tc, cfg); err != nil {
		t.Fatal(err)
	}
	defer tk.Stop()
	tp := plugin.TopicPartition{Topic: "items"}
	if err := tk.Open(context.Background(), []plugin.TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	if got := tc.Resets()[tp]; got != 5 {
		t.Fatalf("Open reset the partition to %d; want the stored 5", got)
	}
	if err := put(t, tk, batch(3, 7)...); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", srv.DSN(database))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, distinct, next int
	if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM items").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT next_offset FROM conveyor_sink_offsets WHERE connector = 'eos-sink' AND topic = 'items'").Scan(&next); err != nil {
		t.Fatal(err)
	}
	if n != 8 || distinct != 8 || next != 8 {
		t.Fatalf("%d rows (%d distinct), stored next offset %d; want 8, 8, 8", n, distinct, next)
	}
}
