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

package transforms

import (
	"maps"
	"slices"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// The change-event envelope of the PostgreSQL CDC source (the same field
// names and operation codes as Debezium's).
const (
	envBefore = "before"
	envAfter  = "after"
	envOp     = "op"

	opCreate   = "c"
	opUpdate   = "u"
	opDelete   = "d"
	opRead     = "r"
	opTruncate = "t"

	// DeletedField is the field delete.handling.mode=rewrite adds to every
	// row: "true" for a deleted row, "false" otherwise.
	DeletedField = "__deleted"
)

// Delete handling modes of ExtractNewRecordState.
const (
	DeleteDrop      = "drop"
	DeleteTombstone = "tombstone"
	DeleteRewrite   = "rewrite"
)

// extractNewRecordState turns change events into plain rows: inserts,
// updates and snapshot reads become their new row, deletes what the mode
// says, truncates are dropped. Tombstones (null values, which the CDC
// source sends after each delete event) are dropped unless
// drop.tombstones=false. Other records that are not change events (no op
// field) pass unchanged.
type extractNewRecordState struct {
	mode           string
	dropTombstones bool
	cache          schemaCache
}

func (t *extractNewRecordState) Apply(r *Record) (*Record, error) {
	if r.Value == nil {
		if t.dropTombstones {
			return nil, nil
		}
		return r, nil
	}
	var op string
	var before, after any
	var rowSchema *data.Schema
	switch v := r.Value.(type) {
	case *data.Struct:
		s := r.ValueSchema
		if s == nil || s.Type != data.TypeStruct || s.Field(envOp) == nil || s.Field(envAfter) == nil || s.Field(envBefore) == nil {
			return r, nil
		}
		op, _ = v.Get(envOp).(string)
		before, after = v.Get(envBefore), v.Get(envAfter)
		rowSchema = s.Field(envAfter).Schema
	case map[string]any:
		o, ok := v[envOp].(string)
		if !ok {
			return r, nil
		}
		op, before, after = o, v[envBefore], v[envAfter]
	default:
		return r, nil
	}
	switch op {
	case opTruncate:
		return nil, nil
	case opDelete:
		switch t.mode {
		case DeleteDrop:
			return nil, nil
		case DeleteTombstone:
			// No value schema either: converters then write a null Kafka
			// value (a schema with a null payload is no tombstone).
			r.ValueSchema, r.Value = nil, nil
			return r, nil
		}
		return t.row(r, rowSchema, before, "true")
	case opCreate, opUpdate, opRead:
		return t.row(r, rowSchema, after, "false")
	}
	return r, nil // an op this transform does not know: leave it
}

// row sets the value to a row, adding the deleted marker in rewrite mode.
func (t *extractNewRecordState) row(r *Record, schema *data.Schema, row any, deleted string) (*Record, error) {
	if t.mode != DeleteRewrite {
		r.ValueSchema, r.Value = schema, row
		return r, nil
	}
	switch x := row.(type) {
	case *data.Struct:
		ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
			return structCopy(in, append(slices.Clone(in.Fields), data.F(DeletedField, data.StringSchema))), nil
		})
		r.ValueSchema, r.Value = ns, data.NewStructTrusted(ns, append(structValues(x), deleted))
	case map[string]any:
		m := maps.Clone(x)
		m[DeletedField] = deleted
		r.ValueSchema, r.Value = nil, m
	default: // no row image (for example a delete without REPLICA IDENTITY)
		r.ValueSchema, r.Value = schema, row
	}
	return r, nil
}

func init() {
	registerTransform(&TransformType{Class: "io.conveyor.transforms.ExtractNewRecordState",
		Aliases: []string{"ExtractNewRecordState", "unwrap"},
		Doc: "Turns the change events of the PostgreSQL CDC source into plain rows, so they can go straight into " +
			"a table: inserts, updates and snapshot rows become the new row, truncates are dropped, deletes " +
			"follow delete.handling.mode, tombstones follow drop.tombstones.",
		Options: []Option{{Name: "delete.handling.mode", Default: DeleteTombstone,
			Doc: "What a delete event becomes: tombstone (a record with the key and a null value, which the PostgreSQL sink " +
				"turns into a DELETE when delete.enabled=true), drop (nothing), or rewrite (the old row with " +
				DeletedField + "=\"true\"; every other row then carries " + DeletedField + "=\"false\")."},
			{Name: "drop.tombstones", Type: "BOOLEAN", Default: "true",
				Doc: "Drop tombstones (records with a null value), such as the one the PostgreSQL CDC source sends after every " +
					"delete event (tombstones.on.delete=true). With the default delete.handling.mode=tombstone the delete event " +
					"itself becomes the tombstone, so true gives exactly one tombstone per delete, and false two (the same key " +
					"deleted twice). false suits delete.handling.mode=drop (the source's tombstone is then the only record of a " +
					"delete) or rewrite (the row with " + DeletedField + "=\"true\", then the tombstone)."}},
		New: func(o *Options) Transformation {
			return &extractNewRecordState{mode: o.OneOf("delete.handling.mode", DeleteTombstone, DeleteDrop, DeleteTombstone, DeleteRewrite),
				dropTombstones: o.Bool("drop.tombstones", true),
				cache:          schemaCache{}}
		}})
}
