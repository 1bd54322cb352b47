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

// Package offsettest holds an in-memory source offset store for tests of
// source connectors run through the worker's task runners (task.New):
// offsets go through JSON, as on the offsets topic.
package offsettest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/conveyor-dev/conveyor/runtime/task"
)

// Store is a task.OffsetStore in memory.
type Store struct {
	mu sync.Mutex
	m  map[string][]byte
}

var _ task.OffsetStore = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{m: map[string][]byte{}} }

func key(connector string, p map[string]any) string {
	b, _ := json.Marshal(p)
	return connector + "/" + string(b)
}

// Read returns the stored offsets of the partitions, nil where none.
func (s *Store) Read(_ context.Context, connector string, parts []map[string]any) ([]map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(parts))
	for i, p := range parts {
		if b, ok := s.m[key(connector, p)]; ok && string(b) != "null" {
			if err := json.Unmarshal(b, &out[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Write stores offsets.
func (s *Store) Write(_ context.Context, connector string, offs []task.SourceOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range offs {
		b, err := json.Marshal(o.Offset)
		if err != nil {
			return err
		}
		s.m[key(connector, o.Partition)] = b
	}
	return nil
}

// Offset returns the stored offset of one partition, nil when none.
func (s *Store) Offset(connector string, partition map[string]any) map[string]any {
	out, _ := s.Read(context.Background(), connector, []map[string]any{partition})
	return out[0]
}
