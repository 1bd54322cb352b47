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
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// With exactly.once=true a plain-insert sink (no primary key at all)
// writes each record once however often it is delivered: the batch and
// its offsets commit in one transaction, records below the stored offset
// are dropped, a new task instance seeks to the stored offsets in Open,
// and an operator's offset change (PATCH/DELETE .../offsets) moves the
// stored offsets with it.
func TestExactlyOnceInsertModeWritesEachRecordOnce(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, "CREATE TABLE orders (id bigint, qty integer, note text, price numeric, at timestamp)")
	cfg := with(baseConfig(url), KeyExactlyOnce, "true")
	count := func() string {
		return pgtest.QueryString(t, url, `SELECT count(*) || '/' || count(DISTINCT id) FROM orders`)
	}

	task := startTask(t, cfg)
	putFlush(t, task, order(0, 1, 1, "a"), order(1, 2, 2, "b"), order(2, 3, 3, "c"))
	putFlush(t, task, order(1, 2, 2, "b"), order(2, 3, 3, "c"), order(3, 4, 4, "d")) // redelivered, plus one new
	if got := count(); got != "4/4" {
		t.Fatalf("rows/distinct ids %s, want 4/4: a redelivered record was written again", got)
	}
	if got := pgtest.QueryString(t, url, `SELECT string_agg(format('%s/%s/%s=%s', connector, topic, kafka_partition, next_offset), ' ') FROM conveyor_sink_offsets`); got != "pg-sink/orders/0=4" {
		t.Fatalf("stored offsets %q, want pg-sink/orders/0=4", got)
	}

	// A new instance (after a crash or a rebalance) seeks to the table's offsets.
	tc := plugintest.NewSinkTaskContext()
	next := &Task{}
	if err := next.Start(context.Background(), tc, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = next.Stop() })
	tp := plugin.TopicPartition{Topic: "orders", Partition: 0}
	if err := next.Open(context.Background(), []plugin.TopicPartition{tp, {Topic: "orders", Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := tc.Resets(); len(got) != 1 || got[tp] != 4 {
		t.Fatalf("Open asked to seek to %v, want orders-0 at 4 (and nothing for orders-1, which has no row)", got)
	}

	// PATCH back to offset 2: the stored offset follows, so records 2 and
	// 3 are written again as the operator asked.
	conn := &Connector{}
	two := int64(2)
	if err := conn.AlterSinkOffsets(context.Background(), cfg, map[plugin.TopicPartition]*int64{tp: &two}, false); err != nil {
		t.Fatal(err)
	}
	putFlush(t, next, order(2, 3, 3, "c"), order(3, 4, 4, "d"))
	if got := count(); got != "6/4" {
		t.Fatalf("rows/distinct ids %s after rewinding to 2, want 6/4", got)
	}
	// DELETE (reset): the row goes; the consumer group's offsets decide again.
	if err := conn.AlterSinkOffsets(context.Background(), cfg, nil, true); err != nil {
		t.Fatal(err)
	}
	if got := pgtest.QueryString(t, url, `SELECT count(*) FROM conveyor_sink_offsets`); got != "0" {
		t.Fatalf("%s offset rows after a reset, want 0", got)
	}
}

// Tasks of one sink start at once and each creates the offsets table when
// it is missing: the sessions that lose the race to create it see the
// catalog's answer (a unique violation, "relation already exists" or
// "type already exists", depending on where they met) and go on, since the
// table is there. 6 sessions at once, 15 times over.
func TestOffsetsTableCreatedByTasksAtOnce(t *testing.T) {
	url := pg.CreateDatabase(t)
	ctx := context.Background()
	const sessions, rounds = 6, 15
	conns := make([]*pgx.Conn, sessions)
	for i := range conns {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		conns[i] = c
	}
	for r := range rounds {
		tbl := pgcommon.Table{Name: fmt.Sprintf("offsets_%d", r)}
		errs := make(chan error, sessions)
		start := make(chan struct{})
		for _, c := range conns {
			go func() { <-start; errs <- ensureOffsetsTable(ctx, c, tbl) }()
		}
		close(start)
		for range sessions {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
	}
}
