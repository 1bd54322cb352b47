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

package elasticsearch

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

	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/estest"
)

const connector = "es-sink"

// env is a kfake broker with a topic, a client, and a stand-in server.
type env struct {
	kafka *kfake.Cluster
	cl    *kgo.Client
	adm   *kadm.Client
	es    *estest.Standin
}

func newEnv(t *testing.T, partitions int32) *env {
	t.Helper()
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "orders"), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.ProducerLinger(2*time.Millisecond), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	es, err := estest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(es.Close)
	return &env{kafka: k, cl: cl, adm: kadm.NewClient(cl), es: es}
}

// config is a sink config: string keys as ids, schemaless JSON values.
func (e *env) config(kv ...string) map[string]string {
	cfg := map[string]string{"name": connector, "connector.class": "ElasticsearchSink", "topics": "orders", KeyURL: e.es.URL,
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
		KeyNullValues: BehaviorDelete, KeyRetryBackoff: "20"}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return cfg
}

// doc is the value of key k at version v.
func doc(k, v int) []byte {
	return []byte(fmt.Sprintf(`{"id":%d,"version":%d,"name":"order %d","qty":%d}`, k, v, k, k%100))
}

func (e *env) produce(t *testing.T, recs ...*kgo.Record) {
	t.Helper()
	for i := 0; i < len(recs); i += 5000 {
		if err := e.cl.ProduceSync(context.Background(), recs[i:min(i+5000, len(recs))]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func rec(key string, value []byte) *kgo.Record {
	return &kgo.Record{Topic: "orders", Key: []byte(key), Value: value}
}

// statuses records a runner's task states.
type statuses struct {
	mu    sync.Mutex
	state task.State
	trace string
}

func (s *statuses) TaskState(_ task.ID, st task.State, trace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.trace = st, trace
}

func (s *statuses) get() (task.State, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.trace
}

// startSink starts one sink task runner, stopped at the end of the test.
func (e *env) startSink(t *testing.T, cfg map[string]string, mayFail bool) (task.Runner, *statuses) {
	t.Helper()
	st := &statuses{}
	r, err := task.New(task.Spec{Common: task.Common{
		ID: task.ID{Connector: connector, Task: 0}, Config: cfg,
		Kafka:  []kgo.Opt{kgo.SeedBrokers(e.kafka.ListenAddrs()...), kgo.HeartbeatInterval(100 * time.Millisecond)},
		Status: st, OffsetFlushInterval: 200 * time.Millisecond, RetryBackoff: 100 * time.Millisecond,
	}, Plugin: Plugin(), Connector: cfg})
	if mayFail {
		return tasktest.StartMayFail(t, r, err), st
	}
	return tasktest.Start(t, r, err), st
}

// waitCommitted waits until the sink's group committed the end offset of
// every partition: every record was written and flushed.
func (e *env) waitCommitted(t *testing.T, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	ends, err := e.adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, d, "the sink's group to commit the end offsets", func() (bool, string) {
		resp, err := e.adm.FetchOffsets(ctx, "connect-"+connector)
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

// wantIDs fails unless the index holds exactly the documents of keys
// from..to-1 except those skip says.
func wantIDs(t *testing.T, es *estest.Standin, from, to int, skip func(int) bool) {
	t.Helper()
	want := map[string]bool{}
	for k := from; k < to; k++ {
		if skip == nil || !skip(k) {
			want[fmt.Sprint(k)] = true
		}
	}
	got := es.IDs("orders")
	var extra []string
	for _, id := range got {
		if !want[id] {
			extra = append(extra, id)
		}
		delete(want, id)
	}
	if len(want) > 0 || len(extra) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		t.Fatalf("index orders: %d documents, %d missing (for example %v), %d unexpected (for example %v)",
			len(got), len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
	}
}
