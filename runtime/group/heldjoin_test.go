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
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHeldJoinIsNotResent: while a rebalance waits for a member that does
// not rejoin (here one that keeps heartbeating), a member the coordinator
// knows keeps its one JoinGroup outstanding past rebalance.timeout.ms plus
// 5s instead of abandoning and re-sending it. kfake differs from Kafka
// here: it restarts the rebalance deadline on every JoinGroup (groups.go,
// "Always reset the timer with the current max rebalance timeout"), so a
// re-sent JoinGroup would push the deadline out again; Kafka keeps the
// deadline set when the rebalance began.
func TestHeldJoinIsNotResent(t *testing.T) {
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	c := &testCluster{addrs: k.ListenAddrs()}
	var joinsA atomic.Int32
	k.ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		k.KeepControl()
		if jr := r.(*kmsg.JoinGroupRequest); jr.InstanceID != nil && *jr.InstanceID == "a" {
			joinsA.Add(1)
		}
		return nil, nil, false
	})
	// a gives up a JoinGroup after 1s + 5s under Kafka's rule.
	a := c.startMember(t, Config{Group: "workers", Protocol: "test-v1", InstanceID: "a",
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 400 * time.Millisecond, RebalanceTimeout: time.Second}, "a")
	waitMembers(t, []*running{a}, "a")

	// z joins with a 12s rebalance timeout, syncs, then only heartbeats.
	zc := c.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.InstanceID = "workers", ProtocolType, kmsg.StringPtr("z")
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 12000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "test-v1", Metadata: []byte("z")}}
	jr, err := join.RequestWith(ctx, zc)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("z's JoinGroup: %v %v", err, kerr.ErrorForCode(jr.ErrorCode))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID, sync.InstanceID = "workers", jr.Generation, jr.MemberID, join.InstanceID
	if sr, err := sync.RequestWith(ctx, zc); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("z's SyncGroup: %v", err)
	}
	waitMembers(t, []*running{a}, "a", "z")
	stopZ := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopZ:
				return
			case <-time.After(time.Second):
			}
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.Generation, hb.MemberID, hb.InstanceID = "workers", jr.Generation, jr.MemberID, join.InstanceID
			_, _ = hb.RequestWith(ctx, zc)
		}
	}()

	before := joinsA.Load()
	a.h.rename("a2") // a rejoins with new metadata: a real rebalance, which waits for z
	a.m.RequestRejoin()
	time.Sleep(9 * time.Second) // longer than a's 6s JoinGroup bound; the rebalance stays open all along
	close(stopZ)
	sent := joinsA.Load() - before
	t.Logf("a sent %d JoinGroup(s) in 9s while the rebalance waited for z (Kafka's client bound: 6s)", sent)
	if sent != 1 {
		t.Errorf("a sent %d JoinGroups while its first was held; want 1", sent)
	}
	// z stops heartbeating: its session ends and the group forms without it.
	waitMembers(t, []*running{a}, "a2")
}
