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
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Internal topic roles, as Kafka Connect names its storage topics.
const (
	TopicRoleConfig = "config"
	TopicRoleOffset = "offset"
	TopicRoleStatus = "status"
)

// CleanupPolicyCompact is the only cleanup.policy an internal topic may have.
const CleanupPolicyCompact = "compact"

// TopicSpec is an internal topic as the cluster's spec wants it.
type TopicSpec struct {
	// Role is TopicRoleConfig, TopicRoleOffset or TopicRoleStatus.
	Role string
	Name string
	// Partitions is the wanted partition count; the config topic always has 1.
	Partitions int32
	// ReplicationFactor is the wanted replication factor; 0 or less means the
	// broker's default.
	ReplicationFactor int16
}

// ObservedTopic is what Kafka reports about an internal topic.
type ObservedTopic struct {
	Exists bool
	// Partitions is the number of partitions.
	Partitions int32
	// ReplicationFactor is the smallest replica count of any partition.
	ReplicationFactor int16
	// CleanupPolicy is the topic's effective cleanup.policy ("" when unknown).
	CleanupPolicy string
}

// TopicAction is what the operator does about one internal topic.
type TopicAction string

const (
	// TopicOK means the topic exists and matches the spec.
	TopicOK TopicAction = "OK"
	// TopicCreate means the topic does not exist and is created.
	TopicCreate TopicAction = "Create"
	// TopicInvalid means the topic exists but is wrong; the operator never
	// repairs it (changing partitions or cleanup policy of a live internal topic
	// loses or reorders data), it reports the problem.
	TopicInvalid TopicAction = "Invalid"
)

// TopicVerdict is VerifyTopic's decision about one topic.
type TopicVerdict struct {
	Topic  TopicSpec
	Action TopicAction
	// Problem says what is wrong when Action is TopicInvalid.
	Problem string
	// CreateFailed marks a missing topic that could not be created.
	CreateFailed bool
}

// topicCheck is one rule an existing internal topic must pass, in the manner
// of cert-manager's policy chains: it returns a problem and true when the
// topic violates the rule.
type topicCheck func(want TopicSpec, got ObservedTopic) (problem string, violated bool)

// topicChecks run in order; the first violation is reported.
var topicChecks = []topicCheck{
	checkCompacted,
	checkPartitions,
	checkReplication,
}

func checkCompacted(_ TopicSpec, got ObservedTopic) (string, bool) {
	policies := strings.Split(strings.ReplaceAll(got.CleanupPolicy, " ", ""), ",")
	if len(policies) == 1 && policies[0] == CleanupPolicyCompact {
		return "", false
	}
	return fmt.Sprintf("cleanup.policy is %q, it must be exactly %q or records would be deleted by retention; fix it with kafka-configs --alter --add-config cleanup.policy=compact",
		got.CleanupPolicy, CleanupPolicyCompact), true
}

func checkPartitions(want TopicSpec, got ObservedTopic) (string, bool) {
	if want.Role == TopicRoleConfig && got.Partitions != 1 {
		return fmt.Sprintf("has %d partitions, the config topic must have exactly 1 so that configs stay totally ordered", got.Partitions), true
	}
	if want.Partitions > 0 && got.Partitions != want.Partitions {
		return fmt.Sprintf("has %d partitions but spec.storage asks for %d; Conveyor never changes the partition count of an internal topic (keys would move to other partitions), so set the spec to %d or recreate the topic",
			got.Partitions, want.Partitions, got.Partitions), true
	}
	return "", false
}

func checkReplication(want TopicSpec, got ObservedTopic) (string, bool) {
	if want.ReplicationFactor > 0 && got.ReplicationFactor < want.ReplicationFactor {
		return fmt.Sprintf("has replication factor %d but spec.storage asks for at least %d; add replicas with a partition reassignment", got.ReplicationFactor, want.ReplicationFactor), true
	}
	return "", false
}

// VerifyTopic decides what to do about one internal topic from what Kafka
// reports about it.
func VerifyTopic(want TopicSpec, got ObservedTopic) TopicVerdict {
	if !got.Exists {
		return TopicVerdict{Topic: want, Action: TopicCreate}
	}
	for _, check := range topicChecks {
		if problem, violated := check(want, got); violated {
			return TopicVerdict{Topic: want, Action: TopicInvalid, Problem: problem}
		}
	}
	return TopicVerdict{Topic: want, Action: TopicOK}
}

// TopicCreateConfigs are the topic configs an internal topic is created with.
func TopicCreateConfigs() map[string]string {
	return map[string]string{"cleanup.policy": CleanupPolicyCompact}
}

// CreatePartitions is the partition count an internal topic is created with.
func (t TopicSpec) CreatePartitions() int32 {
	if t.Role == TopicRoleConfig || t.Partitions <= 0 {
		return 1
	}
	return t.Partitions
}

// ErrKafkaUnreachable marks errors that mean the operator could not talk to Kafka.
var ErrKafkaUnreachable = errors.New("kafka unreachable")

// KafkaUnreachableError says Kafka could not be reached or refused the operator.
type KafkaUnreachableError struct {
	BootstrapServers []string
	Err              error
}

func (e *KafkaUnreachableError) Error() string {
	return fmt.Sprintf("cannot reach Kafka at %s: %v", strings.Join(e.BootstrapServers, ","), e.Err)
}

// Unwrap returns the cause.
func (e *KafkaUnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrKafkaUnreachable) true.
func (e *KafkaUnreachableError) Is(target error) bool { return target == ErrKafkaUnreachable }

// TopicInvalidError lists internal topics that exist but are wrong.
type TopicInvalidError struct {
	Verdicts []TopicVerdict
}

func (e *TopicInvalidError) Error() string {
	parts := make([]string, 0, len(e.Verdicts))
	for _, v := range e.Verdicts {
		parts = append(parts, fmt.Sprintf("%s topic %q %s", v.Topic.Role, v.Topic.Name, v.Problem))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// OnlyCreateFailures reports whether every problem is a topic that could not
// be created (rather than an existing topic that is wrong).
func (e *TopicInvalidError) OnlyCreateFailures() bool {
	for _, v := range e.Verdicts {
		if !v.CreateFailed {
			return false
		}
	}
	return len(e.Verdicts) > 0
}
