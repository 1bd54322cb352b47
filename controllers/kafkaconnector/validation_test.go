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
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

func TestValidationMessage(t *testing.T) {
	if m := ValidationMessage(connectapi.ConfigInfos{Name: "FileSink", Configs: []connectapi.ConfigInfo{{Value: connectapi.ConfigValueInfo{Name: "file"}}}}); m != "" {
		t.Fatalf("valid config gave %q", m)
	}
	secret := "hunter2"
	infos := connectapi.ConfigInfos{Name: "PostgresSink", ErrorCount: 2, Configs: []connectapi.ConfigInfo{
		{Definition: connectapi.ConfigKeyInfo{Name: "topics"}, Value: connectapi.ConfigValueInfo{Name: "topics", Errors: []string{"Missing required configuration \"topics\" which has no default value."}}},
		{Definition: connectapi.ConfigKeyInfo{Name: "batch.size"}, Value: connectapi.ConfigValueInfo{Name: "batch.size", Value: &secret, Errors: []string{"Invalid value -1: must be at least 1"}}},
		{Definition: connectapi.ConfigKeyInfo{Name: "connection.password"}, Value: connectapi.ConfigValueInfo{Name: "connection.password", Value: &secret}},
	}}
	m := ValidationMessage(infos)
	for _, want := range []string{"PostgresSink", "2 error(s)", "batch.size: Invalid value -1", "topics: Missing required"} {
		if !strings.Contains(m, want) {
			t.Errorf("message %q lacks %q", m, want)
		}
	}
	if strings.Contains(m, secret) {
		t.Errorf("message %q leaks a config value", m)
	}
	if strings.Index(m, "batch.size") > strings.Index(m, "topics:") {
		t.Errorf("fields not sorted: %q", m)
	}
	long := connectapi.ConfigInfos{Name: "X"}
	for i := 0; i < 200; i++ {
		long.Configs = append(long.Configs, connectapi.ConfigInfo{Value: connectapi.ConfigValueInfo{Name: "k", Errors: []string{"é error é"}}})
	}
	if m := ValidationMessage(long); len(m) > maxConditionMessage || !strings.HasSuffix(m, " ...") || !strings.HasPrefix(m, "the worker") {
		t.Errorf("long message not bounded: %d bytes", len(m))
	}
}

func TestFindSinkGroupConflict(t *testing.T) {
	b := NormalizeBrokers("Kafka-1:9092, kafka-0:9092")
	if b != "kafka-0:9092,kafka-1:9092" {
		t.Fatalf("NormalizeBrokers = %q", b)
	}
	self := SinkGroupUser{Namespace: "a", Name: "orders", Cluster: "c1", Brokers: b, CreatedAt: 200}
	cases := []struct {
		name   string
		others []SinkGroupUser
		want   *SinkGroupConflict
	}{
		{"alone", []SinkGroupUser{self}, nil},
		{"other name", []SinkGroupUser{{Namespace: "b", Name: "refunds", Cluster: "c2", Brokers: b, CreatedAt: 1}}, nil},
		{"other brokers", []SinkGroupUser{{Namespace: "b", Name: "orders", Cluster: "c2", Brokers: "x:9092", CreatedAt: 1}}, nil},
		{"older claim elsewhere wins", []SinkGroupUser{self, {Namespace: "b", Name: "orders", Cluster: "c2", Brokers: b, CreatedAt: 100}},
			&SinkGroupConflict{Namespace: "b", Name: "orders", Cluster: "c2"}},
		{"younger claim elsewhere loses", []SinkGroupUser{self, {Namespace: "b", Name: "orders", Cluster: "c2", Brokers: b, CreatedAt: 300}}, nil},
		{"same Kafka cluster id, other spelling", []SinkGroupUser{{Namespace: "b", Name: "orders", Cluster: "c2", Brokers: "127.0.0.1:9092", KafkaClusterID: "id-1", CreatedAt: 100}},
			nil}, // self's id is unknown: the lists differ
		{"same age: name order decides", []SinkGroupUser{{Namespace: "0", Name: "orders", Cluster: "c2", Brokers: b, CreatedAt: 200}},
			&SinkGroupConflict{Namespace: "0", Name: "orders", Cluster: "c2"}},
	}
	selfID := self
	selfID.KafkaClusterID = "id-1"
	cases = append(cases,
		struct {
			name   string
			others []SinkGroupUser
			want   *SinkGroupConflict
		}{"ids known: same cluster by another spelling", []SinkGroupUser{{Namespace: "b", Name: "orders", Cluster: "c2", Brokers: "127.0.0.1:9092", KafkaClusterID: "id-1", CreatedAt: 100}},
			&SinkGroupConflict{Namespace: "b", Name: "orders", Cluster: "c2"}},
		struct {
			name   string
			others []SinkGroupUser
			want   *SinkGroupConflict
		}{"ids known: other cluster behind the same list", []SinkGroupUser{{Namespace: "b", Name: "orders", Cluster: "c2", Brokers: b, KafkaClusterID: "id-2", CreatedAt: 100}}, nil})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			me := self
			if strings.HasPrefix(c.name, "ids known") {
				me = selfID
			}
			got := FindSinkGroupConflict(me, c.others)
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Fatalf("FindSinkGroupConflict = %+v, want %+v", got, c.want)
			}
			if got != nil && !strings.Contains(got.Message("connect-orders"), "c2") {
				t.Fatalf("message %q does not name the other cluster", got.Message("connect-orders"))
			}
		})
	}
}
