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

// Package sinkkit runs sink connectors' tasks in a test the way a worker
// does (task runners with their consumer group on an in-process kfake
// broker, the connector's errors.* settings, a dead letter queue) and
// waits for their offsets: the pipeline tests of every sink share it.
// The servers the sinks write to are in test/testkit/servers.
package sinkkit

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

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// Kafka is an in-process kfake broker with a producer and an admin client.
type Kafka struct {
	Cluster *kfake.Cluster
	Client  *kgo.Client
	Admin   *kadm.Client
}

// StartKafka starts a one-broker kfake cluster with topics of the given
// partition counts, closed when the test ends.
func StartKafka(t testing.TB, topics map[string]int32) *Kafka {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation()}
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl := NewProducer(t, c.ListenAddrs()...)
	return &Kafka{Cluster: c, Client: cl, Admin: kadm.NewClient(cl)}
}

// NewProducer returns a client of the brokers that writes each record to
// its Partition, closed when the test ends.
func NewProducer(t testing.TB, brokers ...string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes the records (Partition is honoured) and waits for every
// acknowledgement.
func (k *Kafka) Produce(t testing.TB, records ...*kgo.Record) {
	t.Helper()
	Produce(t, k.Client, records...)
}

// Produce writes the records through cl and waits for every
// acknowledgement; a client made with [NewProducer] honours Partition.
func Produce(t testing.TB, cl *kgo.Client, records ...*kgo.Record) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, r := range records {
		wg.Add(1)
		cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("producing: %v", first)
	}
}

// Group is the consumer group of a sink connector, as the worker names it.
func Group(connector string) string { return "connect-" + connector }

// StartTasks starts n task runners of the sink plugin p for connector,
// with the connector's config (converters and errors.* come from it, as
// in the worker; the worker's default converters are JSON with schemas)
// and an offset flush every 200 ms. They stop when the test ends.
func (k *Kafka) StartTasks(t testing.TB, p plugin.Plugin, connector string, config map[string]string, n int) []task.Runner {
	t.Helper()
	var out []task.Runner
	for i := 0; i < n; i++ {
		r, err := task.New(task.Spec{Common: task.Common{
			ID: task.ID{Connector: connector, Task: i}, Config: config,
			Kafka:  []kgo.Opt{kgo.SeedBrokers(k.Cluster.ListenAddrs()...), kgo.HeartbeatInterval(100 * time.Millisecond)},
			Status: task.StatusFunc(func(task.ID, task.State, string) {}), OffsetFlushInterval: 200 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
		}, Plugin: p, Connector: config})
		out = append(out, tasktest.StartMayFail(t, r, err))
	}
	return out
}

// WaitCommitted waits until the connector's group committed the end offset
// of every partition of topic: every record was written and flushed.
func (k *Kafka) WaitCommitted(t testing.TB, connector, topic string, d time.Duration) {
	t.Helper()
	WaitCommitted(t, k.Admin, connector, topic, d)
}

// WaitCommitted waits until the connector's group committed the end offset
// of every partition of topic on the cluster adm talks to.
func WaitCommitted(t testing.TB, adm *kadm.Client, connector, topic string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, d, "group "+Group(connector)+" to commit the end offsets of "+topic, func() (bool, string) {
		resp, err := adm.FetchOffsets(ctx, Group(connector))
		if err != nil {
			return false, err.Error()
		}
		var behind []string
		ends.Each(func(o kadm.ListedOffset) {
			if c, ok := resp.Lookup(o.Topic, o.Partition); !ok || c.At < o.Offset {
				behind = append(behind, fmt.Sprintf("%d: committed %d of %d", o.Partition, c.At, o.Offset))
			}
		})
		return len(behind) == 0, strings.Join(behind, ", ")
	})
}

// WaitFailed waits until a runner failed and returns its error.
func WaitFailed(t testing.TB, r task.Runner, d time.Duration) error {
	t.Helper()
	testkit.EventuallyTrue(t, d, "the task to fail", func() bool { return r.Err() != nil })
	return r.Err()
}

// Consume reads every record of topic from the start to its current end.
func (k *Kafka) Consume(t testing.TB, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := k.Admin.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Cluster.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (still waiting for %v)", topic, ctx.Err(), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out
}
