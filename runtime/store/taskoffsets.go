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

package store

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/task"
)

// TaskOffsets serves the source runners' task.OffsetStore from an
// OffsetStore on the offsets topic. With Fallback set (a connector with an
// offsets.storage.topic of its own), Store is the connector's topic and
// partitions it has no offset for are read from Fallback, the worker's
// topic, as Kafka Connect does.
type TaskOffsets struct{ Store, Fallback *OffsetStore }

var _ task.TransactionalOffsets = TaskOffsets{}

// Read returns the stored offsets of the given source partitions, aligned
// with them; nil where none was stored.
func (a TaskOffsets) Read(_ context.Context, connector string, partitions []map[string]any) ([]map[string]any, error) {
	out := make([]map[string]any, len(partitions))
	for i, p := range partitions {
		out[i] = a.Store.Offset(connector, p)
		if out[i] == nil && a.Fallback != nil {
			out[i] = a.Fallback.Offset(connector, p)
		}
	}
	return out, nil
}

// OffsetRecords encodes offsets as records of Store's topic, for a
// transactional source task.
func (a TaskOffsets) OffsetRecords(connector string, offsets []task.SourceOffset) ([]*kgo.Record, error) {
	return a.Store.Records(connector, toStore(offsets))
}

// ReadToEnd reads the topics to their (last stable) end.
func (a TaskOffsets) ReadToEnd(ctx context.Context) error {
	if a.Fallback != nil {
		if err := a.Fallback.ReadToEnd(ctx); err != nil {
			return err
		}
	}
	return a.Store.ReadToEnd(ctx)
}

func toStore(offsets []task.SourceOffset) []SourceOffset {
	puts := make([]SourceOffset, len(offsets))
	for i, o := range offsets {
		puts[i] = SourceOffset{Partition: o.Partition, Offset: o.Offset}
	}
	return puts
}

// Write stores offsets and returns once the broker acknowledged them.
func (a TaskOffsets) Write(ctx context.Context, connector string, offsets []task.SourceOffset) error {
	return a.Store.Put(ctx, connector, toStore(offsets))
}
