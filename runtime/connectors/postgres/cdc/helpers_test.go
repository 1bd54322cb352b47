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
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg)) }

// env is one test's database, Kafka cluster and offset store (the
// worker's real one, on a compacted topic of the in-process broker).
type env struct {
	t       *testing.T
	url     string
	db      *pgx.Conn
	kafka   *kfake.Cluster
	opts    []kgo.Opt
	offsets *store.OffsetStore
	config  map[string]string
}

func newEnv(t *testing.T, config map[string]string) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := &env{t: t, url: pg.CreateDatabase(t)}
	// Registered after the database's cleanup, so it runs before it: a
	// database with a replication slot cannot be dropped.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// A closed replication connection releases its slot a moment later.
		for ctx.Err() == nil {
			var left int
			if err := e.db.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()").Scan(&left); err != nil || left == 0 {
				break
			}
			if _, err := e.db.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database() AND NOT active"); err != nil {
				t.Logf("dropping replication slots: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = e.db.Close(ctx)
	})
	var err error
	if e.db, err = pgx.Connect(ctx, e.url); err != nil {
		t.Fatal(err)
	}
	e.kafka, e.opts = kafkatest.Cluster(t, kfake.AllowAutoTopicCreation())
	if e.offsets, err = store.OpenOffsetStore(ctx, kafkatest.Opener(e.opts), kafkalog.Topic{Name: "connect-offsets"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.offsets.Close)
	e.config = map[string]string{
		"name": "cdc", "connector.class": "PostgresCDCSource",
		"connection.url": e.url, "topic.prefix": "pg.", "slot.name": "cdc_slot", "publication.name": "cdc_pub",
		"poll.interval.ms": "100", "status.interval.ms": "500",
	}
	for k, v := range config {
		e.config[k] = v
	}
	return e
}

// exec runs statements on one connection (so BEGIN ... COMMIT spans them).
func (e *env) exec(sql ...string) {
	e.t.Helper()
	pgtest.ExecURL(e.t, e.url, sql...)
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// run starts the CDC task of the connector's (single) task config in the
// worker's source runner, built as the worker builds it, with JSON
// converters without schemas (decimals as numbers) as the worker's
// defaults.
func (e *env) run(taskConfig map[string]string) task.Runner {
	e.t.Helper()
	r, err := task.New(task.Spec{
		Common: task.Common{
			ID: task.ID{Connector: "cdc", Task: 0}, Config: taskConfig,
			Kafka:               e.opts,
			Status:              task.StatusFunc(func(task.ID, task.State, string) {}),
			Logger:              testLogger(e.t),
			OffsetFlushInterval: 100 * time.Millisecond,
			RetryBackoff:        50 * time.Millisecond,
		},
		Plugin: Plugin(), Connector: e.config, WorkerConverters: jsonWithoutSchemas,
		Offsets: store.TaskOffsets{Store: e.offsets},
	})
	return tasktest.Start(e.t, r, err)
}

// jsonWithoutSchemas are worker converter settings: JSON without schemas,
// decimals as numbers.
var jsonWithoutSchemas = map[string]string{
	"key.converter": converter.JSONClass, "key.converter.schemas.enable": "false", "key.converter.decimal.format": "NUMERIC",
	"value.converter": converter.JSONClass, "value.converter.schemas.enable": "false", "value.converter.decimal.format": "NUMERIC",
}

// stop stops r within tasktest.StopTimeout, failing the test on an error.
func (e *env) stop(r task.Runner) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tasktest.StopTimeout)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		e.t.Errorf("stopping the runner: %v", err)
	}
}

