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

package jdbc

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// question is a dialect with ? parameters and backticks, as MySQL's.
type question struct{}

func (question) QuoteIdent(n string) string { return "`" + n + "`" }
func (question) Placeholder(int) string     { return "?" }
func (question) OlderThan(col string, _ bool, p string) string {
	return fmt.Sprintf("%s < NOW() - %s", col, p)
}

// The ordered query continues each mode from its position, and nothing
// else: the first query of a table has no lower bound.
func TestQueryPerMode(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	cols := QueryColumns{Inc: "id", Ts: "at"}
	for _, c := range []struct {
		mode string
		pos  Position
		sql  string
		args []any
	}{
		{ModeBulk, Position{}, "SELECT * FROM t", nil},
		{ModeIncrementing, Position{}, "SELECT * FROM t ORDER BY `id`", nil},
		{ModeIncrementing, Position{HasInc: true, Inc: 7}, "SELECT * FROM t WHERE `id` > ? ORDER BY `id`", []any{int64(7)}},
		{ModeTimestamp, Position{HasTs: true, Ts: ts}, "SELECT * FROM t WHERE `at` < NOW() - ? AND `at` > ? ORDER BY `at`", []any{1.5, ts}},
		{ModeTimestampIncrementing, Position{HasTs: true, Ts: ts}, "SELECT * FROM t WHERE `at` < NOW() - ? AND `at` >= ? ORDER BY `at`, `id`", []any{1.5, ts}},
		{ModeTimestampIncrementing, Position{HasTs: true, Ts: ts, HasInc: true, Inc: 3},
			"SELECT * FROM t WHERE `at` < NOW() - ? AND (`at`, `id`) > (?, ?) ORDER BY `at`, `id`", []any{1.5, ts, int64(3)}},
	} {
		sql, args := Query(question{}, c.mode, "SELECT * FROM t", cols, c.pos, 1.5)
		if sql != c.sql || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s %+v:\n got %s %v\nwant %s %v", c.mode, c.pos, sql, args, c.sql, c.args)
		}
	}
}

// A position survives its offset's trip through JSON (numbers as float64),
// to the nanosecond, and only the mode's parts are restored.
func TestPositionOffsetRoundTrip(t *testing.T) {
	p := Position{HasInc: true, Inc: 1 << 50, HasTs: true, Ts: time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC)}
	off := map[string]any{}
	for k, v := range p.Offset() {
		n, _ := plugin.OffsetInt64(v)
		off[k] = float64(n)
	}
	var back Position
	if err := back.Restore(off, true, true); err != nil {
		t.Fatal(err)
	}
	if back != p {
		t.Fatalf("restored %+v, want %+v", back, p)
	}
	var incOnly Position
	if err := incOnly.Restore(off, true, false); err != nil || incOnly.HasTs {
		t.Fatalf("incrementing mode restored a timestamp: %+v %v", incOnly, err)
	}
}

// Assign balances by size with the largest alone, one item per task at
// least, and never more tasks than items.
func TestAssign(t *testing.T) {
	sizes := map[string]float64{"audit_log": 6000, "orders": 2500, "users": 1200, "products": 500, "inventory": 300}
	var names []string
	for n := range sizes {
		names = append(names, n)
	}
	size := func(n string) float64 { return sizes[n] }
	id := func(n string) string { return n }
	got := Assign(names, 3, size, id)
	want := [][]string{{"audit_log"}, {"orders"}, {"users", "products", "inventory"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Assign = %v, want %v", got, want)
	}
	if g := Assign(names, 10, size, id); len(g) != 5 {
		t.Fatalf("tasks.max 10 over 5 tables: %d groups", len(g))
	}
}

// Claim keeps each record of a batch once, from its partition's stored
// offset on: a record below it is in the database already, and a record
// the batch holds twice (delivered again after a seek back) is written
// once.
func TestClaimDropsWrittenAndRepeatedRecords(t *testing.T) {
	rec := func(p int32, o int64) *plugin.SinkRecord {
		return &plugin.SinkRecord{Topic: "t", Partition: p, Offset: o}
	}
	// Partition 0: 3-6 read from the group's offset, then 5-7 again from
	// the stored offset 5; partition 1 has no stored offset and 2-3 twice.
	recs := []*plugin.SinkRecord{rec(0, 3), rec(0, 4), rec(0, 5), rec(1, 2), rec(0, 6), rec(0, 5), rec(1, 3), rec(0, 6), rec(0, 7), rec(1, 2), rec(1, 3), rec(1, 4)}
	next, _ := BatchOffsets(recs)
	keep := Claim(recs, next, map[plugin.TopicPartition]int64{{Topic: "t", Partition: 0}: 5, {Topic: "t", Partition: 2}: 9})
	var got []string
	for _, r := range keep {
		got = append(got, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
	}
	if want := []string{"0@5", "1@2", "0@6", "1@3", "0@7", "1@4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	wantNext := map[plugin.TopicPartition]int64{{Topic: "t", Partition: 0}: 8, {Topic: "t", Partition: 1}: 5, {Topic: "t", Partition: 2}: 9}
	if !reflect.DeepEqual(next, wantNext) {
		t.Fatalf("next %v, want %v", next, wantNext)
	}
}
