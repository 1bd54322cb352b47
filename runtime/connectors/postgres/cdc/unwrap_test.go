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
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/sink"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// The CDC source feeds the PostgreSQL sink directly through the unwrap
// transform: snapshot rows, inserts and updates land as rows, a delete
// removes its row (a tombstone with delete.enabled), a truncate is
// dropped without failing the sink.
func TestUnwrapFeedsThePostgresSink(t *testing.T) {
	e := newEnv(t, map[string]string{"table.include.list": "public.items"})
	e.exec("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int)",
		"INSERT INTO items VALUES (1, 'apple', 10), (2, 'pear', 5)",
		"CREATE TABLE items_copy (id int PRIMARY KEY, name text, qty int)")
	cfgs, _ := taskConfigs(t, e.config, 1)

	status := func(what string) task.StatusReporter {
		return task.StatusFunc(func(id task.ID, s task.State, trace string) {
			if s == task.StateFailed {
				t.Errorf("%s task failed: %s", what, trace)
			}
		})
	}
	// JSON with schemas: the worker's default converters.
	src, err := task.New(task.Spec{
		Common: task.Common{ID: task.ID{Connector: "cdc", Task: 0}, Config: cfgs[0], Kafka: e.opts,
			Status: status("source"), Logger: testLogger(t), OffsetFlushInterval: 100 * time.Millisecond},
		Plugin: Plugin(), Connector: e.config, Offsets: store.TaskOffsets{Store: e.offsets},
	})
	tasktest.Start(t, src, err)
	e.waitSlotActive("cdc_slot")

	sinkCfg := map[string]string{
		"name": "copy", "connector.class": "PostgresSink", "topics": "pg.public.items",
		"connection.url": e.url, "table.name.format": "items_copy", "insert.mode": "upsert",
		"pk.mode": "record_key", "delete.enabled": "true",
		"transforms": "unwrap", "transforms.unwrap.type": "unwrap",
	}
	if res := plugin.ValidateConfig(context.Background(), sink.Plugin(), sinkCfg); res.ErrorCount != 0 {
		t.Fatalf("sink config refused: %+v", res.Errors())
	}
	snk, err := task.New(task.Spec{
		Common: task.Common{ID: task.ID{Connector: "copy", Task: 0}, Config: sinkCfg, Kafka: e.opts,
			Status: status("sink"), Logger: testLogger(t), OffsetFlushInterval: 100 * time.Millisecond},
		Plugin: sink.Plugin(), Connector: sinkCfg,
	})
	tasktest.Start(t, snk, err)

	copied := func() string {
		return pgtest.QueryString(t, e.url, "SELECT coalesce(string_agg(id || ':' || name || ':' || coalesce(qty::text, '-'), ',' ORDER BY id), '') FROM items_copy")
	}
	wait := func(want string) {
		t.Helper()
		testkit.EventuallyTrue(t, 20*time.Second, "items_copy = "+want, func() bool { return copied() == want })
	}
	wait("1:apple:10,2:pear:5") // the snapshot
	e.exec("INSERT INTO items VALUES (3, 'fig', NULL)", "UPDATE items SET qty = 11 WHERE id = 1", "DELETE FROM items WHERE id = 2")
	wait("1:apple:11,3:fig:-")
	e.exec("TRUNCATE items", "INSERT INTO items VALUES (4, 'kiwi', 2)")
	wait("1:apple:11,3:fig:-,4:kiwi:2") // the truncate went nowhere; the sink goes on
}
