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
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// DefaultKafkaPort is the port assumed for a bootstrap server written without one.
const DefaultKafkaPort = "9092"

// NormalizeBootstrapServers turns a bootstrap server list into a sorted,
// de-duplicated list of lower-case host:port addresses, so that two clusters
// that name the same brokers in a different order, case, with a listener
// prefix ("SASL_SSL://") or without the default port compare equal. Entries
// may be comma-separated inside one string.
func NormalizeBootstrapServers(servers []string) []string {
	var out []string
	for _, s := range servers {
		for _, part := range strings.Split(s, ",") {
			if a := normalizeAddress(part); a != "" {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func normalizeAddress(a string) string {
	a = strings.ToLower(strings.TrimSpace(a))
	if i := strings.Index(a, "://"); i >= 0 {
		a = a[i+3:]
	}
	a = strings.TrimSuffix(a, "/")
	if a == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		// No port (or a bare IPv6 address): Kafka's default port.
		host, port = strings.Trim(a, "[]"), DefaultKafkaPort
	}
	host = strings.TrimSuffix(host, ".")
	return net.JoinHostPort(host, port)
}

// SameKafka reports whether two normalized bootstrap lists reach the same
// Kafka cluster, which is assumed when they share at least one address: a
// client given either list discovers the same brokers.
func SameKafka(a, b []string) bool {
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); found {
			return true
		}
	}
	return false
}

// GroupClaim is what a ConnectCluster claims on Kafka: its worker group id on
// a set of brokers.
type GroupClaim struct {
	Namespace string
	Name      string
	// Created is the claimant's creationTimestamp: the oldest claim wins.
	Created time.Time
	// GroupID is the resolved group id (spec.groupId or <namespace>.<name>).
	GroupID string
	// BootstrapServers is the normalized list (NormalizeBootstrapServers).
	BootstrapServers []string
	// KafkaClusterID is the cluster id Kafka reported ("" while unknown).
	KafkaClusterID string
}

// SameKafkaAs reports whether two claims are on the same Kafka cluster: by
// the cluster id Kafka reported when both are known (two spellings of one
// cluster, a host name and an IP or another of its brokers, are the same
// Kafka), by shared bootstrap addresses otherwise.
func (c GroupClaim) SameKafkaAs(o GroupClaim) bool {
	if c.KafkaClusterID != "" && o.KafkaClusterID != "" {
		return c.KafkaClusterID == o.KafkaClusterID
	}
	return SameKafka(c.BootstrapServers, o.BootstrapServers)
}

// kafkaName names a claim's Kafka in messages.
func (c GroupClaim) kafkaName() string {
	if c.KafkaClusterID != "" {
		return fmt.Sprintf("cluster id %q (bootstrap %s)", c.KafkaClusterID, strings.Join(c.BootstrapServers, ","))
	}
	return strings.Join(c.BootstrapServers, ",")
}

// Key is namespace/name.
func (c GroupClaim) Key() string { return c.Namespace + "/" + c.Name }

// before orders claims: older first, then by namespace/name so that two
// clusters created in the same second still agree on a winner.
func (c GroupClaim) before(o GroupClaim) bool {
	if !c.Created.Equal(o.Created) {
		return c.Created.Before(o.Created)
	}
	return c.Key() < o.Key()
}

// GroupConflict is the outcome of FindGroupConflict.
type GroupConflict struct {
	// Winner is the claim that keeps the group.
	Winner GroupClaim
	// Message names the winner for a condition and an event.
	Message string
}

// FindGroupConflict returns the claim that owns self's group when it is not
// self: another cluster, in any namespace, that claims the same group id on
// the same Kafka (SameKafkaAs) and is older (or as old and sorts first by namespace/name).
// It returns nil when self may run its workers. Claims equal to self (same
// namespace and name) are ignored, so the caller can pass a plain list.
func FindGroupConflict(self GroupClaim, claims []GroupClaim) *GroupConflict {
	var winner *GroupClaim
	for i := range claims {
		c := claims[i]
		if c.Key() == self.Key() || c.GroupID != self.GroupID || !c.SameKafkaAs(self) {
			continue
		}
		if !c.before(self) {
			continue
		}
		if winner == nil || c.before(*winner) {
			winner = &claims[i]
		}
	}
	if winner == nil {
		return nil
	}
	return &GroupConflict{
		Winner: *winner,
		Message: fmt.Sprintf("group id %q on Kafka %s is already used by ConnectCluster %s (created %s); this cluster runs no workers until the other is deleted or one of them uses another spec.groupId",
			self.GroupID, self.kafkaName(), winner.Key(), winner.Created.UTC().Format(time.RFC3339)),
	}
}
