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

package kafkalog

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newCluster(t *testing.T) (*kfake.Cluster, []kgo.Opt, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, opts, kadm.NewClient(cl)
}

type kv struct {
	mu sync.Mutex
	m  map[string]string
	n  int
}

func (s *kv) apply(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if r.Tombstone() {
		delete(s.m, string(r.Key))
		return
	}
	s.m[string(r.Key)] = string(r.Value)
}

func (s *kv) get(k string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok
}

func TestReadToEndThenFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, opts, _ := newCluster(t)
	topic := Topic{Name: "cfg", Partitions: 1, Create: true}

	a := &kv{m: map[string]string{}}
	la, err := Open(ctx, Config{Topic: topic, ClientOpts: opts, Apply: a.apply})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	for i := 0; i < 50; i++ {
		if _, _, err := la.Send(ctx, []byte("k"+string(rune('a'+i%5))), []byte(strings.Repeat("v", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if err := la.SendAndApply(ctx, []byte("kb"), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.get("kb"); ok {
		t.Fatal("tombstone not applied")
	}

	// A second reader sees everything after Open returns (read to the end).
	b := &kv{m: map[string]string{}}
	lb, err := Open(ctx, Config{Topic: topic, ClientOpts: opts, Apply: b.apply})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if b.n != 51 {
		t.Fatalf("second reader applied %d records at open, want 51", b.n)
	}
	if v, _ := b.get("ke"); v != strings.Repeat("v", 50) {
		t.Fatalf("ke = %q", v)
	}
	// Then it follows: a write by the first becomes visible after ReadToEnd.
	if _, _, err := la.Send(ctx, []byte("new"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := lb.ReadToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.get("new"); v != "x" {
		t.Fatalf("follower did not see the new record: %q", v)
	}
	if got := lb.Positions()[0]; got != 52 {
		t.Fatalf("position = %d, want 52", got)
	}
}

func TestRefusesMissingTopicWithoutCreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, opts, _ := newCluster(t)
	_, err := Open(ctx, Config{Topic: Topic{Name: "connect-configs", Partitions: 1, CreateFlag: "internal.topic.creation"}, ClientOpts: opts, Apply: func(Record) {}})
	if err == nil || !strings.Contains(err.Error(), `"connect-configs" does not exist`) || !strings.Contains(err.Error(), "internal.topic.creation") {
		t.Fatalf("want a clear error naming the topic and the flag, got %v", err)
	}
}

func TestRefusesWrongTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, opts, adm := newCluster(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, Config{Topic: Topic{Name: "plain", Partitions: 1, Create: true}, ClientOpts: opts, Apply: func(Record) {}})
	if err == nil {
		t.Fatal("opened a non-compacted 3-partition topic as a config log")
	}
	for _, want := range []string{`"plain"`, "3 partitions but must have exactly 1", `cleanup.policy is "delete"`, "compact"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Compacted with any partition count is fine when no count is required.
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "offsets"); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, Config{Topic: Topic{Name: "offsets"}, ClientOpts: opts, Apply: func(Record) {}})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

// TestReadToEndAfterCompaction: a compacted topic (overwritten records gone,
// offsets with holes) reads to its end with the latest value per key.
func TestReadToEndAfterCompaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, opts, adm := newCluster(t)
	topic := Topic{Name: "status", Partitions: 1}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "delete.retention.ms": kadm.StringPtr("0")}, "status"); err != nil {
		t.Fatal(err)
	}
	a := &kv{m: map[string]string{}}
	l, err := Open(ctx, Config{Topic: topic, ClientOpts: opts, Apply: a.apply})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		l.Send(ctx, []byte("k"), []byte(fmt.Sprint(i)))
	}
	l.Send(ctx, []byte("gone"), []byte("x"))
	if err := l.SendAndApply(ctx, []byte("gone"), nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	time.Sleep(5 * time.Millisecond) // the tombstone must be older than delete.retention.ms=0
	c.Compact()
	b := &kv{m: map[string]string{}}
	l2, err := Open(ctx, Config{Topic: topic, ClientOpts: opts, Apply: b.apply})
	if err != nil {
		t.Fatalf("reading a compacted topic to its end: %v", err)
	}
	defer l2.Close()
	if v, _ := b.get("k"); v != "4" {
		t.Fatalf("k = %q after compaction, want 4", v)
	}
	if _, ok := b.get("gone"); ok {
		t.Fatal("deleted key came back")
	}
	if b.n >= 7 {
		t.Fatalf("read %d records: the topic was not compacted, so this test shows nothing", b.n)
	}
	t.Logf("read %d of 7 records after compaction", b.n)
}
