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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
)

// SourceOffset is one source partition's offset. A nil Offset removes it.
type SourceOffset struct {
	Partition map[string]any
	Offset    map[string]any
}

// OffsetStore keeps source connector offsets on the offset topic, keyed as
// Kafka Connect keys them: ["<connector>", {partition}] with the offset map
// (or null) as value.
type OffsetStore struct {
	log *kafkalog.Log

	mu sync.Mutex
	// per connector, per canonical partition JSON
	data map[string]map[string]SourceOffset
}

// OpenOffsetStore reads the offset topic to its end.
func OpenOffsetStore(ctx context.Context, open LogOpener, topic kafkalog.Topic) (*OffsetStore, error) {
	s := &OffsetStore{data: map[string]map[string]SourceOffset{}}
	l, err := open(ctx, topic, s.apply)
	if err != nil {
		return nil, fmt.Errorf("opening offset store: %w", err)
	}
	s.log = l
	return s, nil
}

// OffsetKey encodes the record key for a connector's source partition.
func OffsetKey(connector string, partition map[string]any) ([]byte, error) {
	if partition == nil {
		partition = map[string]any{}
	}
	return json.Marshal([]any{connector, partition})
}

func (s *OffsetStore) apply(r kafkalog.Record) {
	var key []json.RawMessage
	if json.Unmarshal(r.Key, &key) != nil || len(key) != 2 {
		return
	}
	var connector string
	var partition map[string]any
	if json.Unmarshal(key[0], &connector) != nil || json.Unmarshal(key[1], &partition) != nil {
		return
	}
	canon, err := json.Marshal(partition) // map keys sorted: a canonical form
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Tombstone() || string(r.Value) == "null" {
		if m := s.data[connector]; m != nil {
			delete(m, string(canon))
			if len(m) == 0 {
				delete(s.data, connector)
			}
		}
		return
	}
	var offset map[string]any
	if json.Unmarshal(r.Value, &offset) != nil {
		return
	}
	if s.data[connector] == nil {
		s.data[connector] = map[string]SourceOffset{}
	}
	s.data[connector][string(canon)] = SourceOffset{Partition: partition, Offset: offset}
}

// Offsets returns a connector's stored offsets, sorted by partition.
func (s *OffsetStore) Offsets(connector string) []SourceOffset {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.data[connector]
	keys := slices.Sorted(maps.Keys(m))
	out := make([]SourceOffset, 0, len(keys))
	for _, k := range keys {
		out = append(out, SourceOffset{Partition: maps.Clone(m[k].Partition), Offset: maps.Clone(m[k].Offset)})
	}
	return out
}

// Offset returns the stored offset of one source partition (nil if none).
func (s *OffsetStore) Offset(connector string, partition map[string]any) map[string]any {
	canon, err := json.Marshal(partition)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.data[connector][string(canon)].Offset)
}

// Put writes offsets (nil Offset = delete) and returns once the broker
// acknowledged all of them and this store has applied them.
func (s *OffsetStore) Put(ctx context.Context, connector string, offsets []SourceOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []error
		reach = map[int32]int64{}
	)
	for _, o := range offsets {
		key, val, err := encodeOffset(connector, o)
		if err != nil {
			return err
		}
		wg.Add(1)
		s.log.Produce(ctx, key, val, func(p int32, off int64, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if off+1 > reach[p] {
				reach[p] = off + 1
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("writing offsets of connector %q to topic %q: %w", connector, s.log.Topic(), err)
	}
	return s.log.WaitApplied(ctx, reach)
}

// encodeOffset encodes one offset as the key and value of its record.
func encodeOffset(connector string, o SourceOffset) (key, val []byte, err error) {
	if key, err = OffsetKey(connector, o.Partition); err != nil {
		return nil, nil, fmt.Errorf("encoding offset key of connector %q: %w", connector, err)
	}
	if o.Offset != nil {
		if val, err = json.Marshal(o.Offset); err != nil {
			return nil, nil, fmt.Errorf("encoding offset of connector %q: %w", connector, err)
		}
	}
	return key, val, nil
}

// Records encodes offsets as records of the offset topic, for a
// transactional producer that writes them inside its own transaction; the
// store applies them once that transaction committed (it reads its topic
// read_committed when the worker runs exactly-once sources).
func (s *OffsetStore) Records(connector string, offsets []SourceOffset) ([]*kgo.Record, error) {
	out := make([]*kgo.Record, 0, len(offsets))
	for _, o := range offsets {
		key, val, err := encodeOffset(connector, o)
		if err != nil {
			return nil, err
		}
		out = append(out, &kgo.Record{Topic: s.log.Topic(), Key: key, Value: val})
	}
	return out, nil
}

// Topic is the name of the store's topic.
func (s *OffsetStore) Topic() string { return s.log.Topic() }

// DeleteAll removes every stored offset of a connector.
func (s *OffsetStore) DeleteAll(ctx context.Context, connector string) error {
	cur := s.Offsets(connector)
	for i := range cur {
		cur[i].Offset = nil
	}
	return s.Put(ctx, connector, cur)
}

// ReadToEnd waits until every write made before the call is applied.
func (s *OffsetStore) ReadToEnd(ctx context.Context) error { return s.log.ReadToEnd(ctx) }

// Close stops following the topic.
func (s *OffsetStore) Close() { s.log.Close() }
