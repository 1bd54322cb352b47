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
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// slotLag is PostgreSQL's own view of the slot's lag in bytes.
func (e *env) slotLag(slot string) int64 {
	e.t.Helper()
	var lag int64
	if err := e.db.QueryRow(context.Background(), "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&lag); err != nil {
		e.t.Fatal(err)
	}
	return lag
}

// TestSlotLagBacklog: no slot yet is 0; a slot written past while no task
// reads it lags by what PostgreSQL says (the figure lies between pg's view
// just before and just after it); once the task runs and catches up the
// figure falls to about 0.
func TestSlotLagBacklog(t *testing.T) {
	e := newEnv(t, map[string]string{"snapshot.mode": "never", "table.include.list": "t"})
	e.exec("CREATE TABLE t (id int PRIMARY KEY, v text)")
	c := &Connector{}
	if u := c.BacklogUnit(e.config); u != plugin.BacklogBytes {
		t.Fatalf("unit %q, want %q", u, plugin.BacklogBytes)
	}
	backlog := func() int64 { t.Helper(); return plugintest.Backlog(t, context.Background(), c, e.config, nil) }
	if got := backlog(); got != 0 {
		t.Fatalf("no slot yet: backlog %d, want 0", got)
	}
	e.exec("SELECT pg_create_logical_replication_slot('cdc_slot', 'pgoutput')")
	e.exec("INSERT INTO t SELECT g, repeat('x', 100) FROM generate_series(1, 2000) g")
	// The test server runs with synchronous_commit=off: the WAL writer
	// writes the rows (and pg_current_wal_lsn passes them) within its delay.
	testkit.EventuallyTrue(t, 10*time.Second, "pg's lag of the slot past 200000 bytes", func() bool { return e.slotLag("cdc_slot") > 200_000 })
	before := e.slotLag("cdc_slot")
	got := backlog()
	after := e.slotLag("cdc_slot")
	t.Logf("behind: pg says %d..%d bytes, backlog %d", before, after, got)
	if got < before || got > after {
		t.Fatalf("slot written past by 2000 rows of 100 bytes: backlog %d, want between pg's %d and %d", got, before, after)
	}

	cfgs, _ := taskConfigs(t, e.config, 1)
	e.run(cfgs[0])
	const caughtUp = 16 << 10
	testkit.EventuallyTrue(t, 30*time.Second, "the slot's lag below 16 KiB after the task caught up", func() bool {
		return backlog() < caughtUp
	})
	t.Logf("caught up: backlog %d, pg says %d", backlog(), e.slotLag("cdc_slot"))
}

// TestSlotLagBacklogOtherDatabase: a slot.name of another database's slot
// is an error naming slot.name, not that slot's lag.
func TestSlotLagBacklogOtherDatabase(t *testing.T) {
	e := newEnv(t, nil)
	other := pg.CreateDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pg.Exec(ctx, dbName(other), "SELECT pg_create_logical_replication_slot('cdc_other', 'pgoutput')"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pg.Exec(context.Background(), dbName(other), "SELECT pg_drop_replication_slot('cdc_other')")
	})
	e.config[KeySlotName] = "cdc_other"
	_, err := (&Connector{}).Backlog(ctx, e.config, nil)
	if err == nil || !strings.HasPrefix(err.Error(), KeySlotName+": ") || !strings.Contains(err.Error(), "belongs to database") {
		t.Fatalf("slot of another database: want an error naming %s, got %v", KeySlotName, err)
	}
}

// dbName is the database of a URL.
func dbName(url string) string {
	s := url[strings.LastIndex(url, "/")+1:]
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	return s
}
