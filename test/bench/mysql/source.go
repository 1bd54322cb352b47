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
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/offsettest"
)

const topic = "b.src"

func (b *bench) sourceConfig() map[string]string {
	return map[string]string{
		"name": "bench-source", "connector.class": tablesource.Class, jdbc.KeyConnectionURL: "jdbc:" + b.srv.URL(b.database),
		jdbc.KeyTableWhitelist: "src", jdbc.KeyMode: jdbc.ModeIncrementing, jdbc.KeyIncrementingColumn: "id",
		jdbc.KeyTopicPrefix: "b.", jdbc.KeyBatchMaxRows: "2000", jdbc.KeyPollIntervalMs: "100", jdbc.KeyTablePollIntervalMs: "0",
	}
}

func newCluster() (*kfake.Cluster, *kgo.Client, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, cl, nil
}

// runSource runs the table source into c until Kafka holds every row.
func (b *bench) runSource(ctx context.Context, c *kfake.Cluster, adm *kadm.Client) (float64, error) {
	cfg := b.sourceConfig()
	r, err := task.New(task.Spec{Common: task.Common{
		ID: task.ID{Connector: "bench-source"}, Config: cfg, Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Status: task.StatusFunc(func(task.ID, task.State, string) {}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OffsetFlushInterval: 10 * time.Second,
	}, Plugin: tablesource.Plugin(), Connector: cfg, Offsets: offsettest.New()})
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
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		total := int64(0)
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if total >= int64(b.n) {
			return rate(b.n, start), nil
		}
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("source task failed: %w", err)
		}
		if time.Since(start) > 5*time.Minute {
			return 0, fmt.Errorf("source wrote %d of %d rows in 5 minutes", total, b.n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *bench) sourceConnector(ctx context.Context) (float64, error) {
	c, cl, err := newCluster()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	defer cl.Close()
	return b.runSource(ctx, c, kadm.NewClient(cl))
}

// valueSchema is the JSON converter's schema of src's rows, written by
// hand once.
const valueSchema = `{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":false,"field":"name"},` +
	`{"type":"int32","optional":false,"field":"qty"},{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"price"},` +
	`{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"at"},{"type":"string","optional":true,"field":"note"}],"optional":false,"name":"src"}`

// sourcePipeline is the hand-written SELECT → produce.
func (b *bench) sourcePipeline(ctx context.Context) (float64, error) {
	c, cl, err := newCluster()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	defer cl.Close()
	settings, err := task.ProducerSettings(nil)
	if err != nil {
		return 0, err
	}
	p, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(topic)},
		task.ProducerOpts(10000, 64<<20)...), settings...)...)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	start := time.Now()
	rs, err := b.db.QueryContext(ctx, "SELECT id, name, qty, price, at, note FROM src ORDER BY id")
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	var id, name, qty, price, at, note sql.RawBytes
	slab := make([]byte, 0, 1<<20)
	errs := make(chan error, 1)
	done := 0
	acked := make(chan struct{}, 1)
	for rs.Next() {
		if err := rs.Scan(&id, &name, &qty, &price, &at, &note); err != nil {
			return 0, err
		}
		if cap(slab)-len(slab) < 1024 {
			slab = make([]byte, 0, 1<<20)
		}
		s := len(slab)
		slab = append(slab, `{"schema":`...)
		slab = append(slab, valueSchema...)
		slab = append(slab, `,"payload":{"id":`...)
		slab = append(slab, id...)
		slab = strconv.AppendQuote(append(slab, `,"name":`...), string(name))
		slab = append(append(slab, `,"qty":`...), qty...)
		slab = strconv.AppendQuote(append(slab, `,"price":`...), string(price)) // a stand-in for the decimal's bytes: same size class
		ts, err := time.ParseInLocation("2006-01-02 15:04:05.999", string(at), time.UTC)
		if err != nil {
			return 0, err
		}
		slab = strconv.AppendInt(append(slab, `,"at":`...), ts.UnixMilli(), 10)
		if note == nil {
			slab = append(slab, `,"note":null}}`...)
		} else {
			slab = append(strconv.AppendQuote(append(slab, `,"note":`...), string(note)), `}}`...)
		}
		v := slab[s:len(slab):len(slab)]
		p.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
			done++
			if done == b.n {
				acked <- struct{}{}
			}
		})
	}
	if err := rs.Err(); err != nil {
		return 0, err
	}
	select {
	case <-acked:
	case err := <-errs:
		return 0, err
	case <-time.After(5 * time.Minute):
		return 0, fmt.Errorf("produced %d of %d in 5 minutes", done, b.n)
	}
	return rate(b.n, start), nil
}
