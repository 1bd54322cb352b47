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
	"sync/atomic"
	"testing"

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
	sinkkit.CountText(c.texts, records)
	return c.Task.Put(ctx, records)
}

// With JsonConverter and format.class=json, values go from Kafka's bytes
// to the object's lines without being converted (the pass-through), and
// the objects are byte for byte those written from the converted values,
// which a transform forces: for schemaless values of every shape
// (unsorted keys, numbers and escapes written again, duplicate keys,
// tombstones and nulls) and for values in the schema envelope (decimals,
// timestamps, defaults, fields out of order or left out).
func TestS3SinkJSONPassThroughWritesTheSameObjects(t *testing.T) {
	s, c := bucket(t)
	k := sinkkit.StartKafka(t, map[string]int32{"raw": 2, "env": 2})
	const n = 1000 // 500 per partition: two full objects each
	pairs := k.PassThroughRuns(t, n, func(name, topic string) map[string]string {
		return sinkConfig(name, topic, s, KeyFlushSize, "250", KeyNullValues, NullWrite)
	})
	k.RunPassThrough(t, pairs, func(texts *atomic.Int64) plugin.Plugin {
		p := Plugin()
		p.NewSinkTask = func() plugin.SinkTask { return textCounting{Task: &Task{}, texts: texts} }
		return p
	})
	for _, pair := range pairs {
		fast, slow := objects(t, c, pair[0].Name), objects(t, c, pair[1].Name)
		if len(fast) != n/250 || len(fast) != len(slow) {
			t.Fatalf("%s: %d objects, %s: %d, want %d", pair[0].Name, len(fast), pair[1].Name, len(slow), n/250)
		}
		for name, b := range slow {
			if !bytes.Equal(fast[name], b) {
				t.Fatalf("object %s differs:\n%s: %.600s\n%s: %.600s", name, pair[0].Name, fast[name], pair[1].Name, b)
			}
		}
		sinkkit.CheckTexts(t, pair, n)
		t.Logf("%s: %d of %d values as text, %d objects alike", pair[0].Name, pair[0].Texts.Load(), n, len(fast))
	}
}
