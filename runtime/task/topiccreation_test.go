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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// topicsSource writes one record to each of its topics.
type topicsSource struct {
	topics []string
	mu     sync.Mutex
	done   bool
	acked  int
}

func (s *topicsSource) Start(context.Context, plugin.SourceTaskContext, map[string]string) error {
	return nil
}

func (s *topicsSource) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	s.mu.Lock()
	done := s.done
	s.done = true
	s.mu.Unlock()
	if done {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return nil, nil
	}
	var out []*plugin.SourceRecord
	for i, t := range s.topics {
		out = append(out, &plugin.SourceRecord{SourcePartition: map[string]any{"t": t}, SourceOffset: map[string]any{"i": i}, Topic: t, Value: "v"})
	}
	return out, nil
}

func (s *topicsSource) CommitRecord(*plugin.SourceRecord, *plugin.RecordMetadata) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acked++
	return nil
}

func (s *topicsSource) Commit(context.Context) error { return nil }
func (s *topicsSource) Stop() error                  { return nil }

func (s *topicsSource) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked
}

// A source creates its topics as its topic.creation.* keys say (KIP-158):
// the first group whose include matches and exclude does not, else the
// default group, with their partitions, replication factor and topic
// configs; a topic that exists is left as it is. Read back with kadm.
func TestSourceCreatesItsTopics(t *testing.T) {
	c, _ := kafkatest.Cluster(t, kfake.NumBrokers(3), kfake.SeedTopics(1, "existing"))
	src := &topicsSource{topics: []string{"orders-eu", "orders-test", "events", "existing"}}
	s := spec(c, ID{"src", 0})
	s.TopicCreation = true
	s.Plugin = plugin.Plugin{Class: "test.Source", Kind: plugin.KindSource, NewSourceTask: func() plugin.SourceTask { return src }}
	s.Connector = map[string]string{
		"topic.creation.groups":                       "compacted",
		"topic.creation.default.partitions":           "2",
		"topic.creation.default.replication.factor":   "1",
		"topic.creation.default.retention.ms":         "3600000",
		"topic.creation.compacted.include":            "orders-.*",
		"topic.creation.compacted.exclude":            ".*-test",
		"topic.creation.compacted.partitions":         "3",
		"topic.creation.compacted.replication.factor": "3",
		"topic.creation.compacted.cleanup.policy":     "compact",
	}
	s.Offsets = newMemOffsets()
	r, err := New(s)
	tasktest.Start(t, r, err)
	testkit.EventuallyTrue(t, 15*time.Second, "every record acknowledged", func() bool { return src.ackedCount() == 4 })

	adm := admin(t, c)
	topics, err := adm.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := adm.DescribeTopicConfigs(context.Background(), "orders-eu", "orders-test", "events")
	if err != nil {
		t.Fatal(err)
	}
	conf := func(topic, key string) string {
		rc, err := cfgs.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rc.Configs {
			if c.Key == key && c.Value != nil {
				return *c.Value
			}
		}
		return ""
	}
	for _, tc := range []struct {
		topic              string
		partitions, rf     int
		cleanup, retention string
	}{
		{"orders-eu", 3, 3, "compact", "3600000"},  // the compacted group, with the default group's retention
		{"orders-test", 2, 1, "delete", "3600000"}, // excluded from compacted: the default group
		{"events", 2, 1, "delete", "3600000"},
	} {
		d := topics[tc.topic]
		rf := 0
		if p, ok := d.Partitions[0]; ok {
			rf = len(p.Replicas)
		}
		if len(d.Partitions) != tc.partitions || rf != tc.rf || conf(tc.topic, "cleanup.policy") != tc.cleanup || conf(tc.topic, "retention.ms") != tc.retention {
			t.Errorf("%s: %d partitions, replication factor %d, cleanup.policy %q, retention.ms %q; want %d, %d, %q, %q", tc.topic,
				len(d.Partitions), rf, conf(tc.topic, "cleanup.policy"), conf(tc.topic, "retention.ms"), tc.partitions, tc.rf, tc.cleanup, tc.retention)
		}
	}
	if n := len(topics["existing"].Partitions); n != 1 {
		t.Errorf("the existing topic has %d partitions, want its 1 left as it was", n)
	}
}

// Bad topic.creation.* keys are refused naming the key.
func TestTopicCreationKeysAreChecked(t *testing.T) {
	_, fes := plugin.ParseTopicCreation(map[string]string{
		"topic.creation.groups":                     "a",
		"topic.creation.default.partitions":         "0",
		"topic.creation.default.replication.factor": "1",
		"topic.creation.b.partitions":               "3",
		"topic.creation.a.include":                  "orders-(",
	})
	var got []string
	for _, fe := range fes {
		got = append(got, fe.Name+": "+fe.Message)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"topic.creation.default.partitions: \"0\"", "topic.creation.b.partitions: group \"b\" is not in topic.creation.groups", "topic.creation.a.include: \"orders-(\""} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q, want one containing %q", all, want)
		}
	}
}
