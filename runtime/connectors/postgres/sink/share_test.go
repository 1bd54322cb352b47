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
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// The version guard: with upsert.version.column an older record, put after
// a newer one of the same key (as share mode delivers them), never
// overwrites it, whether it arrives in a later batch (the WHERE of the
// upsert) or in the same batch (the newest offset wins the deduplication);
// auto.create adds the column.
func TestUpsertVersionGuardKeepsNewest(t *testing.T) {
	url := pg.CreateDatabase(t)
	task := startTask(t, with(baseConfig(url), KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyAutoCreate, "true", KeyUpsertVersionColumn, "kafka_offset"))
	rows := func() string {
		return pgtest.QueryString(t, url, `SELECT string_agg(format('%s:%s:%s@%s', id, qty, note, kafka_offset), ' ' ORDER BY id) FROM orders`)
	}
	putFlush(t, task, order(10, 1, 10, "new"), order(11, 2, 20, "b-new"))
	putFlush(t, task, order(3, 1, 3, "old")) // older, in a later batch
	if got, want := rows(), "1:10:new@10 2:20:b-new@11"; got != want {
		t.Fatalf("after an older record in a later batch: rows %q, want %q", got, want)
	}
	putFlush(t, task, order(12, 2, 21, "b-newest"), order(5, 2, 5, "b-old")) // older, last in its batch
	if got, want := rows(), "1:10:new@10 2:21:b-newest@12"; got != want {
		t.Fatalf("after an older record last in its batch: rows %q, want %q", got, want)
	}
	putFlush(t, task, order(20, 1, 99, "newer"))
	if got := pgtest.QueryString(t, url, `SELECT format('%s:%s@%s', qty, note, kafka_offset) FROM orders WHERE id = 1`); got != "99:newer@20" {
		t.Fatalf("a newer record did not win: %q", got)
	}
}

// Which configurations take consumer.group.type=share, and the refusals
// naming the key.
func TestShareModeValidation(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, "CREATE TABLE orders (id bigint PRIMARY KEY, qty int, v bigint)")
	share := func(kv ...string) map[string]string {
		return with(baseConfig(url), append([]string{plugin.KeyConsumerGroupType, "share"}, kv...)...)
	}
	refused := []struct {
		name, substr string
		cfg          map[string]string
	}{
		{"upsert without guard", "set upsert.version.column", share(KeyInsertMode, "upsert", KeyPKMode, "record_key")},
		{"insert with a key", "fails on a record delivered again", share(KeyPKMode, "kafka")},
		{"deletes", "set delete.enabled=false", share(KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyUpsertVersionColumn, "v", KeyDeleteEnabled, "true")},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			res := plugin.ValidateConfig(context.Background(), Plugin(), c.cfg)
			for _, fe := range res.Errors() {
				if fe.Name == plugin.KeyConsumerGroupType && strings.Contains(fe.Message, c.substr) {
					return
				}
			}
			t.Fatalf("want an error on %s containing %q, got %v", plugin.KeyConsumerGroupType, c.substr, res.Errors())
		})
	}
	for _, ok := range []map[string]string{
		share(),
		share(KeyInsertMode, "upsert", KeyPKMode, "record_key", KeyUpsertVersionColumn, "v"),
		with(baseConfig(url), KeyInsertMode, "upsert", KeyPKMode, "record_key"), // classic mode needs no guard
	} {
		if res := plugin.ValidateConfig(context.Background(), Plugin(), ok); res.ErrorCount != 0 {
			t.Errorf("valid config refused: %v", res.Errors())
		}
	}
	res := plugin.ValidateConfig(context.Background(), Plugin(), with(baseConfig(url), KeyUpsertVersionColumn, "v"))
	if errs := res.Errors(); len(errs) != 1 || errs[0].Name != KeyUpsertVersionColumn {
		t.Fatalf("upsert.version.column with insert.mode=insert: %v, want one error naming the key", errs)
	}
}
