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

package rangesource

import (
	"context"
	"strconv"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
)

// BenchmarkPoll measures the task's own cost per record (make bench's
// source configuration: 170-byte payloads, batches of 2000).
func BenchmarkPoll(b *testing.B) {
	ctx := context.Background()
	task := &Task{}
	cfg := map[string]string{"topic": "t", "count": strconv.Itoa(b.N), "batch.size": "2000", "record.size": "170"}
	if err := task.Start(ctx, &plugintest.SourceTaskContext{Store: plugintest.NewOffsetStore()}, cfg); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; {
		recs, err := task.Poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n += len(recs)
	}
}
