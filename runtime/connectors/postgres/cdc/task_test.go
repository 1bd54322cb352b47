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
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// These tests drive the task through the plugin API directly, standing in
// for the runner, to control exactly which records count as acknowledged.

func startTask(t *testing.T, config map[string]string, offsets *plugintest.OffsetStore) *Task {
	t.Helper()
	tk := Plugin().NewSourceTask().(*Task)
	if err := tk.Start(context.Background(), &plugintest.SourceTaskContext{Store: offsets, Log: testLogger(t)}, config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tk.Stop() })
	return tk
}

// pollN polls until n records arrived.
func pollN(t *testing.T, tk *Task, n int) []*plugin.SourceRecord {
	t.Helper()
	var out []*plugin.SourceRecord
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("polled %d of %d records within 20s", len(out), n)
		}
		recs, err := tk.Poll(context.Background())
		if err != nil && !plugin.IsRetriable(err) {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func rowID(r *plugin.SourceRecord) int32 {
	env := r.Value.(*data.Struct)
	row, _ := env.Get(FieldAfter).(*data.Struct)
	if row == nil {
		row, _ = env.Get(FieldBefore).(*data.Struct)
	}
	id, _ := row.Get("id").(int32)
	return id
}

// A restart in the middle of a large transaction, after only some of its
// records were acknowledged and stored, resumes with the next record of
// that transaction: none skipped, none repeated. Until the task's Commit,
// the server's confirmed position does not move; after it, it moves no
// further than the stored position allows.
func TestResumeInsideTransaction(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "t", "batch.size": "7"})
	e.exec("CREATE TABLE t (id int PRIMARY KEY, v text)")
	offsets := plugintest.NewOffsetStore()
	tk := startTask(t, e.config, offsets)
	if recs, err := tk.Poll(context.Background()); err != nil || len(recs) != 0 { // sets up slot and stream
		t.Fatalf("first poll: %d records, %v", len(recs), err)
	}
	e.waitSlotActive("cdc_slot")
	start := e.confirmedFlush("cdc_slot")
	e.exec("BEGIN", "INSERT INTO t SELECT g, 'x' FROM generate_series(1, 30) g", "COMMIT",
		"INSERT INTO t VALUES (31, 'y')")
	recs := pollN(t, tk, 31)
	for i, r := range recs {
		if got := rowID(r); got != int32(i+1) {
			t.Fatalf("record %d is row %d, want %d", i, got, i+1)
		}
	}
	txLSN, err := parsePosition(recs[0].SourceOffset)
	if err != nil {
		t.Fatal(err)
	}

	// Nothing acknowledged yet: several status intervals pass and the
	// server's position stays before the transaction's commit (it may
	// move over WAL without delivered changes), so a restart gets it again.
	testkit.Consistently(t, 3*500*time.Millisecond, "confirmed_flush_lsn before the transaction's commit while nothing is acknowledged", func() (bool, string) {
		got := e.confirmedFlush("cdc_slot")
		return got < txLSN.lsn && got >= start, fmt.Sprintf("confirmed_flush_lsn is %s (from %s); the transaction commits at %s", got, start, txLSN.lsn)
	})

	// Kafka acknowledged the first 12; their offset is stored; Commit.
	for _, r := range recs[:12] {
		if err := tk.CommitRecord(r, &plugin.RecordMetadata{Topic: r.Topic}); err != nil {
			t.Fatal(err)
		}
	}
	if err := offsets.Put(recs[11].SourcePartition, recs[11].SourceOffset); err != nil {
		t.Fatal(err)
	}
	if err := tk.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The transaction is only partly stored: the server may move up to
	// its commit (so it sends it again after a restart) but not past it.
	testkit.EventuallyTrue(t, 5*time.Second, "confirmed position at the transaction's commit LSN", func() bool {
		return e.confirmedFlush("cdc_slot") == txLSN.lsn
	})
	if err := tk.Stop(); err != nil {
		t.Fatal(err)
	}

	tk2 := startTask(t, e.config, offsets)
	again := pollN(t, tk2, 19)
	for i, r := range again {
		if got := rowID(r); got != int32(13+i) {
			t.Fatalf("after the restart, record %d is row %d, want %d", i, got, 13+i)
		}
	}
	extra, err := tk2.Poll(context.Background())
	if err != nil || len(extra) != 0 {
		t.Fatalf("after the last change: %d more records (%v)", len(extra), err)
	}

	// Everything acknowledged and stored: the server confirms past the
	// last transaction.
	for _, r := range again {
		if err := tk2.CommitRecord(r, &plugin.RecordMetadata{Topic: r.Topic}); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := parsePosition(again[len(again)-1].SourceOffset)
	if err := offsets.Put(again[0].SourcePartition, again[len(again)-1].SourceOffset); err != nil {
		t.Fatal(err)
	}
	if err := tk2.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 5*time.Second, "confirmed position past the last transaction", func() bool {
		return e.confirmedFlush("cdc_slot") > last.lsn
	})
}

