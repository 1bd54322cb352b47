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
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaveRaw removes a member from another client, as an operator would.
func leaveRaw(ctx context.Context, cl *kgo.Client, group, member string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, m := range resp.Members {
		if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

// listHandler names each member by its metadata and hands every member the
// sorted list of names in the generation, so each member sees who is in.
type listHandler struct {
	name string

	mu      sync.Mutex
	members []string // the last assignment seen
	gens    int
	lost    int
	starts  int
	changed chan struct{}
}

func newListHandler(name string) *listHandler {
	return &listHandler{name: name, changed: make(chan struct{}, 100)}
}

func (h *listHandler) Metadata() ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return []byte(h.name), nil
}

func (h *listHandler) rename(name string) {
	h.mu.Lock()
	h.name = name
	h.mu.Unlock()
}

func (h *listHandler) Assign(_ context.Context, _ Generation, members []JoinedMember) (map[string][]byte, error) {
	var names []string
	for _, m := range members {
		names = append(names, string(m.Metadata))
	}
	slices.Sort(names)
	out := map[string][]byte{}
	for _, m := range members {
		out[m.ID] = []byte(strings.Join(names, ","))
	}
	return out, nil
}

func (h *listHandler) Assigned(_ context.Context, _ Generation, a []byte) (Next, error) {
	h.mu.Lock()
	h.members = strings.Split(string(a), ",")
	h.gens++
	h.mu.Unlock()
	h.changed <- struct{}{}
	return Next{}, nil
}

func (h *listHandler) RebalanceStarted() {
	h.mu.Lock()
	h.starts++
	h.mu.Unlock()
}

func (h *listHandler) Lost(context.Context) {
	h.mu.Lock()
	h.lost++
	h.mu.Unlock()
}

func (h *listHandler) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.members)
}

type testCluster struct {
	addrs []string
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &testCluster{addrs: c.ListenAddrs()}
}

