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

package task

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// benchKey is a table row's key as the JSON converter with schemas writes
// it (about 140 bytes).
var benchKey = []byte(`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"public.src.Key"},"payload":{"id":123456}}`)

// BenchmarkKeyPartition partitions records by a 140-byte key through the
// source runner's partitioner.
func BenchmarkKeyPartition(b *testing.B) {
	tp := newSourcePartitioner().ForTopic("t")
	r := &kgo.Record{Partition: -1, Key: benchKey}
	b.SetBytes(int64(len(benchKey)))
	n := 0
	for b.Loop() {
		n += tp.Partition(r, 12)
	}
	_ = n
}
