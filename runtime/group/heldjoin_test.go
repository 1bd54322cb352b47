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

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// heldOpen is a group whose rebalances wait: member z joins with an 8s
// rebalance timeout, syncs, then only heartbeats and never rejoins, so a
// rebalance stays open for 8s after the last JoinGroup. joins counts the
// JoinGroups that carry instance id who. newHeldOpen returns it with member
// a running, in one generation with z.
type heldOpen struct {
	c     *testCluster
	joins atomic.Int32
	stopZ chan struct{}
}

func newHeldOpen(t *testing.T, who string) (*heldOpen, *running) {
	t.Helper()
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	h := &heldOpen{c: &testCluster{addrs: k.ListenAddrs()}, stopZ: make(chan struct{})}
	k.ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		k.KeepControl()
		if jr := r.(*kmsg.JoinGroupRequest); jr.InstanceID != nil && *jr.InstanceID == who {
			h.joins.Add(1)
		}
		return nil, nil, false
	})
	a := h.c.startMember(t, heldConfig("a"), "a")
	waitMembers(t, []*running{a}, "a")
	h.joinZ(t)
	waitMembers(t, []*running{a}, "a", "z")
	return h, a
}

// joinZ adds z, which syncs and then only heartbeats until stopZ.
func (h *heldOpen) joinZ(t *testing.T) {
	t.Helper()
	zc := h.c.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.InstanceID = "workers", ProtocolType, kmsg.StringPtr("z")
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 8000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "test-v1", Metadata: []byte("z")}}
	jr, err := join.RequestWith(ctx, zc)
	if err != nil || jr.ErrorCode != 0 {
		cancel()
		t.Fatalf("z's JoinGroup: %v %v", err, kerr.ErrorForCode(jr.ErrorCode))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID, sync.InstanceID = "workers", jr.Generation, jr.MemberID, join.InstanceID
	if sr, err := sync.RequestWith(ctx, zc); err != nil || sr.ErrorCode != 0 {
		cancel()
		t.Fatalf("z's SyncGroup: %v", err)
	}
	go func() {
		defer cancel()
		for {
			select {
			case <-h.stopZ:
				return
			case <-time.After(time.Second):
			}
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.Generation, hb.MemberID, hb.InstanceID = "workers", jr.Generation, jr.MemberID, join.InstanceID
			_, _ = hb.RequestWith(ctx, zc)
		}
	}()
}

// heldConfig gives up a JoinGroup after 1s + 5s under Kafka's rule (and a
// first JoinGroup after 10s, more than z's 8s, now).
func heldConfig(instance string) Config {
	return Config{Group: "workers", Protocol: "test-v1", InstanceID: instance,
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 400 * time.Millisecond, RebalanceTimeout: time.Second}
}

// sentWhileHeld waits 7.5s, longer than Kafka's client bound on a JoinGroup
// (6s here), while the rebalance stays open, then lets z go.
func (h *heldOpen) sentWhileHeld(t *testing.T, before int32, who string) {
	t.Helper()
	time.Sleep(7500 * time.Millisecond) // longer than the 6s JoinGroup bound; the rebalance stays open all along
	close(h.stopZ)
	sent := h.joins.Load() - before
	t.Logf("%s sent %d JoinGroup(s) in 7.5s while the rebalance waited for z (Kafka's client bound: 6s)", who, sent)
	if sent != 1 {
		t.Errorf("%s sent %d JoinGroups while its first was held; want 1", who, sent)
	}
}

// TestHeldJoinIsNotResent: while a rebalance waits for a member that does
// not rejoin (here one that keeps heartbeating), a member the coordinator
// knows keeps its one JoinGroup outstanding past rebalance.timeout.ms plus
// 5s instead of abandoning and re-sending it. kfake differs from Kafka
// here: it restarts the rebalance deadline on every JoinGroup (groups.go,
// "Always reset the timer with the current max rebalance timeout"), so a
// re-sent JoinGroup would push the deadline out again; Kafka keeps the
// deadline set when the rebalance began.
func TestHeldJoinIsNotResent(t *testing.T) {
	h, a := newHeldOpen(t, "a")
	before := h.joins.Load()
	a.h.rename("a2") // a rejoins with new metadata: a real rebalance, which waits for z
	a.m.RequestRejoin()
	h.sentWhileHeld(t, before, "a")
	// z stops heartbeating: its session ends and the group forms without it.
	waitMembers(t, []*running{a}, "a2")
}

