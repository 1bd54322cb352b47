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

package s3

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
	"github.com/conveyor-dev/conveyor/test/testkit/sinkkit"
)

// textCounting is the S3 sink task counting the values it is given as
// JSON text (the runner's pass-through).
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

func countingPlugin(texts *atomic.Int64) plugin.Plugin {
	p := Plugin()
	p.NewSinkTask = func() plugin.SinkTask { return textCounting{Task: &Task{}, texts: texts} }
	return p
}

// With JsonConverter and format.class=json, values go from Kafka's bytes
// to the object's lines without being converted (the pass-through), and
// the objects are byte for byte those written from the converted values,
// which a transform forces: for schemaless values of every shape
// (unsorted keys, numbers and escapes written again, duplicate keys,
// tombstones and nulls) and for values in the schema envelope (decimals,
// timestamps, defaults, fields out of order, null payloads).
func TestS3SinkJSONPassThroughWritesTheSameObjects(t *testing.T) {
	s, c := bucket(t)
	k := sinkkit.StartKafka(t, map[string]int32{"raw": 2, "env": 2})
	const n = 1000 // 500 per partition: two full objects each
	var recs []*kgo.Record
	for i := range n {
		key := []byte(strconv.Itoa(i))
		recs = append(recs, &kgo.Record{Topic: "raw", Partition: int32(i % 2), Key: key, Value: sinkkit.JSONValue(i)},
			&kgo.Record{Topic: "env", Partition: int32(i % 2), Key: key, Value: sinkkit.JSONEnvelope(i)})
	}
	k.Produce(t, recs...)
	slow := sinkkit.NoOpTransform()
	type run struct {
		name, topic string
		extra       map[string]string
		texts       atomic.Int64
	}
	runs := []*run{
		{name: "raw-fast", topic: "raw"}, {name: "raw-slow", topic: "raw", extra: slow},
		{name: "env-fast", topic: "env", extra: map[string]string{"value.converter.schemas.enable": "true"}},
		{name: "env-slow", topic: "env", extra: maps.Clone(slow)},
	}
	runs[3].extra["value.converter.schemas.enable"] = "true"
	for _, r := range runs {
		cfg := sinkConfig(r.name, r.topic, s, KeyFlushSize, "250", KeyNullValues, NullWrite)
		maps.Copy(cfg, r.extra)
		k.StartTasks(t, countingPlugin(&r.texts), r.name, cfg, 1)
	}
	for _, r := range runs {
		k.WaitCommitted(t, r.name, r.topic, 90*time.Second)
	}
	for _, pair := range [][2]*run{{runs[0], runs[1]}, {runs[2], runs[3]}} {
		fast, slow := objects(t, c, pair[0].name), objects(t, c, pair[1].name)
		if len(fast) != n/250 || len(fast) != len(slow) {
			t.Fatalf("%s: %d objects, %s: %d, want %d", pair[0].name, len(fast), pair[1].name, len(slow), n/250)
		}
		for name, b := range slow {
			if !bytes.Equal(fast[name], b) {
				t.Fatalf("object %s differs:\n%s: %.600s\n%s: %.600s", name, pair[0].name, fast[name], pair[1].name, b)
			}
		}
		// Most values went through as text; with a transform, none.
		if got := pair[0].texts.Load(); got < n*6/10 {
			t.Fatalf("%s: %d of %d values came as JSON text", pair[0].name, got, n)
		}
		if got := pair[1].texts.Load(); got != 0 {
			t.Fatalf("%s: %d values came as JSON text under a transform", pair[1].name, got)
		}
		t.Logf("%s: %d of %d values as text, %d objects alike", pair[0].name, pair[0].texts.Load(), n, len(fast))
	}
}
