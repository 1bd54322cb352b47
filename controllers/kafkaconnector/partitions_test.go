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

package kafkaconnector

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPartitionCountsOnKfake reads partition counts from a real (in-process)
// Kafka broker and feeds them to the sink estimate, including a topic that
// grows from 4 to 6 partitions.
func TestPartitionCountsOnKfake(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "orders"), kfake.SeedTopics(2, "refunds"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	counts, err := PartitionCounts(ctx, adm, []string{"orders", "refunds", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 2 || counts["orders"] != 4 || counts["refunds"] != 2 {
		t.Fatalf("PartitionCounts = %v, want orders=4 refunds=2 and no entry for the missing topic", counts)
	}
	est := EstimateTaskLimit(EstimateInput{Class: ClassPostgresSink, Config: map[string]string{"topics": "orders"}, PartitionCounts: counts})
	if n, r := EffectiveTasks(10, est); n != 4 || r != ReasonTopicPartitions {
		t.Fatalf("tasksMax 10 over 4 partitions: %d %s", n, r)
	}
	if est := EstimateTaskLimit(EstimateInput{Class: ClassPostgresSink, Config: map[string]string{"topics": "orders,missing"}, PartitionCounts: counts}); est.Natural != nil {
		t.Fatalf("a sink with a missing topic must be unknown, got %d", *est.Natural)
	}

	if _, err := adm.UpdatePartitions(ctx, 6, "orders"); err != nil {
		t.Fatal(err)
	}
	counts, err = PartitionCounts(ctx, adm, []string{"orders"})
	if err != nil {
		t.Fatal(err)
	}
	est = EstimateTaskLimit(EstimateInput{Class: ClassPostgresSink, Config: map[string]string{"topics": "orders"}, PartitionCounts: counts})
	if n, _ := EffectiveTasks(10, est); n != 6 {
		t.Fatalf("after growing orders to 6 partitions: %d effective tasks (counts %v)", n, counts)
	}
	if c, err := PartitionCounts(ctx, adm, nil); err != nil || len(c) != 0 {
		t.Fatalf("no topics: %v %v", c, err)
	}
}

// TestSinkLagOnKfake commits offsets for group connect-<name> on a real
// in-process broker and reads the lag back.
func TestSinkLagOnKfake(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if lag, err := SinkLag(ctx, adm, "connect-orders-sink"); err != nil || lag != nil {
		t.Fatalf("group without commits: %v, %v; want nil, nil", lag, err)
	}
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Value: []byte("v"), Partition: int32(i % 2)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 3, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "connect-orders-sink", offsets); err != nil {
		t.Fatal(err)
	}
	lag, err := SinkLag(ctx, adm, "connect-orders-sink")
	if err != nil || lag == nil || *lag != 6 {
		t.Fatalf("SinkLag = %v, %v; want 6 (5-3 + 5-1)", lag, err)
	}
}
