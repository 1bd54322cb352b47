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
	"time"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
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
