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
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestSinkTakesOverItsTaskFromAKilledWorker: task 0 of sink s ran on worker
// wA, whose process was killed (no LeaveGroup); the worker group gave the
// task to wB. wA's static member "wA-s-0" would hold every rebalance of the
// sink group open until its session (60s here) expires; wB's consumer
// removes it by instance id before it joins, and its records flow at once.
func TestSinkTakesOverItsTaskFromAKilledWorker(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	produceJSON(t, c, "in", `{"a":0}`, `{"a":1}`, `{"a":2}`)
	group := connectnames.SinkGroup("s")

	// wA's consumer: joined and synced, then its process died.
	ghost, err := kgo.NewClient(kafkaOpts(c)...)
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rawMember(ctx, ghost, group, "wA-s-0", "in", time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}

	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, newStatuses(), ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink, Topics: []string{"in"},
		InstanceID: "wB-s-0", SessionTimeout: 6 * time.Second, RebalanceTimeout: 20 * time.Second}
	cfg.ValueConverter = jsonConverter(t)
	start := time.Now()
	newSink(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "wB's task to put the 3 records", func() bool { return sink.distinct() == 3 })
	t.Logf("wB's task put the records %s after it started (wA's session: 60s)", time.Since(start).Round(10*time.Millisecond))
	gs, err := kadm.NewClient(ghost).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range gs[group].Members {
		if m.InstanceID != nil && *m.InstanceID == "wA-s-0" {
			t.Errorf("wA's static member is still in the sink group")
		}
	}
}
