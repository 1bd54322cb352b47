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
	"fmt"
	"sort"
	"strings"

	"github.com/conveyor-dev/conveyor/controllers/condition"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// maxConditionMessage bounds condition messages built from worker answers.
const maxConditionMessage = 1024

// ValidationMessage renders the errors of a validate answer for the Ready
// condition, each naming its field ("topics: Missing required
// configuration"), sorted by field; "" when the config is valid. Only key
// names and the worker's messages appear, never config values.
func ValidationMessage(infos connectapi.ConfigInfos) string {
	var lines []string
	for _, c := range infos.Configs {
		for _, e := range c.Value.Errors {
			name := c.Value.Name
			if name == "" {
				name = c.Definition.Name
			}
			lines = append(lines, name+": "+e)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sort.Strings(lines)
	msg := fmt.Sprintf("the worker refused the config of %s (%d error(s)): %s", infos.Name, len(lines), strings.Join(lines, "; "))
	return condition.Truncate(msg, maxConditionMessage)
}

// SinkGroupConflict is a sink of another ConnectCluster on the same brokers
// that uses the same consumer group.
type SinkGroupConflict struct {
	Namespace, Name, Cluster string
	// WorkerGroup: the group is ConnectCluster Namespace/Cluster's worker
	// group (Name is empty).
	WorkerGroup bool
}

// SinkGroupUser is one sink connector that claims connect-<name> on some brokers.
type SinkGroupUser struct {
	Namespace, Name, Cluster string
	// Brokers is the normalized bootstrap server list (NormalizeBrokers).
	Brokers string
	// KafkaClusterID is the cluster id Kafka reported to the operator
	// (status.kafkaClusterId of the ConnectCluster), "" while unknown.
	KafkaClusterID string
	// CreatedAt orders claims: the older claim keeps the group.
	CreatedAt int64
}

// FindSinkGroupConflict returns the other connector that already claims the
// same consumer group (connect-<name>) on the same Kafka from another
// ConnectCluster, or nil. Two connectors of the same cluster cannot share a
// name (one namespace, one name), so only other clusters matter. The older
// claim wins; equal ages fall back to namespace/name order, so exactly one
// of two conflicting sinks runs.
func FindSinkGroupConflict(self SinkGroupUser, others []SinkGroupUser) *SinkGroupConflict {
	var winner *SinkGroupUser
	for i := range others {
		o := &others[i]
		if o.Name != self.Name || !o.sameKafka(&self) || (o.Namespace == self.Namespace && o.Cluster == self.Cluster) {
			continue
		}
		if o.Namespace == self.Namespace && o.Name == self.Name {
			continue // self
		}
		if older(o, &self) && (winner == nil || older(o, winner)) {
			winner = o
		}
	}
	if winner == nil {
		return nil
	}
	return &SinkGroupConflict{Namespace: winner.Namespace, Name: winner.Name, Cluster: winner.Cluster}
}

// sameKafka compares Kafka cluster ids when both are known (two spellings of
// one Kafka, a host name and an IP or another broker, are one Kafka), the
// bootstrap lists otherwise.
func (u *SinkGroupUser) sameKafka(o *SinkGroupUser) bool {
	if u.KafkaClusterID != "" && o.KafkaClusterID != "" {
		return u.KafkaClusterID == o.KafkaClusterID
	}
	return u.Brokers == o.Brokers
}

func older(a, b *SinkGroupUser) bool {
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt < b.CreatedAt
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}

// Message is the Ready=False message naming the other connector.
func (c *SinkGroupConflict) Message(group string) string {
	if c.WorkerGroup {
		return fmt.Sprintf("consumer group %q is the worker group of ConnectCluster %s/%s on the same Kafka; rename this connector",
			group, c.Namespace, c.Cluster)
	}
	return fmt.Sprintf("consumer group %q is already used by KafkaConnector %s/%s of ConnectCluster %s on the same Kafka brokers; rename this connector or the other one",
		group, c.Namespace, c.Name, c.Cluster)
}

// NormalizeBrokers makes bootstrap server lists comparable: lower case,
// trimmed, de-duplicated and sorted.
func NormalizeBrokers(bootstrap string) string {
	return strings.Join(splitList(strings.ToLower(bootstrap)), ",")
}
