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
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
)

// op is one record as a _bulk action: its NDJSON lines (the action line
// and, for an index, the document) ready to be sent.
type op struct {
	rec   *plugin.SinkRecord
	lines []byte
}

// TopicPartition is the partition of the op's record.
func (o op) TopicPartition() plugin.TopicPartition { return o.rec.TopicPartition() }

// position names a record's place in Kafka, never its contents.
func position(r *plugin.SinkRecord) string {
	return fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset)
}

// encoder renders values without a JSON text of their own. Decimals go as
// numbers, which Elasticsearch maps as numbers (base64 would be a string).
var encoder = data.JSONEncoder{NumericDecimal: true}

// build turns a record into its action, appended to dst's spare capacity:
//
//	{"index":{"_index":"orders","_id":"42","version":17,"version_type":"external"}}
//	{...the value as a JSON object...}
//
// or a delete for a tombstone. The _index is always named (ZincSearch's
// _bulk needs it on deletes). An error means the record cannot be written
// (a bad record: behavior.on.null.values=fail, a key that is no id, a
// value that is no JSON object); sinkwriter.ErrSkip that it is dropped on purpose.
func (s *settings) build(r *plugin.SinkRecord) (op, error) {
	index, err := s.index(r.Topic)
	if err != nil {
		return op{}, err
	}
	var id string
	if s.keyIgnore {
		id = r.Topic + "+" + strconv.FormatInt(int64(r.Partition), 10) + "+" + strconv.FormatInt(r.Offset, 10)
	} else if id, err = documentID(r.Key); err != nil {
		return op{}, err
	}
	action := "index"
	if r.Value == nil {
		switch s.nullValues {
		case BehaviorIgnore:
			return op{}, sinkwriter.ErrSkip
		case BehaviorFail:
			return op{}, fmt.Errorf("the value is null (a tombstone) and %s=%s: set it to delete or ignore", KeyNullValues, BehaviorFail)
		}
		action = "delete"
	}
	b := make([]byte, 0, 96+valueSize(r.Value))
	b = append(b, `{"`...)
	b = append(b, action...)
	b = append(b, `":{"_index":`...)
	b = data.AppendJSONString(b, index)
	b = append(b, `,"_id":`...)
	b = data.AppendJSONString(b, id)
	if !s.keyIgnore {
		// The offset as external version: the server keeps the highest,
		// so redelivered or reordered older records change nothing.
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, r.Offset, 10)
		b = append(b, `,"version_type":"external"`...)
	}
	b = append(b, "}}\n"...)
	if action == "delete" {
		return op{rec: r, lines: b}, nil
	}
	start := len(b)
	switch v := r.Value.(type) {
	case string:
		b = append(b, v...)
	case []byte:
		b = append(b, v...)
	default:
		if b, err = encoder.Append(b, r.ValueSchema, r.Value); err != nil {
			return op{}, fmt.Errorf("rendering the value as JSON: %w", err)
		}
	}
	doc := b[start:]
	if _, ok := r.Value.(string); ok || isBytes(r.Value) {
		if !jsonObject(doc) {
			return op{}, errors.New("the value is text but not a JSON object: a document must be one (use JsonConverter, or StringConverter with JSON object values)")
		}
	} else if len(doc) == 0 || doc[0] != '{' {
		return op{}, errors.New("the value is not a struct or map: a document must be a JSON object")
	}
	b = append(b, '\n')
	return op{rec: r, lines: b}, nil
}

func isBytes(v any) bool { _, ok := v.([]byte); return ok }

// jsonObject reports whether b is one valid JSON object.
func jsonObject(b []byte) bool {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	if i == len(b) || b[i] != '{' {
		return false
	}
	for j := i; j < len(b); j++ {
		if b[j] == '\n' { // one line per document in NDJSON
			return false
		}
	}
	return json.Valid(b)
}

// valueSize guesses the JSON size of a value, to size the buffer.
func valueSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []byte:
		return len(v)
	case data.JSONText:
		return len(v.Text)
	}
	return 256
}

// documentID renders a record key as a document id: strings as they are,
// integers in decimal. Other keys cannot be ids.
func documentID(key any) (string, error) {
	switch k := key.(type) {
	case nil:
		return "", fmt.Errorf("the key is null, and %s=false takes the document id from the key: give records keys, or set %s=true", KeyKeyIgnore, KeyKeyIgnore)
	case string:
		if k == "" {
			return "", errors.New("the key is an empty string, which is no document id")
		}
		if len(k) > 512 {
			return "", fmt.Errorf("the key is %d bytes long; document ids are at most 512", len(k))
		}
		return k, nil
	case []byte:
		return documentID(string(k))
	case int8:
		return strconv.FormatInt(int64(k), 10), nil
	case int16:
		return strconv.FormatInt(int64(k), 10), nil
	case int32:
		return strconv.FormatInt(int64(k), 10), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case int:
		return strconv.Itoa(k), nil
	case float64:
		// Schemaless JSON numbers; only whole ones make ids.
		if k == float64(int64(k)) {
			return strconv.FormatInt(int64(k), 10), nil
		}
	case json.Number:
		return k.String(), nil
	}
	return "", fmt.Errorf("a key of type %T cannot be a document id: use a string or integer key (for example ExtractField$Key), or %s=true", key, KeyKeyIgnore)
}
