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
	"errors"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// The backlog counts the rows past each table's stored offset, with the
// task's own conditions; bulk mode has none. A reader that keeps SELECT
// on the incrementing column only (the table's other columns refused) can
// still be counted, and its task's refused query is a retriable error that
// leaves the task running, not a panic (pgx reports the refusal on the first
// read, with no field descriptions).
func TestBacklogAndARefusedQuery(t *testing.T) {
	url := pg.CreateDatabase(t)
	db := pgtest.DatabaseName(url)
	pgtest.ExecURL(t, url,
		"CREATE TABLE a (id bigint PRIMARY KEY, note text)", "CREATE TABLE b (id bigint PRIMARY KEY, note text)",
		"INSERT INTO a SELECT g, 'x' FROM generate_series(1, 100) g", "INSERT INTO b SELECT g, 'y' FROM generate_series(1, 30) g",
		"DROP ROLE IF EXISTS reader_"+db, "CREATE ROLE reader_"+db+" LOGIN PASSWORD 'Reader-Pw-1'",
		"GRANT SELECT ON a, b TO reader_"+db)
	cfg := with(baseConfig(pg.URLAs("reader_"+db, "Reader-Pw-1", db)), KeyTableWhitelist, "a,b", KeyBatchMaxRows, "10")
	ctx := context.Background()
	store := plugintest.NewOffsetStore()
	if u := (&Connector{}).BacklogUnit(cfg); u != plugin.BacklogRows {
		t.Fatalf("unit %q, want %q", u, plugin.BacklogRows)
	}
	backlog := func() int64 { t.Helper(); return plugintest.Backlog(t, ctx, &Connector{}, cfg, store) }
	if n := backlog(); n != 130 {
		t.Fatalf("no stored offsets: backlog %d, want 130", n)
	}
	if err := store.Put(map[string]any{"table": "public.a"}, map[string]any{"incrementing": int64(40)}); err != nil {
		t.Fatal(err)
	}
	if n := backlog(); n != 90 {
		t.Fatalf("a at id 40: backlog %d, want 60 + 30", n)
	}
	if _, err := (&Connector{}).Backlog(ctx, with(cfg, KeyMode, ModeBulk), store); !errors.Is(err, plugin.ErrNoBacklog) {
		t.Fatalf("bulk mode: %v, want ErrNoBacklog", err)
	}
	if u := (&Connector{}).BacklogUnit(with(cfg, KeyMode, ModeBulk)); u != "" {
		t.Fatalf("bulk mode unit %q", u)
	}

	task := startTask(t, cfg, store)
	pgtest.ExecURL(t, url, "REVOKE SELECT ON a, b FROM reader_"+db, "GRANT SELECT (id) ON a, b TO reader_"+db)
	for range 3 {
		recs, err := task.Poll(ctx)
		if err == nil || !errors.Is(err, plugin.ErrRetriable) {
			t.Fatalf("a refused query: %d records, error %v; want a retriable error", len(recs), err)
		}
	}
	if n := backlog(); n != 90 {
		t.Fatalf("with SELECT on id only: backlog %d, want 90", n)
	}
	pgtest.ExecURL(t, url, "GRANT SELECT ON a, b TO reader_"+db)
	var got int
	for range 50 {
		recs, err := task.Poll(ctx)
		if err != nil && !errors.Is(err, plugin.ErrRetriable) {
			t.Fatal(err)
		}
		got += len(recs)
		if got >= 90 {
			break
		}
	}
	if got != 90 {
		t.Fatalf("after SELECT came back the task read %d rows, want 90", got)
	}
}