// waitSlotActive waits until the slot is being read.
func (e *env) waitSlotActive(slot string) {
	e.t.Helper()
	testkit.EventuallyTrue(e.t, 20*time.Second, "slot "+slot+" active", func() bool {
		var active bool
		err := e.db.QueryRow(context.Background(), "SELECT active FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&active)
		return err == nil && active
	})
}

func (e *env) confirmedFlush(slot string) pglogrepl.LSN {
	e.t.Helper()
	var s string
	if err := e.db.QueryRow(context.Background(), "SELECT coalesce(confirmed_flush_lsn::text, '0/0') FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// event is a consumed change record, or a tombstone (no value).
type event struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       map[string]any
	Tombstone bool
	Op        string         `json:"op"`
	Before    map[string]any `json:"before"`
	After     map[string]any `json:"after"`
	Source    map[string]any `json:"source"`
}

// tombstoneOp stands for a tombstone in the tests' lists of operations.
const tombstoneOp = "tombstone"

// op returns the event's operation, or tombstoneOp.
func (ev event) op() string {
	if ev.Tombstone {
		return tombstoneOp
	}
	return ev.Op
}

func (ev event) String() string {
	if ev.Tombstone {
		return fmt.Sprintf("%s %s key=%v", ev.Topic, tombstoneOp, ev.Key)
	}
	return fmt.Sprintf("%s %s key=%v before=%v after=%v", ev.Topic, ev.Op, ev.Key, ev.Before, ev.After)
}

// id returns the "id" column of the row the event is about (of the key,
// for a tombstone).
func (ev event) id() int64 {
	row := ev.After
	if row == nil {
		row = ev.Before
	}
	if ev.Tombstone {
		row = ev.Key
	}
	n, _ := row["id"].(float64)
	return int64(n)
}

// consume reads topics from the start until want records arrived, then
// keeps reading for settle to catch records beyond want (duplicates). A
// tombstone must come right after the delete event of its key in its
// Kafka partition; it gets that event's source, so byCommit can place it.
func (e *env) consume(topics []string, want int, settle time.Duration) []event {
	e.t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.opts...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var out []event
	deadline := time.Now().Add(30 * time.Second)
	var settleEnd time.Time
	for {
		now := time.Now()
		if len(out) >= want && settleEnd.IsZero() {
			settleEnd = now.Add(settle)
		}
		if !settleEnd.IsZero() && now.After(settleEnd) {
			break
		}
		if now.After(deadline) {
			e.t.Fatalf("got %d of %d records within 30s:\n%s", len(out), want, list(out))
		}
		until := deadline
		if !settleEnd.IsZero() {
			until = settleEnd
		}
		ctx, cancel := context.WithDeadline(context.Background(), until)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			var ev event
			if r.Value == nil {
				ev.Tombstone = true
			} else if err := json.Unmarshal(r.Value, &ev); err != nil {
				e.t.Fatalf("record value %s: %v", r.Value, err)
			}
			if len(r.Key) > 0 && string(r.Key) != "null" {
				if err := json.Unmarshal(r.Key, &ev.Key); err != nil {
					e.t.Fatalf("record key %s: %v", r.Key, err)
				}
			}
			ev.Topic, ev.Partition, ev.Offset = r.Topic, r.Partition, r.Offset
			if ev.Tombstone {
				prev := -1
				for i := len(out) - 1; i >= 0 && prev < 0; i-- {
					if out[i].Topic == ev.Topic && out[i].Partition == ev.Partition {
						prev = i
					}
				}
				if prev < 0 || out[prev].Tombstone || out[prev].Op != OpDelete || !reflect.DeepEqual(out[prev].Key, ev.Key) || ev.Key == nil {
					e.t.Fatalf("a tombstone with key %v at %s/%d/%d does not follow the delete event of its key; records so far:\n%s",
						ev.Key, r.Topic, r.Partition, r.Offset, list(out))
				}
				ev.Source = out[prev].Source
			}
			out = append(out, ev)
		})
	}
	return out
}

func list(evs []event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// byCommit orders events of several topics by commit LSN and position in
// their transaction (the offsets carry neither, the source does), the
// delete of a key change before its create.
func byCommit(evs []event) {
	sort.SliceStable(evs, func(i, j int) bool {
		a, _ := pglogrepl.ParseLSN(fmt.Sprint(evs[i].Source["commit_lsn"]))
		b, _ := pglogrepl.ParseLSN(fmt.Sprint(evs[j].Source["commit_lsn"]))
		if a != b {
			return a < b
		}
		la, _ := evs[i].Source["lsn"].(float64)
		lb, _ := evs[j].Source["lsn"].(float64)
		if la != lb {
			return la < lb
		}
		// The records of a delete or a key change share their change's
		// position; they may sit in different partitions (other keys), so
		// the consumed order says nothing: the delete was emitted first,
		// then its tombstone, then the create.
		return emitRank(evs[i]) < emitRank(evs[j])
	})
}

// emitRank orders the records of one change as the task emits them.
func emitRank(ev event) int {
	switch {
	case ev.Tombstone:
		return 1
	case ev.Op == OpDelete:
		return 0
	}
	return 2
}
