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
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// masterPos is the server's own view of where its binlog ends.
func masterPos(t *testing.T, db *sql.DB) (string, int64) {
	t.Helper()
	rows, err := db.Query("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	var file string
	var pos int64
	vals[0], vals[1] = &file, &pos
	for i := 2; i < len(vals); i++ {
		vals[i] = new(sql.RawBytes)
	}
	if !rows.Next() {
		t.Fatal("no master status")
	}
	if err := rows.Scan(vals...); err != nil {
		t.Fatal(err)
	}
	return file, pos
}

// TestBinlogBacklog on MariaDB: nothing stored is 0; with the task
// stopped, writes put the figure at the server's binlog end minus the
// stored position (bracketed by SHOW MASTER STATUS before and after), and
// past a binlog rotation it adds the new file; once the task runs again
// and delivers the last change, it falls to that last transaction's size.
func TestBinlogBacklog(t *testing.T) {
	e := newEnv(t)
	srv.ExecT(t, e.database, "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(200))", "INSERT INTO b VALUES (0, 'x')")
	e.config[KeyTableIncludeList] = "b"
	cfg, err := mycommon.Config(e.config)
	if err != nil {
		t.Fatal(err)
	}
	part := map[string]any{PartitionServer: cfg.Addr}
	c := &Connector{}
	if u := c.BacklogUnit(e.config); u != plugin.BacklogBytes {
		t.Fatalf("unit %q", u)
	}
	backlog := func() int64 {
		t.Helper()
		store := plugintest.NewOffsetStore()
		if off := e.offsets.Offset("mycdc", part); off != nil {
			if err := store.Put(part, off); err != nil {
				t.Fatal(err)
			}
		}
		return plugintest.Backlog(t, context.Background(), c, e.config, store)
	}
	if got := backlog(); got != 0 {
		t.Fatalf("nothing stored: backlog %d, want 0", got)
	}
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	cons := e.consumer("my." + e.database + ".b")
	r := e.run()
	srv.ExecT(t, e.database, "INSERT INTO b VALUES (1, 'x')")
	cons.until("the snapshot and a streamed insert", func(evs []event) bool { return len(evs) >= 2 })
	e.stop(r)
	stored := e.offsets.Offset("mycdc", part)
	if stored == nil {
		t.Fatal("no stored position after a graceful stop")
	}
	p, err := parsePosition(stored)
	if err != nil {
		t.Fatal(err)
	}

	srv.ExecT(t, e.database, "INSERT INTO b SELECT seq, REPEAT('y', 100) FROM seq_2_to_1001")
	file, before := masterPos(t, db)
	got := backlog()
	_, after := masterPos(t, db)
	t.Logf("behind: server at %s:%d..%d, stored %s:%d, backlog %d", file, before, after, p.file, p.pos, got)
	if file != p.file || got < before-int64(p.pos) || got > after-int64(p.pos) || got < 100_000 {
		t.Fatalf("1000 rows of 100 bytes behind: backlog %d, want the server's end minus the stored %s:%d (%d..%d on %s), over 100000",
			got, p.file, p.pos, before-int64(p.pos), after-int64(p.pos), file)
	}

	srv.ExecT(t, e.database, "FLUSH BINARY LOGS", "INSERT INTO b VALUES (2000, 'z')")
	newFile, newPos := masterPos(t, db)
	rotated := backlog()
	t.Logf("after a rotation to %s:%d: backlog %d", newFile, newPos, rotated)
	if newFile == file || rotated < got+newPos || rotated > got+newPos+1024 {
		t.Fatalf("after rotating to %s (at %d): backlog %d, want the old file's rest (%d and its rotate event) plus %d", newFile, newPos, rotated, got, newPos)
	}

	e.run()
	cons.until("the 1001 rows written while stopped", func(evs []event) bool { return len(evs) >= 2+1001 })
	testkit.EventuallyTrue(t, 20*time.Second, "the backlog below 2 KiB once the last insert is stored", func() bool { return backlog() < 2048 })
	t.Logf("caught up: backlog %d", backlog())

	// A stored file the server no longer has: an error saying what to do.
	gone := plugintest.NewOffsetStore()
	if err := gone.Put(part, map[string]any{OffsetFile: "binlog.999999", OffsetPos: int64(4)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Backlog(context.Background(), e.config, gone); err == nil || !strings.Contains(err.Error(), "no longer has the binlog binlog.999999") || !strings.Contains(err.Error(), "reset the connector's offsets") {
		t.Fatalf("stored file not on the server: want an error naming it and the fix, got %v", err)
	}
}
