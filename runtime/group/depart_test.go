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

package group

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
)

func TestDeparted(t *testing.T) {
	members := func(ids ...string) []kadm.DescribedGroupMember {
		var out []kadm.DescribedGroupMember
		for _, id := range ids {
			m := kadm.DescribedGroupMember{MemberID: "m-" + id}
			if id != "" {
				m.InstanceID = &id
			}
			out = append(out, m)
		}
		return out
	}
	alive := func(ws ...string) func(string) bool { return func(w string) bool { return slices.Contains(ws, w) } }
	sink := func(id string) string { return connectnames.SinkInstanceWorker("orders-sink", id) }
	for _, tc := range []struct {
		name    string
		members []kadm.DescribedGroupMember
		owner   Owner
		alive   func(string) bool
		want    []string
	}{
		{"workers: the deleted pod's identity goes", members("cc-0", "cc-1", "cc-old"), WorkerItself, alive("cc-0", "cc-1"), []string{"cc-old"}},
		{"workers: every pod alive", members("cc-0", "cc-1"), WorkerItself, alive("cc-0", "cc-1"), nil},
		{"dynamic members are never removed by name", members("", "cc-0"), WorkerItself, alive("cc-0"), nil},
		{"sink consumers of a gone worker go", members("cc-0-orders-sink-0", "cc-old-orders-sink-1", "cc-old-orders-sink-12"), sink, alive("cc-0"),
			[]string{"cc-old-orders-sink-1", "cc-old-orders-sink-12"}},
		{"a sink group member that is not a task consumer is left alone", members("someone-else", "cc-0-other-0"), sink, alive("cc-0"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Departed(tc.members, tc.owner, tc.alive); !slices.Equal(got, tc.want) {
				t.Errorf("Departed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRemoveDepartedUnblocksTheGroup: the static member of a worker that
// is gone for good (killed before its LeaveGroup, never to come back under
// that name) holds every rebalance of the group until its session expires
// or the rebalance deadline passes, on Kafka and on kfake alike: static
// members usually get long sessions, so that a restart keeps their place.
// Removing it by instance id (LeaveGroup v3+, KIP-345's admin call) lets
// the waiting rebalance complete at once.
func TestRemoveDepartedUnblocksTheGroup(t *testing.T) {
	c := newTestCluster(t)
	a := c.startStatic(t, "a", "a", 2*time.Second)
	gone := c.startMember(t, Config{Group: "workers", Protocol: "test-v1", InstanceID: "gone",
		SessionTimeout: 30 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 30 * time.Second}, "gone")
	waitMembers(t, []*running{a, gone}, "a", "gone")

	gone.m.Abandon() // killed: no LeaveGroup
	gone.cl.Close()
	// New metadata makes a's rejoin start a rebalance even when a does not
	// lead (a follower rejoining unchanged gets the current assignment).
	a.h.rename("a2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err := a.m.Rebalance(ctx)
	cancel()
	if err == nil {
		t.Fatalf("a rebalanced without gone within 3s, before gone's session (30s) or the rebalance deadline (30s) passed: this test no longer shows the wait")
	}

	adm := kadm.NewClient(c.client(t))
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	removed, err := RemoveDeparted(ctx, adm, map[string]Owner{"workers": WorkerItself, "connect-none": WorkerItself},
		func(context.Context) (map[string]bool, error) { return map[string]bool{"a": true}, nil }, "pod deleted")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed["workers"], []string{"gone"}) || len(removed) != 1 {
		t.Fatalf("removed %v, want workers: [gone]", removed)
	}
	waitMembers(t, []*running{a}, "a2")
	took := time.Since(start)
	t.Logf("after the removal the group formed without gone in %v (gone's session 30s)", took)
	if took >= 5*time.Second {
		t.Errorf("the group took %v to form without gone after its removal", took)
	}
}
