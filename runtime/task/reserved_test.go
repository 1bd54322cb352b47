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

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// The producer boundary: a RegexRouter that sends a source's records to
// the cluster's config topic fails the task (even with
// errors.tolerance=all) and writes nothing there.
func TestSourceNeverWritesReservedTopics(t *testing.T) {
	for _, target := range []string{"cc-configs", "__consumer_offsets_x"} {
		c := cluster(t, map[string]int32{"in": 1, "cc-configs": 1})
		st := newStatuses()
		cfg := SourceConfig{Common: common(c, st, ID{"evil", 0}, nil), Task: &counterSource{topic: "in", limit: 10, batch: 5}, Offsets: newMemOffsets()}
		cfg.Reserved = plugin.NewReservedTopics("cc-configs", "cc-offsets", "cc-status")
		cfg.Errors = ErrorConfig{ToleranceAll: true}
		cfg.Transforms = map[string]string{
			"transforms": "route", "transforms.route.type": "RegexRouter",
			"transforms.route.regex": "in", "transforms.route.replacement": target,
		}
		r := newSource(t, cfg)
		testkit.EventuallyTrue(t, 10*time.Second, "the task failed", func() bool { return st.last(ID{"evil", 0}) == StateFailed })
		if tr := st.trace(ID{"evil", 0}); !strings.Contains(tr, target) || !strings.Contains(tr, "RegexRouter") {
			t.Fatalf("trace %q does not name the topic and the cause", tr)
		}
		_ = r.Stop(t.Context())
		if n := endOffset(t, admin(t, c), "cc-configs"); n != 0 {
			t.Fatalf("%d records reached the config topic", n)
		}
	}
}

// A regex subscription never reads reserved topics, and a topics list or a
// dead letter queue naming one is refused when the runner is made.
func TestSinkNeverReadsReservedTopics(t *testing.T) {
	c := cluster(t, map[string]int32{"orders": 1, "cc-status": 1, "__internal": 1})
	st := newStatuses()
	s := newRecordingSink()
	reserved := plugin.NewReservedTopics("cc-configs", "cc-offsets", "cc-status")
	cfg := SinkConfig{Common: common(c, st, ID{"rx", 0}, map[string]string{"topics.regex": ".*"}), Task: s, TopicsRegex: ".*"}
	cfg.Reserved = reserved
	newSink(t, cfg)
	produce(t, c, "cc-status", "status", 5)
	produce(t, c, "__internal", "internal", 5)
	produce(t, c, "orders", "order", 5)
	testkit.EventuallyTrue(t, 10*time.Second, "orders read", func() bool { return s.distinct() == 5 })
	testkit.Consistently(t, time.Second, "nothing from reserved topics", func() (bool, string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for v := range s.seen {
			if !strings.HasPrefix(v, "order") {
				return false, v
			}
		}
		return true, ""
	})

	for _, bad := range []SinkConfig{
		{Common: common(c, st, ID{"t", 0}, nil), Task: newRecordingSink(), Topics: []string{"orders", "cc-configs"}},
		{Common: common(c, st, ID{"d", 0}, nil), Task: newRecordingSink(), Topics: []string{"orders"}},
	} {
		bad.Reserved = reserved
		if bad.ID.Connector == "d" {
			bad.Errors = ErrorConfig{ToleranceAll: true, DLQTopic: "cc-configs"}
		}
		if _, err := NewSinkRunner(bad); err == nil || !strings.Contains(err.Error(), "cc-configs") {
			t.Fatalf("%s: NewSinkRunner = %v, want a refusal naming the topic", bad.ID.Connector, err)
		}
	}
}
