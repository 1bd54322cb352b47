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

package jdbc

import (
	"maps"
	"slices"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Exactly-once sink writes (exactly.once=true): every transaction that
// writes a batch also moves the batch's Kafka offsets in a table the
// connector owns, keyed by connector, topic and partition. Inside the
// transaction the rows of the batch's partitions are locked first, and
// records below a partition's stored offset (already written by an
// earlier transaction, of this task or of a task that owned the partition
// before) are dropped. So a record is written once however often Kafka
// delivers it: after a crash, a rebalance or a redelivery, and in insert
// mode too. On every assignment the task seeks its partitions to the
// stored offsets; the consumer group's commits still move (lag metrics and
// autoscaling read them), but only the table decides.
const (
	KeyExactlyOnce        = "exactly.once"
	KeyExactlyOnceOffsets = "exactly.once.offsets.table"

	// DefaultOffsetsTable is the offsets table unless
	// exactly.once.offsets.table names another.
	DefaultOffsetsTable = "conveyor_sink_offsets"
)

// ExactlyOnceFields are the exactly-once sink's config fields.
func ExactlyOnceFields(group string) []plugin.ConfigField {
	return []plugin.ConfigField{
		{Name: KeyExactlyOnce, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Exactly once", Dependents: []string{KeyExactlyOnceOffsets},
			Doc: "Write each batch and its Kafka offsets in one transaction (offsets in exactly.once.offsets.table), resume from the stored offsets and drop records already written: every record is written exactly once, in insert mode too. Read exactly-once sources' topics with consumer.override.isolation.level=read_committed."},
		{Name: KeyExactlyOnceOffsets, Type: plugin.TypeString, Default: DefaultOffsetsTable, Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthMedium,
			DisplayName: "Exactly-once offsets table", Validator: plugin.NonEmpty(),
			Doc: "Table (or schema.table) holding the sink's Kafka offsets with exactly.once=true; created when missing. Columns: connector, topic, kafka_partition, next_offset."},
	}
}

// BatchOffsets returns the offset after each partition's last record of
// a batch, and the partitions in a fixed order (topic, then partition), the
// order in which to lock their rows so that two tasks never deadlock.
func BatchOffsets(recs []*plugin.SinkRecord) (map[plugin.TopicPartition]int64, []plugin.TopicPartition) {
	next := map[plugin.TopicPartition]int64{}
	for _, r := range recs {
		tp := r.TopicPartition()
		next[tp] = max(next[tp], r.Offset+1)
	}
	tps := slices.SortedFunc(maps.Keys(next), func(a, b plugin.TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return next, tps
}

// Claim drops the records below their partition's stored offset (already
// written) and any record a batch holds twice (records of a partition come
// in offset order, so one at or below an offset already kept is a copy,
// delivered again after a seek back), and raises next to the stored
// offsets where they are ahead, so that an offset never moves back. It
// returns the records to write.
func Claim(recs []*plugin.SinkRecord, next, stored map[plugin.TopicPartition]int64) []*plugin.SinkRecord {
	keep := recs[:0:0]
	from := make(map[plugin.TopicPartition]int64, len(stored)) // a partition's lowest offset still to write
	maps.Copy(from, stored)
	for _, r := range recs {
		tp := r.TopicPartition()
		if o, ok := from[tp]; !ok || r.Offset >= o {
			keep = append(keep, r)
			from[tp] = r.Offset + 1
		}
	}
	for tp, o := range stored {
		if next[tp] < o {
			next[tp] = o
		}
	}
	return keep
}

// OffsetRows is a result set of (topic, partition, next offset) rows:
// pgx.Rows and *sql.Rows both are.
type OffsetRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanOffsets reads stored offsets from rows.
func ScanOffsets(rows OffsetRows) (map[plugin.TopicPartition]int64, error) {
	out := map[plugin.TopicPartition]int64{}
	for rows.Next() {
		var tp plugin.TopicPartition
		var next int64
		if err := rows.Scan(&tp.Topic, &tp.Partition, &next); err != nil {
			return nil, err
		}
		out[tp] = next
	}
	return out, rows.Err()
}

// Seek resets the assigned partitions that have a stored offset to it and
// returns how many it reset.
func Seek(tc plugin.SinkTaskContext, partitions []plugin.TopicPartition, stored map[plugin.TopicPartition]int64) int {
	seek := map[plugin.TopicPartition]int64{}
	for _, tp := range partitions {
		if o, ok := stored[tp]; ok {
			seek[tp] = o
		}
	}
	if len(seek) > 0 {
		tc.ResetOffsets(seek)
	}
	return len(seek)
}
