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
	"errors"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinSilentMember joins group as a consumer of topic with raw requests and
// then never heartbeats nor rejoins: until its session (30 s) ends, every
// rebalance of the group waits for it, as for a crashed worker's consumer.
func joinSilentMember(t *testing.T, c *kfake.Cluster, group, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 0
	meta.Topics = []string{topic}
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "cooperative-sticky"
	proto.Metadata = meta.AppendTo(nil)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = group
	join.SessionTimeoutMillis = 30000
	join.RebalanceTimeoutMillis = 30000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{proto}
	// Joining may take more than one round: the members already in the
	// group (cooperative consumers) rebalance again after revoking, and a
	// sync during that round is refused; the member then joins again.
	for {
		var jr *kmsg.JoinGroupResponse
		for {
			jr, err = join.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("silent member joining %s: %v", group, err)
			}
			if jr.ErrorCode == kerr.MemberIDRequired.Code {
				join.MemberID = jr.MemberID
				continue
			}
			if err := kerr.ErrorForCode(jr.ErrorCode); err != nil {
				t.Fatalf("silent member joining %s: %v", group, err)
			}
			break
		}
		join.MemberID = jr.MemberID
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group = group
		sync.MemberID = jr.MemberID
		sync.Generation = jr.Generation
		sync.ProtocolType = kmsg.StringPtr("consumer")
		sync.Protocol = jr.Protocol
		sr, err := sync.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(sr.ErrorCode)
		}
		if errors.Is(err, kerr.RebalanceInProgress) {
			continue
		}
		if err != nil {
			t.Fatalf("silent member syncing %s: %v", group, err)
		}
		return
	}
}

// A sink task stopped while its consumer's JoinGroup is pending (the
// group's rebalance waits for a silent member) stops within a second or
// two, not after its stop deadline; a runner whose rejoin is pending too
// stops as fast.
func TestSinkStopWhileJoiningIsQuick(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 2})
	st := newStatuses()
	sa := newRecordingSink()
	a := newSink(t, SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: sa})
	testkit.EventuallyTrue(t, 10*time.Second, "runner A assigned both partitions", func() bool { return len(a.Assignment()) == 2 })
	joinSilentMember(t, c, connectnames.SinkGroup("s"), "in")

	sb := newRecordingSink()
	b := newSink(t, SinkConfig{Common: common(c, st, ID{"s", 1}, map[string]string{"topics": "in"}), Task: sb})
	testkit.EventuallyTrue(t, 10*time.Second, "runner B joining the group", func() bool {
		cl := b.Client()
		if cl == nil {
			return false
		}
		id, _ := cl.GroupMetadata()
		return id != ""
	})
	// B's JoinGroup is held by the broker until the silent member's
	// rebalance timeout (30 s).
	for _, r := range []*SinkRunner{b, a} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		err := r.Stop(ctx)
		took := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("stopping %s: %v (after %v)", r.cfg.ID, err, took)
		}
		if took > 3*time.Second {
			t.Fatalf("stopping %s took %v, want about leaveWait (%v)", r.cfg.ID, took, leaveWait)
		}
		t.Logf("%s stopped in %v", r.cfg.ID, took.Round(time.Millisecond))
	}
}
