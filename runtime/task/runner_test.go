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
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// spec is a Spec of the worker's kind for a test cluster, without its
// plugin and configuration.
func spec(c *kfake.Cluster, id ID) Spec {
	cm := common(c, newStatuses(), id, nil)
	cm.KeyConverter, cm.ValueConverter = nil, nil
	return Spec{Common: cm}
}

// New builds a sink as the worker does: the connector's converter over the
// worker's, its topics, its errors.* keys, and the consumer.* settings.
func TestNewBuildsASinkFromTheConnectorConfig(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	produce(t, c, "in", "r", 20)
	rec := newRecordingSink()
	s := spec(c, ID{"s", 0})
	s.Plugin = plugin.Plugin{Class: "test.Sink", Kind: plugin.KindSink, NewSinkTask: func() plugin.SinkTask { return rec }}
	// The values are not JSON: the worker's JSON value converter would
	// refuse them; the connector's string converter takes them.
	s.WorkerConverters = map[string]string{"key.converter": converter.StringClass, "value.converter": converter.JSONClass}
	s.Connector = map[string]string{"topics": "in", "value.converter": converter.StringClass, "errors.tolerance": "all"}
	s.Consumer = map[string]string{"max.poll.records": "7", "session.timeout.ms": "6000"}
	r, err := New(s)
	sr := tasktest.Start(t, r, err).(*SinkRunner)
	testkit.EventuallyTrue(t, 10*time.Second, "20 records put", func() bool { return rec.total() == 20 })
	rec.mu.Lock()
	if v := rec.puts[0].Value; v != "r-0" {
		t.Errorf("first value %#v, want the string r-0", v)
	}
	rec.mu.Unlock()
	if got := sr.cfg; got.MaxPollRecords != 7 || !got.Errors.ToleranceAll || len(got.Topics) != 1 {
		t.Errorf("max.poll.records %d, tolerance all %v, topics %v: want 7, true, [in]",
			got.MaxPollRecords, got.Errors.ToleranceAll, got.Topics)
	}
	if got := sr.Client().OptValue(kgo.SessionTimeout); got != 6*time.Second {
		t.Errorf("the consumer's session timeout is %v, want the worker's consumer.session.timeout.ms (6s)", got)
	}
}

// A source built by New asks the broker to create a missing topic, as
// Kafka Connect's producers do.
func TestNewSourceCreatesItsTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := spec(c, ID{"src", 0})
	s.Plugin = plugin.Plugin{Class: "test.Source", Kind: plugin.KindSource,
		NewSourceTask: func() plugin.SourceTask { return &counterSource{topic: "made", limit: 5, batch: 5} }}
	s.WorkerConverters = map[string]string{"key.converter": converter.StringClass, "value.converter": converter.StringClass}
	s.Connector = map[string]string{}
	s.Offsets = newMemOffsets()
	r, err := New(s)
	tasktest.Start(t, r, err)
	if got := values(readAll(t, c, "made", 5)); len(got) != 5 || got["v-4"] != 1 {
		t.Fatalf("records in the created topic: %v", got)
	}
}

func TestNewRefusesWhatItCannotBuild(t *testing.T) {
	c := cluster(t, nil)
	sink := plugin.Plugin{Class: "test.Sink", Kind: plugin.KindSink, NewSinkTask: func() plugin.SinkTask { return newRecordingSink() }}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"converters set by the caller", func(s *Spec) { s.KeyConverter = converter.StringConverter{} }, "from Spec.Connector"},
		{"no connector config", func(s *Spec) { s.Connector = nil }, "Spec.Connector"},
		{"bad max.poll.records", func(s *Spec) { s.Consumer = map[string]string{"max.poll.records": "many"} }, "consumer.max.poll.records"},
		{"bad session timeout", func(s *Spec) { s.Consumer = map[string]string{"session.timeout.ms": "-1"} }, "consumer.session.timeout.ms"},
		{"bad converter", func(s *Spec) { s.Connector["value.converter"] = "no.such.Converter" }, "value.converter"},
		{"bad errors.tolerance", func(s *Spec) { s.Connector["errors.tolerance"] = "some" }, "errors.tolerance"},
		{"unknown kind", func(s *Spec) { s.Plugin.Kind = "both" }, "unknown kind"},
		{"no sink task", func(s *Spec) { s.Plugin.NewSinkTask = nil }, "has no sink task"},
	} {
		s := spec(c, ID{"s", 0})
		s.Plugin = sink
		s.Connector = map[string]string{"topics": "in"}
		tc.edit(&s)
		if _, err := New(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
