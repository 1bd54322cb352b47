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

package redis

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// op is one record turned into Redis commands.
type op struct {
	rec    *plugin.SinkRecord
	key    string
	value  []byte // string mode
	fields []any  // hash and stream mode: name, value, name, value...
	del    bool   // a tombstone in string or hash mode
}

// TopicPartition is the partition of the op's record.
func (o op) TopicPartition() plugin.TopicPartition { return o.rec.TopicPartition() }

// errBadRecord marks a record the sink cannot turn into commands.
var errBadRecord = errors.New("bad record")

func badRecord(r *plugin.SinkRecord, format string, args ...any) error {
	return fmt.Errorf("record %s/%d: %s: %w", r.TopicPartition(), r.Offset, fmt.Sprintf(format, args...), errBadRecord)
}

// encode turns a record into its op.
func (s *settings) encode(r *plugin.SinkRecord) (op, error) {
	o := op{rec: r}
	if s.mode == ModeStream {
		o.key = s.prefix + strings.ReplaceAll(s.stream, "${topic}", r.Topic)
		var key []byte
		var err error
		if r.Key != nil {
			if key, err = bytesOf(r.KeySchema, r.Key, nil); err != nil {
				return o, badRecord(r, "the key cannot be written: %v", err)
			}
		}
		o.fields = []any{"key", key, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset}
		if r.Value != nil {
			v, err := bytesOf(r.ValueSchema, r.Value, nil)
			if err != nil {
				return o, badRecord(r, "the value cannot be written: %v", err)
			}
			o.fields = append(o.fields, "value", v)
		}
		return o, nil
	}
	if r.Key == nil {
		return o, badRecord(r, "it has no key, and redis.mode=%s writes the value under its key", s.mode)
	}
	k, err := bytesOf(r.KeySchema, r.Key, nil)
	if err != nil {
		return o, badRecord(r, "the key cannot be written: %v", err)
	}
	o.key = s.prefix + string(k)
	if r.Value == nil {
		o.del = true
		return o, nil
	}
	if s.mode == ModeHash {
		if o.fields, err = hashFields(r.ValueSchema, r.Value); err != nil {
			return o, badRecord(r, "%v", err)
		}
		return o, nil
	}
	if o.value, err = bytesOf(r.ValueSchema, r.Value, nil); err != nil {
		return o, badRecord(r, "the value cannot be written: %v", err)
	}
	return o, nil
}

// bytesOf renders a key or value: strings and bytes as they are,
// anything else as JSON (as JsonConverter writes payloads). It appends to
// dst.
func bytesOf(schema *data.Schema, v any, dst []byte) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return append(dst, x...), nil
	case []byte:
		return append(dst, x...), nil
	}
	return data.JSONEncoder{NumericDecimal: true}.Append(dst, schema, v)
}

// hashFields returns the field/value pairs of a struct or JSON object
// value; null fields are left out, nested values are JSON.
func hashFields(schema *data.Schema, v any) ([]any, error) {
	var out []any
	add := func(name string, s *data.Schema, fv any) error {
		if fv == nil {
			return nil
		}
		b, err := scalar(s, fv)
		if err != nil {
			return fmt.Errorf("field %q: %v", name, err)
		}
		out = append(out, name, b)
		return nil
	}
	switch x := v.(type) {
	case *data.Struct:
		for _, f := range x.Schema().Fields {
			if err := add(f.Name, f.Schema, x.GetIndex(f.Index)); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		// Sorted: a redelivered record writes the same hash.
		for _, name := range slices.Sorted(maps.Keys(x)) {
			if err := add(name, nil, x[name]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("the value is %T; redis.mode=hash needs a struct or a JSON object", v)
	}
	if len(out) == 0 {
		return nil, errors.New("the value has no non-null field; redis.mode=hash cannot write an empty hash (send a tombstone to delete the key)")
	}
	return out, nil
}

// scalar renders one hash field: numbers and booleans as their decimal
// text, strings and bytes as they are, anything else as JSON.
func scalar(s *data.Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case bool:
		return strconv.AppendBool(nil, x), nil
	case int8, int16, int32, int64, int:
		return fmt.Appendf(nil, "%d", x), nil
	case float32:
		return strconv.AppendFloat(nil, float64(x), 'g', -1, 32), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a number Redis can store", x)
		}
		return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
	case time.Time:
		return strconv.AppendInt(nil, x.UnixMilli(), 10), nil
	}
	return bytesOf(s, v, nil)
}