func (c *testCluster) client(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

type running struct {
	m   *Member
	h   *listHandler
	cl  *kgo.Client
	err chan error
}

func (c *testCluster) start(t *testing.T, name string, session time.Duration) *running {
	t.Helper()
	h := newListHandler(name)
	cl := c.client(t)
	m, err := New(Config{Client: cl, Group: "workers", Protocol: "test-v1", SessionTimeout: session,
		RebalanceTimeout: 5 * time.Second, HeartbeatInterval: session / 5, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	r := &running{m: m, h: h, cl: cl, err: make(chan error, 1)}
	go func() { r.err <- m.Run(context.Background()) }()
	t.Cleanup(func() { m.Abandon() })
	return r
}

// waitMembers waits until every running member was assigned exactly want.
func waitMembers(t *testing.T, rs []*running, want ...string) time.Time {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		all := true
		for _, r := range rs {
			if !slices.Equal(r.h.seen(), want) {
				all = false
			}
		}
		if all {
			return time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, r := range rs {
		t.Errorf("member %s sees %v", r.h.name, r.h.seen())
	}
	t.Fatalf("members did not all see %v", want)
	return time.Time{}
}

func TestMembersJoinLeaveAndExpire(t *testing.T) {
	c := newTestCluster(t)
	session := time.Second
	a := c.start(t, "a", session)
	waitMembers(t, []*running{a}, "a")
	b := c.start(t, "b", session)
	cc := c.start(t, "c", session)
	waitMembers(t, []*running{a, b, cc}, "a", "b", "c")

	// Exactly one leader in the generation, all on the same generation.
	gens := []Generation{a.m.Generation(), b.m.Generation(), cc.m.Generation()}
	leaders := 0
	for _, g := range gens {
		if g.ID != gens[0].ID {
			t.Errorf("generations differ: %+v", gens)
		}
		if g.Leader() {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders in %+v, want 1", leaders, gens)
	}

	// A member that leaves is gone from the next generation at once.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-b.err; err != nil {
		t.Fatalf("Run after Leave: %v", err)
	}
	left := waitMembers(t, []*running{a, cc}, "a", "c").Sub(start)
	t.Logf("after LeaveGroup the others had a new generation in %v", left)
	if left >= session {
		t.Errorf("a leave took %v to rebalance, want < the session timeout %v", left, session)
	}

	// A member that stops heartbeating (its client closed, no leave) is
	// removed once its session expires.
	start = time.Now()
	cc.m.Abandon()
	cc.cl.Close()
	gone := waitMembers(t, []*running{a}, "a").Sub(start)
	t.Logf("a silent member was removed after %v (session timeout %v)", gone, session)
	if gone < session*8/10 {
		t.Errorf("a silent member was removed after %v, before its session timeout %v", gone, session)
	}
	if a.h.lost != 0 {
		t.Errorf("the remaining member was told it was lost %d times", a.h.lost)
	}
}

func TestRequestRejoinAndRebalance(t *testing.T) {
	c := newTestCluster(t)
	a := c.start(t, "a", time.Second)
	b := c.start(t, "b", time.Second)
	waitMembers(t, []*running{a, b}, "a", "b")
	g := a.m.Generation().ID
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A follower rejoining with unchanged metadata keeps the generation.
	if err := b.m.Rebalance(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.m.Generation().ID; got != g && !b.m.Generation().Leader() {
		t.Errorf("generation after a follower's plain rejoin = %d, want %d", got, g)
	}
	// New metadata makes a new generation that every member follows.
	b.h.rename("b2")
	if err := b.m.Rebalance(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.m.Generation().ID; got <= g {
		t.Errorf("generation after Rebalance = %d, want > %d", got, g)
	}
	// The other member followed into the same generation.
	deadline := time.Now().Add(5 * time.Second)
	for a.m.Generation().ID != b.m.Generation().ID && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a.m.Generation().ID != b.m.Generation().ID {
		t.Errorf("members on generations %d and %d", a.m.Generation().ID, b.m.Generation().ID)
	}
	waitMembers(t, []*running{a, b}, "a", "b2")
}

func TestLostMembershipStopsWorkAndRejoins(t *testing.T) {
	c := newTestCluster(t)
	a := c.start(t, "a", time.Second)
	waitMembers(t, []*running{a}, "a")
	// An administrator removes the member (as the coordinator does after
	// a session timeout): its next heartbeat gets UNKNOWN_MEMBER_ID.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := a.m.Generation().MemberID
	before := a.m.Generation().ID
	if err := leaveRaw(ctx, c.client(t), "workers", id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		a.h.mu.Lock()
		lost := a.h.lost
		a.h.mu.Unlock()
		g := a.m.Generation()
		if lost == 1 && g.MemberID != "" && g.MemberID != id && g.ID > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("member not told it was lost or not rejoined: lost=%d gen=%+v (was %s at %d)", a.h.lost, a.m.Generation(), id, before)
}

func TestInconsistentProtocolIsFatal(t *testing.T) {
	c := newTestCluster(t)
	a := c.start(t, "a", time.Second)
	waitMembers(t, []*running{a}, "a")
	h := newListHandler("x")
	m, err := New(Config{Client: c.client(t), Group: "workers", Protocol: "other", SessionTimeout: time.Second,
		RebalanceTimeout: time.Second, HeartbeatInterval: 200 * time.Millisecond, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err = m.Run(ctx)
	t.Logf("Run returned after %v", time.Since(start))
	var fe *FatalError
	if !errors.As(err, &fe) || !errors.Is(err, kerr.InconsistentGroupProtocol) {
		t.Fatalf("Run = %v, want a FatalError for INCONSISTENT_GROUP_PROTOCOL", err)
	}
	if !strings.Contains(err.Error(), "group.id") {
		t.Errorf("error does not say how to fix it: %v", err)
	}
}

func TestConfigChecks(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = New(Config{Client: cl, Group: "g", Protocol: "p", SessionTimeout: time.Second,
		RebalanceTimeout: time.Second, HeartbeatInterval: time.Second, Handler: newListHandler("a")})
	if err == nil || !strings.Contains(err.Error(), "heartbeat.interval.ms") {
		t.Errorf("heartbeat >= session accepted: %v", err)
	}
}

func TestCoordinatorMoves(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	c := &testCluster{addrs: kc.ListenAddrs()}
	a := c.start(t, "a", time.Second)
	b := c.start(t, "b", time.Second)
	waitMembers(t, []*running{a, b}, "a", "b")
	from := kc.CoordinatorFor("workers")
	for i := 0; kc.CoordinatorFor("workers") == from && i < 100; i++ {
		kc.RehashCoordinators()
	}
	if kc.CoordinatorFor("workers") == from {
		t.Fatal("the coordinator did not move")
	}
	// Heartbeats and joins follow the coordinator: a new member joins and
	// nobody loses its membership.
	cc := c.start(t, "c", time.Second)
	waitMembers(t, []*running{a, b, cc}, "a", "b", "c")
	// A few heartbeats at the new coordinator.
	testkit.Consistently(t, 3*200*time.Millisecond, "no member loses its membership after the coordinator moved", func() (bool, string) {
		for _, r := range []*running{a, b, cc} {
			r.h.mu.Lock()
			lost := r.h.lost
			r.h.mu.Unlock()
			if lost != 0 {
				return false, "member " + r.h.name + " lost its membership"
			}
		}
		return true, ""
	})
	t.Logf("coordinator moved from broker %d to %d", from, kc.CoordinatorFor("workers"))
}
