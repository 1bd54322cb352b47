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

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
)

func opener(t *testing.T) (LogOpener, []kgo.Opt) {
	t.Helper()
	_, opts := kafkatest.Cluster(t)
	return kafkatest.Opener(opts), opts
}

func TestConfigStoreIgnoresUncommittedTaskConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open, opts := opener(t)
	var events []ConfigEvent
	s, err := OpenConfigStore(ctx, open, kafkalog.Topic{Name: "configs"}, func(e ConfigEvent) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutConnectorConfig(ctx, "my-conn", map[string]string{"connector.class": "FileSink", "password": "${env:PW}"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskConfigs(ctx, "my-conn", []map[string]string{{"t": "0"}, {"t": "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTargetState(ctx, "my-conn", TargetStopped); err != nil {
		t.Fatal(err)
	}
	// A writer that crashed half-way: task 0 of a new set, and a commit
	// claiming 3 tasks with only two written.
	raw, err := kafkalog.Open(ctx, kafkalog.Config{Topic: kafkalog.Topic{Name: "configs"}, ClientOpts: opts, Apply: func(kafkalog.Record) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Send(ctx, []byte("task-my-conn-0"), []byte(`{"properties":{"t":"new0"}}`))
	raw.Send(ctx, []byte("task-my-conn-1"), []byte(`{"properties":{"t":"new1"}}`))
	raw.Send(ctx, []byte("commit-my-conn"), []byte(`{"tasks":3}`))
	if err := s.ReadToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.TaskConfigs("my-conn"); len(got) != 2 || got[1]["t"] != "1" {
		t.Fatalf("task configs after a partial write = %v, want the previous committed set", got)
	}

	// A fresh reader sees the same consistent state, placeholders unresolved.
	s2, err := OpenConfigStore(ctx, open, kafkalog.Topic{Name: "configs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	snap := s2.Snapshot()
	if snap.Connectors["my-conn"]["password"] != "${env:PW}" || len(snap.Tasks["my-conn"]) != 2 || snap.TargetStates["my-conn"] != TargetStopped {
		t.Fatalf("snapshot = %+v", snap)
	}
	if _, err := s2.PutClusterID(ctx, "cluster-a"); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.PutClusterID(ctx, "cluster-b"); id != "cluster-a" {
		t.Fatalf("cluster id = %q, want the first written, cluster-a", id)
	}
	if err := s.RemoveConnector(ctx, "my-conn"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Connector("my-conn"); ok || len(s.TaskConfigs("my-conn")) != 0 {
		t.Fatal("connector still present after removal")
	}
	kinds := map[ConfigEventKind]int{}
	for _, e := range events {
		kinds[e.Kind]++
	}
	if kinds[ConnectorConfigChanged] != 1 || kinds[TaskConfigsCommitted] != 1 || kinds[TargetStateChanged] != 1 || kinds[ConnectorRemoved] != 1 {
		t.Fatalf("events = %v", kinds)
	}
}

func TestOffsetStoreKeysAndReload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open, _ := opener(t)
	topic := kafkalog.Topic{Name: "offsets", CreatePartitions: 5}
	s, err := OpenOffsetStore(ctx, open, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Put(ctx, "src", []SourceOffset{
		{Partition: map[string]any{"file": "/a"}, Offset: map[string]any{"position": 10}},
		{Partition: map[string]any{"file": "/b"}, Offset: map[string]any{"position": 20}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "src", []SourceOffset{{Partition: map[string]any{"file": "/a"}, Offset: map[string]any{"position": 11}}}); err != nil {
		t.Fatal(err)
	}
	key, _ := OffsetKey("src", map[string]any{"file": "/a"})
	if string(key) != `["src",{"file":"/a"}]` {
		t.Fatalf("key = %s", key)
	}
	s2, err := OpenOffsetStore(ctx, open, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, _ := json.Marshal(s2.Offsets("src"))
	if string(got) != `[{"Partition":{"file":"/a"},"Offset":{"position":11}},{"Partition":{"file":"/b"},"Offset":{"position":20}}]` {
		t.Fatalf("reloaded offsets = %s", got)
	}
	if err := s2.DeleteAll(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Offsets("src")); n != 0 {
		t.Fatalf("%d offsets left after DeleteAll", n)
	}
}

func TestStatusStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open, _ := opener(t)
	topic := kafkalog.Topic{Name: "status", CreatePartitions: 5}
	s, err := OpenStatusStore(ctx, open, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.PutConnector(ctx, "c-1", Status{State: "RUNNING", WorkerID: "w1:8083", Generation: 3})
	s.PutTask(ctx, TaskID{"c-1", 0}, Status{State: "RUNNING", WorkerID: "w1:8083"})
	s.PutTask(ctx, TaskID{"c-1", 1}, Status{State: "FAILED", WorkerID: "w1:8083", Trace: "boom"})
	s.PutTopic(ctx, "c-1", "t1", 0)
	s2, err := OpenStatusStore(ctx, open, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if st, _ := s2.Connector("c-1"); st.Generation != 3 || st.WorkerID != "w1:8083" {
		t.Fatalf("connector status = %+v", st)
	}
	if st, _ := s2.Task(TaskID{"c-1", 1}); st.Trace != "boom" || st.State != "FAILED" {
		t.Fatalf("task status = %+v", st)
	}
	if got := s2.Topics("c-1"); len(got) != 1 || got[0] != "t1" {
		t.Fatalf("topics = %v", got)
	}
	if err := s2.DeleteConnector(ctx, "c-1"); err != nil {
		t.Fatal(err)
	}
	if ids := s2.TaskIDs("c-1"); len(ids) != 0 {
		t.Fatalf("task statuses left: %v", ids)
	}
}

// TestConfigStoreCarriesClusterLogLevels: a cluster-wide log level is
// Kafka Connect's logger-cluster record (KIP-976); a store that opens
// emits every such record it reads, in the topic's order with the record's
// timestamp, but no other kind of record from before it opened.
func TestConfigStoreCarriesClusterLogLevels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open, opts := opener(t)
	var live []ConfigEvent
	s, err := OpenConfigStore(ctx, open, kafkalog.Topic{Name: "configs"}, func(e ConfigEvent) { live = append(live, e) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutConnectorConfig(ctx, "my-conn", map[string]string{"connector.class": "FileSink"}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	for _, l := range [][2]string{{"rest", "DEBUG"}, {"root", "WARN"}, {"connector.my-conn", "TRACE"}} {
		if err := s.PutLoggerLevel(ctx, l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	levels := func(evs []ConfigEvent) string {
		var b []string
		for _, e := range evs {
			if e.Kind == LoggerLevelSet {
				if e.At.Before(before) {
					t.Errorf("event %+v: At is not the record's timestamp", e)
				}
				b = append(b, e.Logger+"="+e.Level)
			}
		}
		return fmt.Sprint(b)
	}
	const want = "[rest=DEBUG root=WARN connector.my-conn=TRACE]"
	if got := levels(live); got != want {
		t.Errorf("live events: %s, want %s", got, want)
	}

	// On the wire: Kafka Connect's key and LOGGER_LEVEL_V0 value.
	var raw []kafkalog.Record
	rl, err := kafkalog.Open(ctx, kafkalog.Config{Topic: kafkalog.Topic{Name: "configs"}, ClientOpts: opts, Apply: func(r kafkalog.Record) { raw = append(raw, r) }})
	if err != nil {
		t.Fatal(err)
	}
	rl.Close()
	found := false
	for _, r := range raw {
		if string(r.Key) == "logger-cluster-rest" {
			found = string(r.Value) == `{"level":"DEBUG"}`
		}
	}
	if !found {
		t.Errorf("no record logger-cluster-rest = {\"level\":\"DEBUG\"} in the config topic")
	}

	// A store that opens (a worker that starts) replays them.
	var replayed []ConfigEvent
	s2, err := OpenConfigStore(ctx, open, kafkalog.Topic{Name: "configs"}, func(e ConfigEvent) { replayed = append(replayed, e) })
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := levels(replayed); got != want || len(replayed) != 3 {
		t.Errorf("events while opening: %s (%d events), want only %s", got, len(replayed), want)
	}
}
