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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// startStatic starts a static member with an instance id, named name in
// its metadata.
func (c *testCluster) startStatic(t *testing.T, instance, name string, session time.Duration) *running {
	t.Helper()
	return c.startMember(t, Config{Group: "workers", Protocol: "test-v1", SessionTimeout: session, InstanceID: instance,
		RebalanceTimeout: 5 * time.Second, HeartbeatInterval: session / 5}, name)
}

// startMember starts a member with cfg (its Client and Handler filled
// in), named name in its metadata.
func (c *testCluster) startMember(t *testing.T, cfg Config, name string) *running {
	t.Helper()
	h := newListHandler(name)
	cl := c.client(t)
	cfg.Client, cfg.Handler = cl, h
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{m: m, h: h, cl: cl, err: make(chan error, 1)}
	go func() { r.err <- m.Run(context.Background()) }()
	t.Cleanup(func() { m.Abandon() })
	return r
}

// describeInstances returns the instance ids of the group's members.
func describeInstances(t *testing.T, c *testCluster) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"workers"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.client(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range resp.Groups[0].Members {
		if m.InstanceID != nil {
			out = append(out, *m.InstanceID)
		} else {
			out = append(out, "(dynamic)")
		}
	}
	return out
}

// TestStaticMembers, on kfake, whose static membership (KIP-345) differs
// from Kafka's in what is written here:
//   - a static member joins without the MEMBER_ID_REQUIRED round, and
//     DescribeGroups names its instance id (as Kafka);
//   - a process that joins with the instance id of a member that is still
//     in the group replaces it: the group keeps one member per instance id
//     (as Kafka). In a stable group kfake skips the rebalance only when the
//     new join's metadata is byte for byte the old one's; Kafka looks only at
//     the protocol, so there a changed metadata does not rebalance (this
//     test joins with other metadata, so kfake rebalances: the old process
//     is fenced either way);
//   - LeaveGroup with the instance id in the members array (v3+) removes the
//     member at once, so the others rebalance without waiting for its
//     session to expire. kfake resolves the member by instance id alone;
//     Kafka also checks a member id sent with it (FENCED_INSTANCE_ID when it
//     is not the current one).
func TestStaticMembers(t *testing.T) {
	c := newTestCluster(t)
	session := 3 * time.Second
	a := c.startStatic(t, "a", "a", session)
	b := c.startStatic(t, "b", "b", session)
	waitMembers(t, []*running{a, b}, "a", "b")
	if got := strings.Join(describeInstances(t, c), ","); got != "a,b" && got != "b,a" {
		t.Fatalf("the group's members have instance ids %s, want a and b", got)
	}

	// b's process dies (no LeaveGroup) and a new one with b's instance id
	// and other metadata joins long before the session expires: it takes
	// b's place, the group does not grow.
	b.m.Abandon()
	b.cl.Close()
	b2 := c.startStatic(t, "b", "b2", session)
	waitMembers(t, []*running{a, b2}, "a", "b2")
	if n := len(describeInstances(t, c)); n != 2 {
		t.Errorf("%d members after b's restart, want 2 (one per instance id)", n)
	}

	// b2 leaves on purpose: a sees a generation without it well before the
	// session timeout.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b2.m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	left := waitMembers(t, []*running{a}, "a").Sub(start)
	t.Logf("a static member's LeaveGroup: the others rebalanced in %v (session timeout %v)", left, session)
	if left >= session {
		t.Errorf("the static member's leave took %v to rebalance, want < the session timeout %v", left, session)
	}
	testkit.EventuallyTrue(t, 5*time.Second, "the group to hold only a", func() bool {
		return strings.Join(describeInstances(t, c), ",") == "a"
	})
}

// TestWaitingSaysWhat: a member whose joins keep failing keeps trying,
// with a growing backoff, and Waiting says what it waits for and how often
// it failed; once the coordinator answers, it joins and says so.
func TestWaitingSaysWhat(t *testing.T) {
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	var refuse atomic.Bool
	refuse.Store(true)
	refused := atomic.Int32{}
	k.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.KeepControl()
		if !refuse.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.(*kmsg.JoinGroupRequest).ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	h := newListHandler("x")
	m, err := New(Config{Client: cl, Group: "workers", Protocol: "test-v1", SessionTimeout: time.Second, InstanceID: "x",
		RebalanceTimeout: 200 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond, Handler: h, RetryBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if w := m.Waiting(); !strings.Contains(w, `group "workers": starting`) {
		t.Errorf("Waiting before Run = %q", w)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	t.Cleanup(m.Abandon)
	// kgo re-sends a JoinGroup answered with a retriable error until the
	// first-join hold (10 rebalance timeouts, 2s here) ends: an attempt
	// fails about every 2s.
	testkit.Eventually(t, 15*time.Second, "Waiting to report 4 failed attempts", func() (bool, string) {
		w := m.Waiting()
		return strings.Contains(w, "failed attempts in a row") && refused.Load() >= 4, w
	})
	w := m.Waiting()
	if !strings.Contains(w, "COORDINATOR_LOAD_IN_PROGRESS") {
		t.Errorf("Waiting = %q, want the last error named", w)
	}
	t.Logf("while refused: %s", w)
	refuse.Store(false)
	waitMembers(t, []*running{{m: m, h: h}}, "x")
	if w := m.Waiting(); !strings.Contains(w, "in the group") {
		t.Errorf("Waiting once joined = %q, want it to say the member is in the group", w)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the coordinator refused joins", err)
	default:
	}
}