// The task answers the server in time even while it is not polled and its
// buffer is full: with wal_sender_timeout=1s and no Poll for three
// seconds, the replication connection survives (same server process) and
// every change arrives.
func TestKeepsConnectionWhileNotPolled(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "t", "batch.size": "2", "status.interval.ms": "300"})
	e.config["connection.url"] += "&options=-c%20wal_sender_timeout%3D1000"
	e.exec("CREATE TABLE t (id int PRIMARY KEY)")
	tk := startTask(t, e.config, plugintest.NewOffsetStore())
	if _, err := tk.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitSlotActive("cdc_slot")
	pid := func() int32 {
		var p int32
		if err := e.db.QueryRow(context.Background(), "SELECT coalesce(active_pid, 0) FROM pg_replication_slots WHERE slot_name = 'cdc_slot'").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The setting reaches replication connections.
	probe, err := newConn(e.config).connectReplication(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.Exec(context.Background(), "SHOW wal_sender_timeout").ReadAll()
	_ = probe.Close(context.Background())
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 || string(res[0].Rows[0][0]) != "1s" {
		t.Fatalf("wal_sender_timeout of a replication connection: %v %v", res, err)
	}
	before := pid()
	e.exec("INSERT INTO t SELECT g FROM generate_series(1, 20) g") // more than the task buffers (2 x batch.size)
	testkit.Consistently(t, 3*time.Second, "the replication connection stays (the task answers within wal_sender_timeout)", func() (bool, string) {
		got := pid()
		return got == before, fmt.Sprintf("the server process was %d, now %d", before, got)
	})
	recs := pollN(t, tk, 20)
	for i, r := range recs {
		if rowID(r) != int32(i+1) {
			t.Fatalf("record %d is row %d", i, rowID(r))
		}
	}
}

// A column added while streaming shows up in the records after the change
// (pgoutput sends a new Relation message), and rows from before keep the
// old shape.
func TestColumnAddedWhileStreaming(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "t"})
	e.exec("CREATE TABLE t (id int PRIMARY KEY)")
	tk := startTask(t, e.config, plugintest.NewOffsetStore())
	if _, err := tk.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitSlotActive("cdc_slot")
	e.exec("INSERT INTO t VALUES (1)", "ALTER TABLE t ADD COLUMN label text", "INSERT INTO t VALUES (2, 'two')")
	recs := pollN(t, tk, 2)
	first := recs[0].Value.(*data.Struct).Get(FieldAfter).(*data.Struct)
	second := recs[1].Value.(*data.Struct).Get(FieldAfter).(*data.Struct)
	if len(first.Schema().Fields) != 1 || second.Get("label") != "two" || len(second.Schema().Fields) != 2 {
		t.Fatalf("rows %v (%s) and %v (%s)", first, first.Schema(), second, second.Schema())
	}
	if k := recs[1].Key.(*data.Struct); k.Get("id") != int32(2) {
		t.Fatalf("key %v", k)
	}
}

// streamingTask starts a task on table t (id int PRIMARY KEY, v text)
// without a snapshot and waits until it reads the slot.
func streamingTask(t *testing.T) (*env, *plugintest.OffsetStore, *Task) {
	t.Helper()
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "t"})
	e.exec("CREATE TABLE t (id int PRIMARY KEY, v text)")
	offsets := plugintest.NewOffsetStore()
	tk := startTask(t, e.config, offsets)
	if _, err := tk.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitSlotActive("cdc_slot")
	return e, offsets, tk
}

