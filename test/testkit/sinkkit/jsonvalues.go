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

package sinkkit

import (
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// The values of the JSON pass-through tests: sinks that write values as
// JSON get them as text straight from Kafka's bytes (data.JSONText) when no
// transform runs, and must write exactly what they write from the
// converted values.

// jsonShapes are schemaless values of every kind the pass-through copies,
// rewrites or hands over to the converter (%d is the record's number).
// Each field name keeps one JSON type, as a search index maps it.
var jsonShapes = []string{
	`{"id":%d,"name":"name","qty":3}`,                                            // as the encoder writes it
	`{"qty":4,"id":%d,"name":"unsorted keys"}`,                                   // keys sorted again
	` { "id" : %d , "nested" : { "z" : [ 1 , {"y":2,"x":1} ] , "a" : {} } }`,     // whitespace, nesting
	`{"id":%d,"price":12.50,"ratio":1e2,"neg":-0,"big":12345678901234567890}`,    // numbers written again
	`{"id":%d,"text":"quote \" backslash \\ tab \t é \u00e9 😀 \/ \ud83d\ude00"}`, // escapes decoded and written again
	`{"id":%d,"dup":1,"dup":2}`,                                                  // duplicate key: the converter
	`{"id":%d,"flag":true,"none":null,"list":[],"obj":{}}`,                       // literals, empty containers
	`{"id":%d,"deep":[[[[{"k":"v"}]]]]}`,
}

// JSONValue is schemaless value i: one of the shapes above in turn, and
// every tenth a tombstone (nil) or a JSON null.
func JSONValue(i int) []byte {
	switch i % 10 {
	case 8:
		return nil
	case 9:
		return []byte("null")
	}
	return fmt.Appendf(nil, jsonShapes[i%len(jsonShapes)], i)
}

// envelopeSchema is the struct of JSONEnvelope's values.
var envelopeSchema = data.StructOf("passthrough.Row",
	data.F("id", data.Int64Schema), data.F("name", data.StringSchema),
	data.F("qty", data.Int32Schema.WithDefault(int32(1))), data.F("price", data.DecimalSchema(2).AsOptional()),
	data.F("at", data.TimestampSchema()), data.F("tags", data.ArrayOf(data.StringSchema)),
	data.F("note", data.OptionalStringSchema), data.F("ratio", data.OptionalFloat64Schema))

// JSONEnvelope is value i in JsonConverter's schema envelope (a struct of
// integers, text, a decimal, a timestamp, an array, optional fields and a
// default): mostly as JsonConverter writes it, now and then with fields
// out of order or left out, whitespace and escapes, or a tombstone.
func JSONEnvelope(i int) []byte {
	c, err := converter.NewJSON(nil)
	if err != nil {
		panic(err)
	}
	v := data.NewStruct(envelopeSchema).Put("id", int64(i)).Put("name", fmt.Sprintf("row \"%d\" é", i)).
		Put("qty", int32(i%1000)).Put("at", time.UnixMilli(1_700_000_000_000+int64(i)).UTC()).Put("tags", []any{"a", "b"})
	if i%2 == 0 {
		v.Put("price", data.NewDecimal(int64(i)*101, 2)).Put("note", "even")
	}
	if i%3 == 0 {
		v.Put("ratio", float64(i)/8)
	}
	b, err := c.FromConnectData("t", envelopeSchema, v)
	if err != nil {
		panic(err)
	}
	head := b[:len(b)-len(`}`)-len(payloadOf(b))]
	switch i % 10 {
	case 5: // the last fields left out
		return fmt.Appendf(head, `{"id":%d,"name":"n","qty":5,"price":"AeJA","at":%d,"tags":[]}}`, i, 1_700_000_000_000+i)
	case 6: // fields out of order, the optional and defaulted ones left out
		return fmt.Appendf(head, `{"tags":[],"at":%d,"name":"n","id":%d}}`, 1_700_000_000_000+i, i)
	case 7: // numbers written otherwise, a null for the default
		return fmt.Appendf(head, `{"id":%d,"name":"n","qty":null,"at":%d,"tags":["x"],"ratio":2.50}}`, i, 1_700_000_000_000+i)
	case 8:
		return nil
	case 9: // whitespace, an escaped field name
		return fmt.Appendf(head, ` { "id" : %d , "n\u0061me" : "n" , "at" : %d , "tags" : [ ] } }`, i, 1_700_000_000_000+i)
	}
	return b
}

// payloadOf returns an envelope's payload.
func payloadOf(env []byte) []byte {
	const key = `,"payload":`
	for i := 0; i+len(key) <= len(env); i++ {
		if string(env[i:i+len(key)]) == key {
			return env[i+len(key) : len(env)-1]
		}
	}
	panic("no payload in " + string(env))
}

// NoOpTransform is connector config that adds a transform changing
// nothing (a Filter whose predicate never matches): the runner then
// converts every value, as it does whenever a transform runs.
func NoOpTransform() map[string]string {
	return map[string]string{
		"transforms": "keep", "transforms.keep.type": "Filter", "transforms.keep.predicate": "never",
		"predicates": "never", "predicates.never.type": "TopicNameMatches", "predicates.never.pattern": "no-such-topic",
	}
}

// PassThroughRun is one connector of a pass-through comparison, with the
// number of values its task was given as JSON text (see CountText).
type PassThroughRun struct {
	Name, Topic string
	Config      map[string]string
	Texts       atomic.Int64
}

// PassThroughRuns produces n records to the topics "raw" (JSONValue) and
// "env" (JSONEnvelope), keyed by their number in decimal, and returns the
// pairs of connectors to compare: each topic with the pass-through and
// under NoOpTransform, with value.converter.schemas.enable=true on "env".
// base gives a connector's config.
func (k *Kafka) PassThroughRuns(t testing.TB, n int, base func(name, topic string) map[string]string) [2][2]*PassThroughRun {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		key := []byte(strconv.Itoa(i))
		recs = append(recs, &kgo.Record{Topic: "raw", Partition: int32(i % 2), Key: key, Value: JSONValue(i)},
			&kgo.Record{Topic: "env", Partition: int32(i % 2), Key: key, Value: JSONEnvelope(i)})
	}
	k.Produce(t, recs...)
	var out [2][2]*PassThroughRun
	for i, topic := range []string{"raw", "env"} {
		for j, way := range []string{"fast", "slow"} {
			r := &PassThroughRun{Name: topic + "-" + way, Topic: topic}
			r.Config = base(r.Name, topic)
			if j == 1 {
				maps.Copy(r.Config, NoOpTransform())
			}
			if topic == "env" {
				r.Config["value.converter.schemas.enable"] = "true"
			}
			out[i][j] = r
		}
	}
	return out
}