// TestFirstJoinIsNotResent: a member that cannot heartbeat yet (a restarted
// static worker's first JoinGroup) holds it too while the rebalance waits,
// instead of re-sending it after rebalance.timeout.ms plus 5s. On kfake each
// re-sent first JoinGroup of a static member replaces the member and
// restarts the rebalance deadline: in the chaos tier's heavy storm three
// restarted workers re-sent theirs every 25s against a 20s deadline, and the
// group never formed again.
func TestFirstJoinIsNotResent(t *testing.T) {
	h, a := newHeldOpen(t, "b")
	before := h.joins.Load()
	b := h.c.startMember(t, heldConfig("b"), "b") // a new process: its first JoinGroup waits for z
	h.sentWhileHeld(t, before, "b")
	waitMembers(t, []*running{a, b}, "a", "b")
}

// TestRestartDuringSyncIsCountedRight: a static member's process dies while
// it waits in SyncGroup (the leader has not synced yet) and comes back at
// once. kfake differs from Kafka here: replacing an incarnation that waits
// in SyncGroup (groups.go replaceStaticMember, then removeMember) counts it
// as a member that had joined, so the rebalance that follows counts one
// joined member too few and completes only at its deadline (8s here),
// however soon both members have joined; Kafka counts right. The returning
// member waits until the group has left CompletingRebalance before it
// takes its place (static.go), and the group forms at once.
func TestRestartDuringSyncIsCountedRight(t *testing.T) {
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	c := &testCluster{addrs: k.ListenAddrs()}
	var armed, hold, fSynced atomic.Bool
	k.ControlKey(int16(kmsg.SyncGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		k.KeepControl()
		sr := r.(*kmsg.SyncGroupRequest)
		switch {
		case sr.InstanceID == nil || !armed.Load():
		case *sr.InstanceID == "f":
			fSynced.Store(true)
		case *sr.InstanceID == "l" && hold.CompareAndSwap(true, false):
			// The leader's SyncGroup arrives 1.5s late, once.
			k.SleepControl(func() { time.Sleep(1500 * time.Millisecond) })
		}
		return nil, nil, false
	})
	cfg := func(instance string) Config {
		return Config{Group: "workers", Protocol: "test-v1", InstanceID: instance,
			SessionTimeout: 10 * time.Second, HeartbeatInterval: 300 * time.Millisecond, RebalanceTimeout: 8 * time.Second}
	}
	l := c.startMember(t, cfg("l"), "l")
	waitMembers(t, []*running{l}, "l")
	f := c.startMember(t, cfg("f"), "f")
	waitMembers(t, []*running{l, f}, "f", "l")

	hold.Store(true)
	armed.Store(true)
	l.h.rename("l2") // the leader rejoins with new metadata: a rebalance
	l.m.RequestRejoin()
	testkit.EventuallyTrue(t, 10*time.Second, "f waiting in SyncGroup for the leader's", fSynced.Load)
	f.m.Abandon() // f's process dies (no LeaveGroup) and comes back at once
	f.cl.Close()
	start := time.Now()
	f2 := c.startMember(t, cfg("f"), "f2")
	formed := waitMembers(t, []*running{l, f2}, "f2", "l2").Sub(start)
	t.Logf("the group formed %s after f's restart (the leader synced after 1.5s; rebalance timeout 8s)", formed.Round(10*time.Millisecond))
	if formed > 5*time.Second {
		t.Errorf("the group formed %s after f's restart: it waited for the rebalance deadline", formed)
	}
}
