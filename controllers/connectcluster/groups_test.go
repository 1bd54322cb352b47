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
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNormalizeBootstrapServers(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{nil, nil},
		{[]string{" "}, nil},
		{[]string{"Kafka-0.Kafka:9092"}, []string{"kafka-0.kafka:9092"}},
		{[]string{"b:9093,a:9092", "a:9092"}, []string{"a:9092", "b:9093"}},
		{[]string{"kafka"}, []string{"kafka:9092"}},
		{[]string{"SASL_SSL://kafka.example.com.:9096"}, []string{"kafka.example.com:9096"}},
		{[]string{"[::1]:9092", "::1"}, []string{"[::1]:9092"}},
		{[]string{"127.0.0.1:19092 , 127.0.0.1:19093"}, []string{"127.0.0.1:19092", "127.0.0.1:19093"}},
	} {
		if got := NormalizeBootstrapServers(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("NormalizeBootstrapServers(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func withID(c GroupClaim, id string) GroupClaim { c.KafkaClusterID = id; return c }

func TestFindGroupConflict(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(ns, name string, age time.Duration, group string, servers ...string) GroupClaim {
		return GroupClaim{Namespace: ns, Name: name, Created: t0.Add(age), GroupID: group, BootstrapServers: NormalizeBootstrapServers(servers)}
	}
	self := claim("team-b", "connect", 10*time.Second, "shared", "kafka:9092")
	for _, tc := range []struct {
		name       string
		self       GroupClaim
		claims     []GroupClaim
		wantWinner string // "" for no conflict
	}{
		{"alone", self, []GroupClaim{self}, ""},
		{"other group", self, []GroupClaim{claim("team-a", "x", 0, "other", "kafka:9092")}, ""},
		{"other kafka", self, []GroupClaim{claim("team-a", "x", 0, "shared", "elsewhere:9092")}, ""},
		{"older claim in another namespace wins", self, []GroupClaim{self, claim("team-a", "x", 0, "shared", "KAFKA")}, "team-a/x"},
		{"overlapping server lists are the same kafka", self, []GroupClaim{claim("team-a", "x", 0, "shared", "other:9092,kafka:9092")}, "team-a/x"},
		{"younger claim loses", self, []GroupClaim{claim("team-a", "x", time.Minute, "shared", "kafka:9092")}, ""},
		{"same age: name order decides (self first)", self, []GroupClaim{claim("team-c", "x", 10*time.Second, "shared", "kafka:9092")}, ""},
		{"same age: name order decides (other first)", self, []GroupClaim{claim("team-a", "x", 10*time.Second, "shared", "kafka:9092")}, "team-a/x"},
		// Kafka's cluster id decides when both are known: spellings differ,
		// the cluster is one (or spellings overlap, the clusters are two).
		{"same cluster id by another spelling", withID(self, "id-1"), []GroupClaim{withID(claim("team-a", "x", 0, "shared", "10.0.0.7:9092"), "id-1")}, "team-a/x"},
		{"other cluster id behind a shared address", withID(self, "id-1"), []GroupClaim{withID(claim("team-a", "x", 0, "shared", "kafka:9092"), "id-2")}, ""},
		{"oldest of several is named", self, []GroupClaim{
			claim("team-a", "young", 5*time.Second, "shared", "kafka:9092"),
			claim("team-z", "oldest", 0, "shared", "kafka:9092"),
			claim("team-a", "older", 2*time.Second, "shared", "kafka:9092"),
		}, "team-z/oldest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FindGroupConflict(tc.self, tc.claims)
			switch {
			case tc.wantWinner == "" && got != nil:
				t.Fatalf("unexpected conflict with %s: %s", got.Winner.Key(), got.Message)
			case tc.wantWinner != "" && got == nil:
				t.Fatalf("no conflict found, want one with %s", tc.wantWinner)
			case got != nil:
				if got.Winner.Key() != tc.wantWinner {
					t.Fatalf("winner %s, want %s", got.Winner.Key(), tc.wantWinner)
				}
				if !strings.Contains(got.Message, tc.wantWinner) || !strings.Contains(got.Message, `"shared"`) {
					t.Fatalf("message %q does not name the winner and the group", got.Message)
				}
			}
		})
	}
	// Symmetry: of two clusters claiming the same group, exactly one is refused.
	a := claim("ns1", "a", 0, "g", "k:9092")
	b := claim("ns2", "b", 0, "g", "k")
	if (FindGroupConflict(a, []GroupClaim{b}) == nil) == (FindGroupConflict(b, []GroupClaim{a}) == nil) {
		t.Fatal("exactly one of two equal-age claims must lose")
	}
}
