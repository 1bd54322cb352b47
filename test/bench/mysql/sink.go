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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/sink"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
)

// records fills, once, a broker with the source connector's records of
// src: the sinks' input.
func (b *bench) records(ctx context.Context) (*kfake.Cluster, error) {
	if b.input != nil {
		return b.input, nil
	}
	c, cl, err := newCluster()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if _, err := b.runSource(ctx, c, kadm.NewClient(cl)); err != nil {
		c.Close()
		return nil, err
	}
	b.input = c
	return c, nil
}

// newTable creates an empty destination table.
func (b *bench) newTable(ctx context.Context) (string, error) {
	b.runs++
	name := fmt.Sprintf("dst_%d", b.runs)
	return name, b.srv.Exec(ctx, b.database, "CREATE TABLE "+name+" ("+columns+")")
}

// waitRows waits until table holds n rows.
func (b *bench) waitRows(ctx context.Context, table string, failed func() error) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var got int
		if err := b.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&got); err != nil {
			return err
		}
		if got >= b.n {
			return nil
		}
		if err := failed(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d rows in %s after 5 minutes", got, b.n, table)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *bench) sinkConnector(ctx context.Context) (float64, error) {
	c, err := b.records(ctx)
	if err != nil {
		return 0, err
	}
	table, err := b.newTable(ctx)
	if err != nil {
		return 0, err
	}
	cfg := map[string]string{
		"name": "bench-sink-" + table, "connector.class": sink.Class, plugin.KeyTopics: topic,
		jdbc.KeyConnectionURL: "jdbc:" + b.srv.URL(b.database), jdbc.KeyTableNameFormat: table,
		jdbc.KeyInsertMode: jdbc.InsertModeUpsert, jdbc.KeyPKMode: jdbc.PKModeRecordKey,
	}
	r, err := task.New(task.Spec{Common: task.Common{
		ID: task.ID{Connector: cfg["name"]}, Config: cfg, Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Status: task.StatusFunc(func(task.ID, task.State, string) {}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OffsetFlushInterval: 10 * time.Second,
	}, Plugin: sink.Plugin(), Connector: cfg})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := r.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}()
	if err := b.waitRows(ctx, table, r.Err); err != nil {
		return 0, err
	}
	return rate(b.n, start), nil
}

// row is the payload of one record, for the hand-written decoder.
type row struct {
	Payload struct {
		ID    int64   `json:"id"`
		Name  string  `json:"name"`
		Qty   int32   `json:"qty"`
		Price []byte  `json:"price"` // the decimal's unscaled bytes
		At    int64   `json:"at"`
		Note  *string `json:"note"`
	} `json:"payload"`
}

// sinkPipeline is the hand-written consume → batch INSERT.
func (b *bench) sinkPipeline(ctx context.Context) (float64, error) {
	c, err := b.records(ctx)
	if err != nil {
		return 0, err
	}
	table, err := b.newTable(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	const perStmt, perTx = 500, 3000
	head := "INSERT INTO " + table + " (id, name, qty, price, at, note) VALUES "
	tuple := "(?, ?, ?, ?, ?, ?)"
	var args []any
	var stmts []string
	inTx := 0
	flushStmt := func() {
		if len(args) == 0 {
			return
		}
		k := len(args) / 6
		stmts = append(stmts, head+strings.TrimSuffix(strings.Repeat(tuple+", ", k), ", ")+" ON DUPLICATE KEY UPDATE name = VALUES(name)")
		b.pending = append(b.pending, args)
		args = nil
	}
	commit := func() error {
		flushStmt()
		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for i, s := range stmts {
			if _, err := tx.ExecContext(ctx, s, b.pending[i]...); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		stmts, b.pending, inTx = nil, nil, 0
		return tx.Commit()
	}
	seen := 0
	for seen < b.n {
		f := cl.PollFetches(ctx)
		if err := f.Err0(); err != nil {
			return 0, err
		}
		var derr error
		f.EachRecord(func(r *kgo.Record) {
			var v row
			if err := json.Unmarshal(r.Value, &v); err != nil {
				derr = err
				return
			}
			p := v.Payload
			price := decimal2(p.Price)
			args = append(args, p.ID, p.Name, p.Qty, price, time.UnixMilli(p.At).UTC().Format("2006-01-02 15:04:05.000"), p.Note)
			seen++
			inTx++
			if len(args)/6 == perStmt {
				flushStmt()
			}
		})
		if derr != nil {
			return 0, derr
		}
		if inTx >= perTx || seen >= b.n {
			if err := commit(); err != nil {
				return 0, err
			}
		}
	}
	return rate(b.n, start), nil
}

// decimal2 renders a Connect Decimal of scale 2 from its unscaled
// big-endian two's complement bytes (small values: they fit an int64).
func decimal2(b []byte) string {
	var n int64
	if len(b) > 0 && b[0]&0x80 != 0 {
		n = -1
	}
	for _, x := range b {
		n = n<<8 | int64(x)
	}
	neg := n < 0
	if neg {
		n = -n
	}
	s := fmt.Sprintf("%d.%02d", n/100, n%100)
	if neg {
		s = "-" + s
	}
	return s
}
