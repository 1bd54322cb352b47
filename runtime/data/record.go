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

package data

import (
	"fmt"
	"time"
)

// TopicPartition names one partition of a Kafka topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String renders "topic-partition", as Kafka does.
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Header is one record header: a key and a typed value.
type Header struct {
	Key string
	// Schema of the value; nil for schemaless.
	Schema *Schema
	// Value is the header value; []byte for raw headers read from Kafka.
	Value any
}

// Headers is an ordered list of headers; a key may repeat.
type Headers []Header

// Add appends a header.
func (h *Headers) Add(key string, schema *Schema, value any) {
	*h = append(*h, Header{Key: key, Schema: schema, Value: value})
}

// AddBytes appends a raw header.
func (h *Headers) AddBytes(key string, value []byte) {
	*h = append(*h, Header{Key: key, Schema: OptionalBytesSchema, Value: value})
}

// Last returns the last header with the key.
func (h Headers) Last(key string) (Header, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Key == key {
			return h[i], true
		}
	}
	return Header{}, false
}

// All returns every header with the key, in order.
func (h Headers) All(key string) []Header {
	var out []Header
	for _, x := range h {
		if x.Key == key {
			out = append(out, x)
		}
	}
	return out
}

// SourceRecord is a record a source task produced: where it came from in the
// source system (SourcePartition, SourceOffset) and where it goes in Kafka.
type SourceRecord struct {
	// SourcePartition identifies the stream in the source system the record
	// came from, for example {"file": "/data/a.txt"}. Offsets are stored per
	// source partition. Values must be JSON-friendly (string, number, bool).
	SourcePartition map[string]any
	// SourceOffset is the position in SourcePartition after this record, for
	// example {"position": 1234}. The runtime stores the latest acknowledged
	// offset per partition; a task reads it back through its OffsetReader.
	SourceOffset map[string]any
	// Topic is the Kafka topic the record goes to.
	Topic string
	// Partition is the Kafka partition, or nil to let the producer choose
	// (by key hash).
	Partition *int32
	// KeySchema and Key are the record key; both may be nil.
	KeySchema *Schema
	Key       any
	// ValueSchema and Value are the record value; a nil Value is a tombstone.
	ValueSchema *Schema
	Value       any
	// Timestamp is the record timestamp; the zero time lets the producer set it.
	Timestamp time.Time
	// Headers are the record headers.
	Headers Headers
}

// SinkRecord is a record consumed from Kafka and handed to a sink task.
type SinkRecord struct {
	// Topic, Partition and Offset locate the record in Kafka.
	Topic     string
	Partition int32
	Offset    int64
	// KeySchema and Key are the converted key.
	KeySchema *Schema
	Key       any
	// ValueSchema and Value are the converted value; nil Value is a tombstone.
	ValueSchema *Schema
	Value       any
	// Timestamp is the Kafka record timestamp.
	Timestamp time.Time
	// Headers are the record headers.
	Headers Headers
}

// TopicPartition returns the record's topic and partition.
func (r *SinkRecord) TopicPartition() TopicPartition {
	return TopicPartition{Topic: r.Topic, Partition: r.Partition}
}
