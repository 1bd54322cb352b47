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
	"strings"
	"sync/atomic"
	"testing"

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
	sinkkit.CountText(c.texts, records)
	return c.Task.Put(ctx, records)
}

// With JsonConverter, documents go from Kafka's bytes into the _bulk
// request without being converted (the pass-through), and the index holds
// byte for byte the documents written from the converted values, which a
// transform forces: schemaless values of every shape (unsorted keys,
// numbers and escapes written again, duplicate keys, tombstones and
// nulls) and values in the schema envelope (decimals, timestamps,
// defaults, fields out of order or left out). The stand-in keeps each
// document's source as sent.
func TestStandinJSONPassThroughIndexesTheSameDocuments(t *testing.T) {
	k := sinkkit.StartKafka(t, map[string]int32{"raw": 2, "env": 2})
	const n = 1000
	fastES, slowES := standin(t), standin(t)
	pairs := k.PassThroughRuns(t, n, func(name, topic string) map[string]string {
		url := fastES.URL
		if strings.HasSuffix(name, "slow") {
			url = slowES.URL
		}
		return map[string]string{"name": name, "connector.class": "ElasticsearchSink", "topics": topic, KeyURL: url,
			"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
			"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
			KeyNullValues: BehaviorDelete, KeyRetryBackoff: "20"}
	})
	k.RunPassThrough(t, pairs, func(texts *atomic.Int64) plugin.Plugin {
		p := Plugin()
		p.NewSinkTask = func() plugin.SinkTask { return textCounting{Task: &Task{}, texts: texts} }
		return p
	})
	for _, pair := range pairs {
		index := pair[0].Topic
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
				t.Fatalf("index %s, document %s:\n%s: %s\n%s: %s", index, id, pair[0].Name, fast, pair[1].Name, slow)
			}
		}
		sinkkit.CheckTexts(t, pair, n)
		t.Logf("%s: %d of %d values as text, %d documents alike", pair[0].Name, pair[0].Texts.Load(), n, len(ids))
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