// CountText adds to n the records whose value is JSON text.
func CountText(n *atomic.Int64, records []*plugin.SinkRecord) {
	for _, r := range records {
		if _, ok := r.Value.(data.JSONText); ok {
			n.Add(1)
		}
	}
}

// CheckTexts fails unless the pass-through run took at least three in
// five of n values as text and the run under a transform none.
func CheckTexts(t testing.TB, pair [2]*PassThroughRun, n int) {
	t.Helper()
	if got := pair[0].Texts.Load(); got < int64(n*6/10) {
		t.Fatalf("%s: %d of %d values came as JSON text", pair[0].Name, got, n)
	}
	if got := pair[1].Texts.Load(); got != 0 {
		t.Fatalf("%s: %d values came as JSON text under a transform", pair[1].Name, got)
	}
}

// RunPassThrough starts one task of each run, with the plugin that
// newPlugin returns for counting its texts into the run's Texts, and waits
// until every run committed its topic's end offsets.
func (k *Kafka) RunPassThrough(t testing.TB, pairs [2][2]*PassThroughRun, newPlugin func(texts *atomic.Int64) plugin.Plugin) {
	t.Helper()
	for _, pair := range pairs {
		for _, r := range pair {
			k.StartTasks(t, newPlugin(&r.Texts), r.Name, r.Config, 1)
		}
	}
	for _, pair := range pairs {
		for _, r := range pair {
			k.WaitCommitted(t, r.Name, r.Topic, 90*time.Second)
		}
	}
}
