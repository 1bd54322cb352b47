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
	"strings"
	"testing"
)

func TestVerifyTopic(t *testing.T) {
	cfg := TopicSpec{Role: TopicRoleConfig, Name: "c-configs", Partitions: 1, ReplicationFactor: 3}
	off := TopicSpec{Role: TopicRoleOffset, Name: "c-offsets", Partitions: 25, ReplicationFactor: 3}
	anyRF := TopicSpec{Role: TopicRoleStatus, Name: "c-status", Partitions: 5}
	good := func(p int32, rf int16) ObservedTopic {
		return ObservedTopic{Exists: true, Partitions: p, ReplicationFactor: rf, CleanupPolicy: "compact"}
	}
	for _, tc := range []struct {
		name       string
		want       TopicSpec
		got        ObservedTopic
		action     TopicAction
		problemHas string
	}{
		{"missing is created", off, ObservedTopic{}, TopicCreate, ""},
		{"matching", off, good(25, 3), TopicOK, ""},
		{"more replicas than asked is fine", off, good(25, 5), TopicOK, ""},
		{"broker default replication accepts any", anyRF, good(5, 1), TopicOK, ""},
		{"not compacted", off, ObservedTopic{Exists: true, Partitions: 25, ReplicationFactor: 3, CleanupPolicy: "delete"}, TopicInvalid, `cleanup.policy is "delete"`},
		{"compact,delete is not compact", off, ObservedTopic{Exists: true, Partitions: 25, ReplicationFactor: 3, CleanupPolicy: "compact,delete"}, TopicInvalid, "exactly \"compact\""},
		{"unknown policy is not compact", off, ObservedTopic{Exists: true, Partitions: 25, ReplicationFactor: 3}, TopicInvalid, `cleanup.policy is ""`},
		{"config topic with 3 partitions", cfg, good(3, 3), TopicInvalid, "exactly 1"},
		{"offset partitions differ", off, good(10, 3), TopicInvalid, "has 10 partitions but spec.storage asks for 25"},
		{"under-replicated", off, good(25, 1), TopicInvalid, "replication factor 1"},
		{"compaction is reported first", cfg, ObservedTopic{Exists: true, Partitions: 4, ReplicationFactor: 1, CleanupPolicy: "delete"}, TopicInvalid, "cleanup.policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := VerifyTopic(tc.want, tc.got)
			if v.Action != tc.action {
				t.Fatalf("action %s, want %s (problem %q)", v.Action, tc.action, v.Problem)
			}
			if tc.problemHas == "" && v.Problem != "" {
				t.Fatalf("unexpected problem %q", v.Problem)
			}
			if !strings.Contains(v.Problem, tc.problemHas) {
				t.Fatalf("problem %q does not contain %q", v.Problem, tc.problemHas)
			}
		})
	}
}

func TestCreatePartitions(t *testing.T) {
	if got := (TopicSpec{Role: TopicRoleConfig, Partitions: 7}).CreatePartitions(); got != 1 {
		t.Fatalf("config topic created with %d partitions, want 1", got)
	}
	if got := (TopicSpec{Role: TopicRoleOffset, Partitions: 7}).CreatePartitions(); got != 7 {
		t.Fatalf("offset topic created with %d partitions, want 7", got)
	}
	if got := (TopicSpec{Role: TopicRoleStatus}).CreatePartitions(); got != 1 {
		t.Fatalf("status topic without a count created with %d partitions, want 1", got)
	}
}

func TestTopicInvalidErrorNamesTopics(t *testing.T) {
	err := &TopicInvalidError{Verdicts: []TopicVerdict{
		{Topic: TopicSpec{Role: TopicRoleStatus, Name: "s"}, Action: TopicInvalid, Problem: "is bad"},
		{Topic: TopicSpec{Role: TopicRoleConfig, Name: "c"}, Action: TopicInvalid, Problem: "is worse"},
	}}
	if got, want := err.Error(), `config topic "c" is worse; status topic "s" is bad`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}
