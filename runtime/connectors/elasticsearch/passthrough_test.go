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

package elasticsearch

import (
	"bytes"
	"context"
	"maps"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/estest"
	"github.com/conveyor-dev/conveyor/test/testkit/sinkkit"
)

// textCounting is the sink task counting the values it is given as JSON
// text (the runner's pass-through).
type textCounting struct {
	*Task
	texts *atomic.Int64
}

func (c textCounting) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	for _, r := range records {
		if _, ok := r.Value.(data.JSONText); ok {
			c.texts.Add(1)
		}
	}
	return c.Task.Put(ctx, records)
}

// With JsonConverter, documents go from Kafka's bytes into the _bulk
// request without being converted (the pass-through), and the index holds
// byte for byte the documents written from the converted values, which a
// transform forces: schemaless values of every shape (unsorted keys,
// numbers and escapes written again, duplicate keys, tombstones and
// nulls) and values in the schema envelope (decimals, timestamps,
// defaults, fields out of order). The stand-in keeps each document's
// source as sent.
func TestStandinJSONPassThroughIndexesTheSameDocuments(t *testing.T) {
	k := sinkkit.StartKafka(t, map[string]int32{"raw": 2, "env": 2})
	const n = 1000
	var recs []*kgo.Record
	for i := range n {
		key := []byte(strconv.Itoa(i))
		recs = append(recs, &kgo.Record{Topic: "raw", Partition: int32(i % 2), Key: key, Value: sinkkit.JSONValue(i)},
			&kgo.Record{Topic: "env", Partition: int32(i % 2), Key: key, Value: sinkkit.JSONEnvelope(i)})
	}
	k.Produce(t, recs...)
	type run struct {
		name, topic string
		extra       map[string]string
		es          *estest.Standin
		texts       atomic.Int64
	}
	fastES, slowES := standin(t), standin(t)
	schemas := map[string]string{"value.converter.schemas.enable": "true"}
	runs := []*run{
		{name: "raw-fast", topic: "raw", es: fastES}, {name: "raw-slow", topic: "raw", extra: sinkkit.NoOpTransform(), es: slowES},
		{name: "env-fast", topic: "env", extra: schemas, es: fastES},
		{name: "env-slow", topic: "env", extra: maps.Clone(sinkkit.NoOpTransform()), es: slowES},
	}
	maps.Copy(runs[3].extra, schemas)
	for _, r := range runs {
		cfg := map[string]string{"name": r.name, "connector.class": "ElasticsearchSink", "topics": r.topic, KeyURL: r.es.URL,
			"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
			"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
			KeyNullValues: BehaviorDelete, KeyRetryBackoff: "20"}
		maps.Copy(cfg, r.extra)
		p := Plugin()
		p.NewSinkTask = func() plugin.SinkTask { return textCounting{Task: &Task{}, texts: &r.texts} }
		k.StartTasks(t, p, r.name, cfg, 1)
	}
	for _, r := range runs {
		k.WaitCommitted(t, r.name, r.topic, 60*time.Second)
	}
	for _, pair := range [][2]*run{{runs[0], runs[1]}, {runs[2], runs[3]}} {
		index := pair[0].topic
		ids := fastES.IDs(index)
		want := n * 9 / 10 // tombstones delete
		if index == "raw" {
			want = n * 8 / 10 // and JSON nulls
		}
		if len(ids) != want || len(slowES.IDs(index)) != want {
			t.Fatalf("index %s: %d documents with the pass-through, %d without; want %d",
				index, len(ids), len(slowES.IDs(index)), want)
		}
		for _, id := range ids {
			fast, slow := fastES.Doc(index, id), slowES.Doc(index, id)
			if !bytes.Equal(fast, slow) {
				t.Fatalf("index %s, document %s:\n%s: %s\n%s: %s", index, id, pair[0].name, fast, pair[1].name, slow)
			}
		}
		if got := pair[0].texts.Load(); got < n*6/10 {
			t.Fatalf("%s: %d of %d values came as JSON text", pair[0].name, got, n)
		}
		if got := pair[1].texts.Load(); got != 0 {
			t.Fatalf("%s: %d values came as JSON text under a transform", pair[1].name, got)
		}
		t.Logf("%s: %d of %d values as text, %d documents alike", pair[0].name, pair[0].texts.Load(), n, len(ids))
	}
}

func standin(t *testing.T) *estest.Standin {
	t.Helper()
	es, err := estest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(es.Close)
	return es
}
