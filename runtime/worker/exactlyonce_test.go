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

package worker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
)

// fenceTasks fences every task's transactional producer: an
// old-generation producer of task 1, started by hand with the id a worker
// derives ("<group>-<connector>-1") and holding an open transaction, can no
// longer commit once the leader fenced the connector's 2 earlier tasks, and
// its record is never visible read_committed.
func TestFenceTasksStopsOldGenerationProducers(t *testing.T) {
	_, kopts := kafkatest.Cluster(t)
	adm := kafkatest.Admin(t, kopts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	old, err := kgo.NewClient(append(slices.Clip(kopts), kgo.TransactionalID("grp-src-1"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := fenceTasks(ctx, cl, "grp", "src", 2); err != nil {
		t.Fatal(err)
	}
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced old-generation producer committed")
	}
	ends, err := adm.ListCommittedOffsets(ctx, "out")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := kgo.NewClient(append(slices.Clip(kopts), kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if end, _ := ends.Lookup("out", 0); end.Offset > 0 {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		rc.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "zombie" {
				t.Error("the fenced producer's record is visible read_committed")
			}
		})
	}
}
