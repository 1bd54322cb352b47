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
	"math"
	"sort"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Task limit reasons are the runtime's (runtime/plugin): the operator
// mirrors the worker's reason verbatim and uses the same words for its own
// pre-run estimate.
const (
	ReasonTopicPartitions = plugin.TopicPartitions
	ReasonTables          = plugin.Tables
	ReasonSingleReader    = plugin.SingleReader
	// ReasonTasksMax: tasks.max binds; the connector is not limited.
	ReasonTasksMax = plugin.TasksMax
	// ReasonShareGroup: a sink with consumer.group.type=share; tasks.max
	// binds, not its partition count.
	ReasonShareGroup = plugin.ShareGroupMode
)

// Estimate sources say where a TaskLimit came from.
const (
	// LimitFromRuntime: the worker's answer to GET /connectors/{c}/limits.
	LimitFromRuntime = "Runtime"
	// LimitFromEstimate: the operator's own estimate before the connector runs.
	LimitFromEstimate = "Estimate"
)

// TaskLimit is a connector's natural limit on its number of tasks.
type TaskLimit struct {
	// Natural is the natural limit; nil when the connector has none (or it is
	// not known yet), so tasks.max alone bounds the task count.
	Natural *int32
	// Reason names what imposes Natural (TopicPartitions, Tables, ...).
	Reason plugin.Reason
	// Source is LimitFromRuntime or LimitFromEstimate.
	Source string
}

// EffectiveTasks is min(requested, natural limit) and the reason, by the
// runtime's own rule (plugin.EffectiveTasks), so the operator's estimate and
// the worker's answer can never disagree on the arithmetic: ReasonTasksMax
// when tasks.max binds, else the limit's reason. requested below 1 counts as
// 1; an unknown (nil) or negative natural limit does not bind.
func EffectiveTasks(requested int32, limit TaskLimit) (int32, plugin.Reason) {
	natural := plugin.NoLimit
	if limit.Natural != nil && *limit.Natural >= 0 {
		natural = int(*limit.Natural)
	}
	n, reason := plugin.EffectiveTasks(int(requested), natural, limit.Reason)
	return int32(n), reason
}

// Limited reports whether the connector runs fewer tasks than requested:
// the TasksLimited condition.
func Limited(requested, effective int32) bool {
	return effective < max(requested, 1)
}

// TaskLimitFromRuntime converts the worker's GET /connectors/{c}/limits answer.
func TaskLimitFromRuntime(l connectapi.Limits) TaskLimit {
	tl := TaskLimit{Reason: plugin.Reason(l.Reason), Source: LimitFromRuntime}
	if l.NaturalLimit != nil && *l.NaturalLimit >= 0 {
		n := int32(min(*l.NaturalLimit, math.MaxInt32))
		tl.Natural = &n
	}
	return tl
}

// EstimateInput is what the operator knows about a connector before it runs.
type EstimateInput struct {
	// Class is spec.class.
	Class string
	// Config is spec.config (placeholders unresolved; only non-secret keys
	// such as topics and table lists are read).
	Config map[string]string
	// PartitionCounts holds the partition count of each topic the operator
	// read with kadm; a topic absent from the map is unknown (or missing).
	PartitionCounts map[string]int32
}

// Estimator estimates one class's natural limit before the connector runs.
// ok is false when nothing can be said (the limit stays unknown).
type Estimator func(in EstimateInput) (limit int32, reason plugin.Reason, ok bool)

// Bundled connector classes whose natural limit the operator can estimate.
// The worker is still the source of truth once the connector runs.
const (
	ClassPostgresCDCSource   = "PostgresCDCSource"
	ClassPostgresTableSource = "PostgresTableSource"
	ClassPostgresSink        = "PostgresSink"
)

// Estimators maps a connector class to its pre-run estimator. Classes absent
// here fall back to SinkEstimator when their config names topics (every
// Kafka Connect sink takes "topics" or "topics.regex"), and to "unknown".
var Estimators = map[string]Estimator{
	ClassPostgresCDCSource:   SingleReaderEstimator,
	ClassPostgresTableSource: TableListEstimator("tables", "table.include.list"),
	ClassPostgresSink:        SinkEstimator,
}

// EstimateTaskLimit is the operator's pre-run estimate of a connector's
// natural limit: partition counts for sinks, 1 for a log-based CDC source,
// the number of listed tables for a table source.
func EstimateTaskLimit(in EstimateInput) TaskLimit {
	if plugin.ShareMode(in.Config) {
		// A share-mode sink: no partition count bounds it.
		return TaskLimit{Reason: ReasonShareGroup, Source: LimitFromEstimate}
	}
	est, ok := Estimators[in.Class]
	if !ok {
		if _, isSink := in.Config["topics"]; isSink {
			est = SinkEstimator
		} else {
			return TaskLimit{Source: LimitFromEstimate}
		}
	}
	n, reason, ok := est(in)
	if !ok {
		return TaskLimit{Source: LimitFromEstimate}
	}
	return TaskLimit{Natural: &n, Reason: reason, Source: LimitFromEstimate}
}

// SinkEstimator sums the partitions of the topics a sink lists in "topics".
// A topics.regex sink, or one whose topics were not all read, is unknown.
func SinkEstimator(in EstimateInput) (int32, plugin.Reason, bool) {
	topics := SinkTopics(in.Config)
	if len(topics) == 0 {
		return 0, "", false
	}
	var total int32
	for _, t := range topics {
		n, ok := in.PartitionCounts[t]
		if !ok {
			return 0, "", false
		}
		total += n
	}
	return total, ReasonTopicPartitions, true
}

// SingleReaderEstimator is the estimate of sources that read one stream.
func SingleReaderEstimator(EstimateInput) (int32, plugin.Reason, bool) {
	return 1, ReasonSingleReader, true
}

// TableListEstimator counts the tables listed (comma-separated) under the
// first of keys present in the config; a pattern-based source is unknown.
func TableListEstimator(keys ...string) Estimator {
	return func(in EstimateInput) (int32, plugin.Reason, bool) {
		for _, k := range keys {
			if v, ok := in.Config[k]; ok {
				n := int32(len(splitList(v)))
				if n == 0 {
					return 0, "", false
				}
				return n, ReasonTables, true
			}
		}
		return 0, "", false
	}
}

// SinkTopics is the sorted, de-duplicated list of topics in a sink's
// "topics" setting (empty for topics.regex sinks and sources).
func SinkTopics(config map[string]string) []string {
	return splitList(config["topics"])
}

// splitList splits a comma-separated list, trimming blanks and duplicates,
// sorted.
func splitList(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
