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
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestSinkMemberKeptAliveWhileItsRoundIsHeld: a sink group holds a round
// open because one member (a killed worker's consumer of another task,
// with a long session) never rejoins. The coordinator holds the sink
// task's JoinGroup until the rebalance deadline, longer than the task's
// session. Kafka keeps a member alive while it holds its JoinGroup; kfake
// does not (it drops the member at its session timeout and never answers
// its JoinGroup, which then waits out franz-go's request timeout, the
// rebalance timeout plus 10s), so the task heartbeats for itself while
// its round is held. It must come out of the round as the member it was,
// at the rebalance deadline.
func TestSinkMemberKeptAliveWhileItsRoundIsHeld(t *testing.T) {
	const session, rebalance = 6 * time.Second, 12 * time.Second
	c := cluster(t, map[string]int32{"in": 1, "other": 1})
	produceJSON(t, c, "in", `{"a":0}`, `{"a":1}`, `{"a":2}`)
	group := connectnames.SinkGroup("s")
	raw, err := kgo.NewClient(kafkaOpts(c)...)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	adm := kadm.NewClient(raw)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, newStatuses(), ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink, Topics: []string{"in"},
		InstanceID: "wB-s-0", SessionTimeout: session, RebalanceTimeout: rebalance}
	cfg.ValueConverter = jsonConverter(t)
	newSink(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "the task to put the 3 records", func() bool { return sink.distinct() == 3 })

	// wA's consumer of task 1 joins and syncs, then its process dies: it
	// never heartbeats or rejoins again (its session: a minute).
	ghost := make(chan error, 1)
	go func() { ghost <- rawMember(ctx, raw, group, "wA-s-1", "other", time.Minute, rebalance) }()
	testkit.EventuallyTrue(t, 20*time.Second, "the sink group stable with the task and wA's consumer", func() bool {
		g := describeSinkGroup(ctx, adm, group)
		return g.State == "Stable" && len(g.Members) == 2
	})
	if err := <-ghost; err != nil {
		t.Fatal(err)
	}
	before := sinkMemberID(describeSinkGroup(ctx, adm, group), "wB-s-0")

	// A third member joins: the task rejoins, wA's consumer does not, and
	// the coordinator holds the round to its deadline.
	start := time.Now()
	go func() { _ = rawMember(ctx, raw, group, "wC-s-2", "other", session, rebalance) }()
	var after string
	testkit.EventuallyTrue(t, 45*time.Second, "the round to complete with the task in it", func() bool {
		g := describeSinkGroup(ctx, adm, group)
		after = sinkMemberID(g, "wB-s-0")
		return g.State == "Stable" && after != "" && sinkMemberID(g, "wA-s-1") == ""
	})
	took := time.Since(start)
	t.Logf("round held by wA's consumer completed %s after it began (rebalance timeout %s, session %s); task's member %s, before %s",
		took.Round(100*time.Millisecond), rebalance, session, after, before)
	if after != before {
		t.Errorf("the coordinator dropped the task's member while its JoinGroup was held: member %s, before %s", after, before)
	}
	if took > rebalance+5*time.Second {
		t.Errorf("the round completed %s after it began, want about the rebalance timeout %s", took.Round(100*time.Millisecond), rebalance)
	}
}

// rawMember joins group as static consumer instance, subscribed to topic,
// and syncs (assigning nothing when it leads), once.
func rawMember(ctx context.Context, cl *kgo.Client, group, instance, topic string, session, rebalance time.Duration) error {
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{topic}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.InstanceID = group, "consumer", kmsg.StringPtr(instance)
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = int32(session/time.Millisecond), int32(rebalance/time.Millisecond)
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: md.AppendTo(nil)}}
	jr, err := join.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%s's JoinGroup: %w", instance, err)
	}
	if err := kerr.ErrorForCode(jr.ErrorCode); err != nil {
		return fmt.Errorf("%s's JoinGroup: %w", instance, err)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID, sync.InstanceID = group, jr.Generation, jr.MemberID, join.InstanceID
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), jr.Protocol
	sr, err := sync.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%s's SyncGroup: %w", instance, err)
	}
	if err := kerr.ErrorForCode(sr.ErrorCode); err != nil {
		return fmt.Errorf("%s's SyncGroup: %w", instance, err)
	}
	return nil
}

func describeSinkGroup(ctx context.Context, adm *kadm.Client, group string) kadm.DescribedGroup {
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}
	}
	return gs[group]
}

// sinkMemberID is the member id of the static member instance in g, or "".
func sinkMemberID(g kadm.DescribedGroup, instance string) string {
	for _, m := range g.Members {
		if m.InstanceID != nil && *m.InstanceID == instance {
			return m.MemberID
		}
	}
	return ""
}
