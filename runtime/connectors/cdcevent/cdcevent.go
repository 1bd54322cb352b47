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

// Package cdcevent holds what the change data capture sources share: the
// Debezium-style envelope (before, after, source, op, ts_ms), the record
// key (the primary key columns as a struct) and the tombstone after a
// delete, so that one consumer reads the changes of every database.
package cdcevent

import (
	"fmt"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Operation codes of the envelope's op field (Debezium's).
const (
	OpCreate   = "c"
	OpUpdate   = "u"
	OpDelete   = "d"
	OpRead     = "r" // a row of the initial snapshot
	OpTruncate = "t"
)

// Names of the envelope fields.
const (
	FieldBefore = "before"
	FieldAfter  = "after"
	FieldSource = "source"
	FieldOp     = "op"
	FieldTsMs   = "ts_ms"
)

// Schemas are the record schemas of one captured table.
type Schemas struct {
	Row      *data.Schema // optional struct: the before and after images
	Key      *data.Schema // nil when the table has no primary key
	Envelope *data.Schema
	keyNames []string
}

// NewSchemas builds the schemas of a table's records, named after base
// (the topic): base.Value, base.Key and base.Envelope. fields are the
// row's columns; keyNames the primary key columns in key order (none for
// a table without one), each among fields.
func NewSchemas(base string, fields []data.Field, keyNames []string, source *data.Schema) (Schemas, error) {
	s := Schemas{Row: data.StructOf(base+".Value", fields...).AsOptional(), keyNames: keyNames}
	if len(keyNames) > 0 {
		kf := make([]data.Field, 0, len(keyNames))
		for _, k := range keyNames {
			f := s.Row.Field(k)
			if f == nil {
				return Schemas{}, fmt.Errorf("primary key column %q is not among the captured columns", k)
			}
			kf = append(kf, data.F(k, f.Schema))
		}
		s.Key = data.StructOf(base+".Key", kf...)
	}
	s.Envelope = data.StructOf(base+".Envelope",
		data.F(FieldBefore, s.Row),
		data.F(FieldAfter, s.Row),
		data.F(FieldSource, source),
		data.F(FieldOp, data.StringSchema),
		data.F(FieldTsMs, data.OptionalInt64Schema),
	)
	return s, nil
}

// KeyOf returns the record key from a row: a struct of the primary key
// columns, or nil for a table without a primary key (or no row).
func (s Schemas) KeyOf(row *data.Struct) (*data.Schema, any) {
	if s.Key == nil {
		return nil, nil
	}
	if row == nil {
		return s.Key.AsOptional(), nil
	}
	k := data.NewStruct(s.Key)
	for _, name := range s.keyNames {
		if v := row.Get(name); v != nil {
			if err := k.Set(name, v); err != nil {
				return s.Key, nil
			}
		}
	}
	return s.Key, k
}

// KeyChanged reports whether an update moved its row to another primary
// key. Primary key columns are never NULL, so a key column missing from
// the before image (the server did not send it) means "cannot tell" and
// the update stays one.
func (s Schemas) KeyChanged(before, after *data.Struct) bool {
	if s.Key == nil || before == nil || after == nil {
		return false
	}
	changed := false
	for _, name := range s.keyNames {
		b := before.Get(name)
		if b == nil {
			return false
		}
		if !data.ValuesEqual(b, after.Get(name)) {
			changed = true
		}
	}
	return changed
}

// KeyNames returns the primary key columns in key order.
func (s Schemas) KeyNames() []string { return s.keyNames }

// Change is one change to turn into a record.
type Change struct {
	Op     string
	Before *data.Struct
	After  *data.Struct
	Source *data.Struct // of the source schema given to NewSchemas
	Commit time.Time    // commit time; zero when unknown (snapshot rows)
}

// Record builds the source record of a change, without its source
// partition and offset (the caller sets them). A truncate has no key.
func (s Schemas) Record(topic string, ch Change) *plugin.SourceRecord {
	env := data.NewStruct(s.Envelope).
		Put(FieldSource, ch.Source).
		Put(FieldOp, ch.Op).
		Put(FieldTsMs, time.Now().UnixMilli())
	if ch.Before != nil {
		env.Put(FieldBefore, ch.Before)
	}
	if ch.After != nil {
		env.Put(FieldAfter, ch.After)
	}
	keyRow := ch.After
	if keyRow == nil {
		keyRow = ch.Before
	}
	var ks *data.Schema
	var k any
	if ch.Op != OpTruncate {
		ks, k = s.KeyOf(keyRow)
	}
	return &plugin.SourceRecord{
		Topic:       topic,
		KeySchema:   ks,
		Key:         k,
		ValueSchema: s.Envelope,
		Value:       env,
		Timestamp:   ch.Commit,
	}
}

// Tombstone returns the tombstone that follows a delete event: the same
// topic, source partition, key and timestamp, and a null value without a
// schema (converters write a null Kafka value only when both are nil). The
// caller sets its source offset.
func Tombstone(del *plugin.SourceRecord) *plugin.SourceRecord {
	return &plugin.SourceRecord{
		SourcePartition: del.SourcePartition,
		Topic:           del.Topic,
		Partition:       del.Partition,
		KeySchema:       del.KeySchema,
		Key:             del.Key,
		Timestamp:       del.Timestamp,
		Headers:         del.Headers,
	}
}