// A delete is its event and then its tombstone; the event carries the
// position before the change and the tombstone the change's own, so a
// restart after the event was stored but before the tombstone was emits
// both again instead of losing the tombstone. The same holds for the
// delete half of a key-changing update (event, tombstone, then the create
// carries the change's position). A restart after everything was stored
// repeats nothing.
func TestTombstoneSurvivesRestart(t *testing.T) {
	e, offsets, tk := streamingTask(t)
	e.exec("INSERT INTO t VALUES (1, 'a'), (2, 'b')", "DELETE FROM t WHERE id = 1", "UPDATE t SET id = 3 WHERE id = 2")

	describe := func(recs []*plugin.SourceRecord) string {
		var b strings.Builder
		for _, r := range recs {
			k, _ := r.Key.(*data.Struct)
			op := "tombstone"
			if r.Value != nil {
				op, _ = r.Value.(*data.Struct).Get(FieldOp).(string)
			}
			p, err := parsePosition(r.SourceOffset)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v seq=%d; ", op, k.Get("id"), p.seq)
		}
		return b.String()
	}
	store := func(tk *Task, recs []*plugin.SourceRecord) {
		t.Helper()
		for _, r := range recs {
			if err := tk.CommitRecord(r, &plugin.RecordMetadata{Topic: r.Topic}); err != nil {
				t.Fatal(err)
			}
		}
		if err := offsets.Put(recs[0].SourcePartition, recs[len(recs)-1].SourceOffset); err != nil {
			t.Fatal(err)
		}
		if err := tk.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := tk.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	recs := pollN(t, tk, 7)
	// Positions count the changes of each transaction.
	if got, want := describe(recs), "c 1 seq=1; c 2 seq=2; d 1 seq=0; tombstone 1 seq=1; d 2 seq=0; tombstone 2 seq=0; c 3 seq=1; "; got != want {
		t.Fatalf("records:\n got %s\nwant %s", got, want)
	}
	del, tomb := recs[2], recs[3]
	if tomb.Value != nil || tomb.ValueSchema != nil || tomb.Topic != del.Topic || tomb.KeySchema != del.KeySchema ||
		!reflect.DeepEqual(tomb.Key, del.Key) || !reflect.DeepEqual(tomb.SourcePartition, del.SourcePartition) || !tomb.Timestamp.Equal(del.Timestamp) {
		t.Fatalf("tombstone %+v does not match its delete %+v", tomb, del)
	}

	// Stored through the first delete event, not its tombstone.
	store(tk, recs[:3])
	tk2 := startTask(t, e.config, offsets)
	again := pollN(t, tk2, 5)
	if got, want := describe(again), "d 1 seq=0; tombstone 1 seq=1; d 2 seq=0; tombstone 2 seq=0; c 3 seq=1; "; got != want {
		t.Fatalf("after a restart between a delete and its tombstone:\n got %s\nwant %s", got, want)
	}

	// Stored through the key change's tombstone, not its create.
	store(tk2, again[:4])
	tk3 := startTask(t, e.config, offsets)
	again = pollN(t, tk3, 3)
	if got, want := describe(again), "d 2 seq=0; tombstone 2 seq=0; c 3 seq=1; "; got != want {
		t.Fatalf("after a restart inside a key change:\n got %s\nwant %s", got, want)
	}

	// Everything stored: the next run starts with the next change.
	store(tk3, again)
	tk4 := startTask(t, e.config, offsets)
	e.exec("INSERT INTO t VALUES (4, 'd')")
	if got, want := describe(pollN(t, tk4, 1)), "c 4 seq=1; "; got != want {
		t.Fatalf("after a restart with everything stored: got %s, want %s", got, want)
	}
}

// Kafka may acknowledge records out of order (they sit in different
// partitions): here the create of a key change before the change's delete
// and tombstone. The runner stores only the offset of the last record
// acknowledged together with all before it, so the server must not be
// told more either: after a restart from the stored offset the delete,
// its tombstone and the create arrive again.
func TestOutOfOrderAcksConfirmNoFurther(t *testing.T) {
	e, offsets, tk := streamingTask(t)
	e.exec("INSERT INTO t VALUES (1, 'a')", "UPDATE t SET id = 2 WHERE id = 1")
	recs := pollN(t, tk, 4) // c 1; d 1, tombstone 1, c 2
	if recs[2].Value != nil || recs[3].Key.(*data.Struct).Get("id") != int32(2) {
		t.Fatalf("records %v", recs)
	}
	ins, keyChange := recs[0], recs[1:]
	for _, r := range []*plugin.SourceRecord{ins, keyChange[2]} {
		if err := tk.CommitRecord(r, &plugin.RecordMetadata{Topic: r.Topic}); err != nil {
			t.Fatal(err)
		}
	}
	// What the runner stores: the insert's offset, the only one whose
	// record and all earlier ones were acknowledged.
	if err := offsets.Put(ins.SourcePartition, ins.SourceOffset); err != nil {
		t.Fatal(err)
	}
	if err := tk.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tk.Stop(); err != nil { // sends the confirmed position
		t.Fatal(err)
	}
	insPos, _ := parsePosition(ins.SourceOffset)
	keyPos, _ := parsePosition(keyChange[0].SourceOffset)
	if got := e.confirmedFlush("cdc_slot"); got > keyPos.lsn {
		t.Errorf("confirmed_flush_lsn %s is past the key change's commit %s (the insert committed at %s)", got, keyPos.lsn, insPos.lsn)
	}
	tk2 := startTask(t, e.config, offsets)
	again := pollN(t, tk2, 3)
	for i, r := range again {
		if !reflect.DeepEqual(r.Key, keyChange[i].Key) || (r.Value == nil) != (keyChange[i].Value == nil) ||
			!reflect.DeepEqual(r.SourceOffset, keyChange[i].SourceOffset) {
			t.Fatalf("after the restart, record %d is %+v, want %+v", i, r, keyChange[i])
		}
	}
}
