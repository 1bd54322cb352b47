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

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// Broker is an in-process kfake broker on 127.0.0.1 that worker processes
// reach over TCP, with a client for the test's own reads and writes.
type Broker struct {
	Addr   string
	Kafka  *kfake.Cluster
	Client *kgo.Client
	Admin  *kadm.Client
}

// StartBroker starts one kfake broker that accepts session timeouts down to
// 500ms and creates topics on demand; opts are appended.
func StartBroker(opts ...kfake.Opt) (*Broker, error) {
	base := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.GroupMinSessionTimeout(500 * time.Millisecond)}
	k, err := kfake.NewCluster(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("harness: starting kfake: %w", err)
	}
	addr := k.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		k.Close()
		return nil, err
	}
	return &Broker{Addr: addr, Kafka: k, Client: cl, Admin: kadm.NewClient(cl)}, nil
}

// Close stops the client and the broker.
func (b *Broker) Close() {
	b.Client.Close()
	b.Kafka.Close()
}

// TaskStart is one start of a task, as the herder records it: a RUNNING
// status written to the status topic by the worker that started the task.
type TaskStart struct {
	TaskKey
	Worker     string
	Generation int
	// At is the record's timestamp (set by the writing worker).
	At     time.Time
	Offset int64
}

// TaskStarts reads the status topic from the beginning to its current end
// and returns every RUNNING task status written at or after since, in
// write order per partition. kfake does not compact unless asked, so the
// topic keeps every write.
func (b *Broker) TaskStarts(ctx context.Context, topic string, since time.Time) ([]TaskStart, error) {
	ends, err := b.Admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	want := map[int32]int64{}
	parts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			parts[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []TaskStart
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
			if r.Timestamp.Before(since) {
				return
			}
			k, ok := parseTaskKey(string(r.Key))
			if !ok || len(r.Value) == 0 {
				return
			}
			var v struct {
				State      string `json:"state"`
				WorkerID   string `json:"worker_id"`
				Generation int    `json:"generation"`
			}
			if json.Unmarshal(r.Value, &v) != nil || v.State != "RUNNING" {
				return
			}
			out = append(out, TaskStart{TaskKey: k, Worker: v.WorkerID, Generation: v.Generation, At: r.Timestamp, Offset: r.Offset})
		})
	}
	return out, nil
}

// parseTaskKey parses "status-task-<connector>-<task>".
func parseTaskKey(key string) (TaskKey, bool) {
	rest, ok := strings.CutPrefix(key, "status-task-")
	if !ok {
		return TaskKey{}, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return TaskKey{}, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil {
		return TaskKey{}, false
	}
	return TaskKey{Connector: rest[:i], Task: n}, true
}

// StartCounts counts starts per task.
func StartCounts(starts []TaskStart) map[TaskKey]int {
	out := map[TaskKey]int{}
	for _, s := range starts {
		out[s.TaskKey]++
	}
	return out
}

// WaitConsumerGroup waits until a consumer group (a sink connector's is
// connect-<connector>) is Stable with exactly members members, each
// assigned at least one partition: the sink tasks then consume, and no
// member of a dead worker is left waiting for its session to time out.
func (b *Broker) WaitConsumerGroup(ctx context.Context, group string, members int, timeout time.Duration) error {
	return testkit.Until(ctx, timeout, fmt.Sprintf("consumer group %s stable with %d members that all have partitions", group, members), func(ctx context.Context) (bool, error) {
		gs, err := b.Admin.DescribeGroups(ctx, group)
		if err != nil {
			return false, err
		}
		g, ok := gs[group]
		if !ok || g.Err != nil || g.State != "Stable" || len(g.Members) != members {
			return false, nil
		}
		for _, m := range g.Members {
			c, ok := m.Assigned.AsConsumer()
			if !ok || len(c.Topics) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
}
