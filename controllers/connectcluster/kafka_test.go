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

package connectcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

func newKfake(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func testTopics() []TopicSpec {
	return []TopicSpec{
		{Role: TopicRoleConfig, Name: "cc-configs", Partitions: 1, ReplicationFactor: 1},
		{Role: TopicRoleOffset, Name: "cc-offsets", Partitions: 5, ReplicationFactor: 1},
		{Role: TopicRoleStatus, Name: "cc-status", Partitions: 3, ReplicationFactor: 1},
	}
}

func TestEnsureTopicsAgainstKfake(t *testing.T) {
	c := newKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := NewKadmAdmin(clusterkit.KafkaConnection{BootstrapServers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	verdicts, err := EnsureTopics(ctx, admin, c.ListenAddrs(), testTopics())
	if err != nil {
		t.Fatalf("first EnsureTopics: %v", err)
	}
	if got := CreatedTopics(verdicts); strings.Join(got, ",") != "cc-configs,cc-offsets,cc-status" {
		t.Fatalf("created %v, want all three", got)
	}
	observed, err := admin.DescribeTopics(ctx, "cc-offsets", "cc-configs")
	if err != nil {
		t.Fatal(err)
	}
	if o := observed["cc-offsets"]; !o.Exists || o.Partitions != 5 || o.ReplicationFactor != 1 || o.CleanupPolicy != "compact" {
		t.Fatalf("offsets topic observed as %+v", o)
	}
	if o := observed["cc-configs"]; o.Partitions != 1 {
		t.Fatalf("config topic has %d partitions", o.Partitions)
	}

	// Second pass: nothing to create.
	verdicts, err = EnsureTopics(ctx, admin, c.ListenAddrs(), testTopics())
	if err != nil {
		t.Fatalf("second EnsureTopics: %v", err)
	}
	if got := CreatedTopics(verdicts); len(got) != 0 {
		t.Fatalf("second pass created %v", got)
	}
}

func TestEnsureTopicsReportsWrongTopics(t *testing.T) {
	c := newKfake(t)
	// A status topic that is not compacted and a config topic with 3 partitions.
	if err := c.CreateTopic("cc-status", 3, map[string]string{"cleanup.policy": "delete"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic("cc-configs", 3, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := NewKadmAdmin(clusterkit.KafkaConnection{BootstrapServers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	_, err = EnsureTopics(ctx, admin, c.ListenAddrs(), testTopics())
	var invalid *TopicInvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("error %v, want a TopicInvalidError", err)
	}
	msg := err.Error()
	for _, want := range []string{`config topic "cc-configs" has 3 partitions`, `status topic "cc-status" cleanup.policy is "delete"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	// The missing offsets topic was still created.
	observed, err := admin.DescribeTopics(ctx, "cc-offsets")
	if err != nil || !observed["cc-offsets"].Exists {
		t.Fatalf("offsets topic not created: %+v, %v", observed, err)
	}
}

func TestEnsureTopicsReplicationTooHigh(t *testing.T) {
	c := newKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := NewKadmAdmin(clusterkit.KafkaConnection{BootstrapServers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	topics := testTopics()
	topics[1].ReplicationFactor = 3 // one broker only
	_, err = EnsureTopics(ctx, admin, c.ListenAddrs(), topics)
	var invalid *TopicInvalidError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), `offset topic "cc-offsets" cannot be created`) {
		t.Fatalf("error %v, want the offsets topic named as not creatable", err)
	}
}

func TestEnsureTopicsKafkaDown(t *testing.T) {
	c := newKfake(t)
	addrs := c.ListenAddrs()
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	admin, err := NewKadmAdmin(clusterkit.KafkaConnection{BootstrapServers: addrs}, kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	start := time.Now()
	_, err = EnsureTopics(ctx, admin, addrs, testTopics())
	if !errors.Is(err, ErrKafkaUnreachable) {
		t.Fatalf("error %v, want ErrKafkaUnreachable", err)
	}
	if !strings.Contains(err.Error(), addrs[0]) {
		t.Fatalf("error %q does not name the bootstrap servers", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s to give up", d)
	}
}
