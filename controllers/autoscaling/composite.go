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

package autoscaling

// The composite lag metric.
//
// The HPA takes the maximum over a ScaledObject's metrics, never the sum, and
// KEDA's kafka scaler reads one topic per trigger. One trigger per topic and
// sink therefore under-scales whenever lag is spread out: a sink with lag
// 3000 on each of two topics and lagThreshold 1000 would get 3 workers where
// it needs 6. So the derived ScaledObject yields one metric:
//
//	sum over running sinks c of min(sum over c's topics t of lag(c, t), effectiveTasks(c) × lagThreshold)
//
// targeted at lagThreshold as an AverageValue (the HPA asks for
// ceil(metric / lagThreshold) workers, between the bounds of decision.go) and
// active above activationLagThreshold. The cap is what one connector can use:
// it runs effectiveTasks tasks, so more workers than that do nothing for it.
// KEDA's scaler already caps each topic at partitions × lagThreshold.
//
// How: KEDA's spec.advanced.scalingModifiers (KEDA 2.12 and later) sums the
// triggers with a formula in KEDA's expression language. The alternative, a
// metrics-api or external scaler served by the operator, was not chosen:
//   - the operator would need a Kafka client reading every sink's lag at
//     KEDA's polling rate, an endpoint that KEDA's metrics path depends on
//     (a Service, TLS and authentication for it, and only the leader could
//     answer), so an operator restart would stop autoscaling;
//   - with scalingModifiers, KEDA's own kafka scaler reads the lag, with the
//     credentials of the derived TriggerAuthentication, and the arithmetic is
//     KEDA's, so test/kedascale can check it with KEDA's own code.
//
// Backlog the workers serve (backlog.go). Two figures have no consumer lag
// KEDA's kafka scaler can read: a source's backlog (a table source's rows
// behind) and a share-mode sink's (KEDA has no share-group scaler). For
// those the workers serve the figure and each connector gets a metrics-api
// trigger, a term "min((backlog_<c> ?? 0), cap)" like a sink's. This is not
// the operator-served scaler refused above, and its restarts are safe:
//   - the figure lives where the work is: the source database and the
//     offsets topic (a table source's committed positions), Kafka's share
//     group state (a share sink's start offsets) and the topic's end
//     offsets. No process holds it; every worker computes it on request
//     from those, the same answer from any of them;
//   - KEDA asks every ready endpoint of the workers' Service and takes the
//     largest answer. A worker that restarts is not ready (its stores are
//     read before it is) and not asked; one that fails a read while another
//     answers is skipped by KEDA; only when no worker answers does the
//     trigger fail, and then the fallback above applies (the HPA holds, then
//     the term counts 0 after three failed reads), as for a kafka trigger
//     whose broker is down. Workers exist whenever the connector runs, so
//     this path fails only when the connector itself cannot run;
//   - the workers are what the HPA scales, so their endpoint set changes
//     with every scale step; the maximum over identical answers does not
//     change with it (a sum or an average over endpoints would count each
//     worker or divide by the count);
//   - it needs no new credential or Service: the metrics port and its token
//     (a read-only credential; KEDA's TriggerAuthentication references the
//     token's Secret) already exist for Prometheus.
// The cost: each read asks the source database once per ready worker (one
// count per table); KEDA reads at pollingInterval and on the HPA's queries.
//
// A trigger that cannot be read. Each trigger in a formula is a point of
// failure: KEDA gives a failing trigger no value, and "a + b" over a missing
// value fails as a whole ("invalid operation: <nil> + <nil>"). Left so, one
// sink whose lag cannot be read (its topic deleted, its group or topic
// denied by an ACL, its group's coordinator not answering) blinds the
// autoscaler for every other sink: the HPA keeps the current count, however
// much lag the others build. So the composite decides what an unreadable
// trigger is worth:
//
//   - every trigger enters the formula as "(name ?? 0)": unread, it counts as
//     no lag, so the other sinks' terms still add up and scale the cluster;
//   - the ScaledObject has KEDA's fallback with behavior scalingModifiers
//     (KEDA 2.20 and later) and failureThreshold 3: KEDA gives a trigger that
//     failed more than three reads in a row the nil that "??" replaces, and
//     until then answers the metric with an error, so the HPA holds the count
//     through a short blip (a coordinator moving, a broker restarting)
//     instead of dropping the sink's share at once. fallback.replicas (the
//     bounds' minimum) would apply only if the whole formula were nil, which
//     "?? 0" rules out.
//
// Why 0, and not the sink's cap or KEDA's other fallbacks: the unreadable
// sink must scale the cluster neither to its maximum nor to zero. Its cap
// (effectiveTasks × lagThreshold) would add its every task's worth of workers
// for as long as it cannot be read, which for a deleted or denied topic is
// until a person acts; KEDA's static fallback replaces the whole metric with
// fallback.replicas, ignoring the sinks that can be read; holding (KEDA
// without a fallback) is the blindness above. With 0 the unreadable sink
// keeps what the bounds give every task: the minimum is at least the task
// floor, ceil(total effective tasks / maxTasksPerWorker) (decision.go), so
// its tasks always have a worker, and the cluster never goes below it. The
// cost is that its own backlog cannot add workers while unread; the
// ConnectCluster's Autoscaling condition then says TriggersUnreadable and
// names each such trigger with its connector and topic (UnreadableTriggers
// reads KEDA's per-trigger health from the ScaledObject's status, so the
// operator needs no Kafka client of its own for it).
//
// A KEDA older than 2.20 (no fallback behavior scalingModifiers in its CRD)
// gets the same "??" formula without the fallback: its metrics server still
// answers an error while any trigger fails, and the HPA holds.
//
// What the triggers cost KEDA, and why one kafka trigger per sink and topic
// stays (issue 31; test/bench/keda with real KEDA 2.21, its HPA reading the
// metric; docs/benchmarks.md#cost-curves). Each trigger is a scaler of its
// own in KEDA's operator, with its own Kafka client, and each read of the
// composite reads every trigger's lag. Measured on 2 shared cores, at 1, 100
// and 500 sink triggers, fullMetadata "false":
//   - KEDA's operator: 117, 138 and 198 MiB, 0.16 MiB a trigger, linear
//     (bend 0.70); its metrics server stays at 107-109 MiB;
//   - the composite metric: 0.008, 0.06 and 0.87 s a read (bend 3.6: KEDA
//     runs every scaler for a read, three Kafka requests each, and scans
//     the list of all metric names once per trigger);
//   - the first metric after the ScaledObject appeared: 0.2, 5 and 90 s
//     (450 s on a machine at load 30). KEDA builds the scalers (and their
//     Kafka clients) of a new generation one after another, so a change of
//     the trigger set (a sink added) costs that once, twice where settle.go
//     keeps a second generation; the HPA holds meanwhile.
// With KEDA's default fullMetadata "true" every client also keeps the
// metadata of every topic on the brokers, so KEDA's memory grows with
// triggers × topics (the curve keda_rss_mb_per_trigger_fullmetadata: 507 MiB
// for the operator at 500); the derived "false" keeps it at 0.16 MiB a
// trigger.
//
// Serving the composite from one place (a single metrics-api trigger whose
// figure a worker computes, as backlog.go serves sources' backlogs) would
// make KEDA's cost flat, but it moves the same Kafka reads (every sink
// group's committed offsets, every topic's end offsets) into the workers,
// and it gives up what per-sink triggers give: KEDA's own lag arithmetic
// (checked with KEDA's code in test/kedascale), per-trigger health (a sink
// whose lag cannot be read counts 0 and is named by UnreadableTriggers
// while the others still scale the cluster), and the credentials staying
// in the derived TriggerAuthentication. At 0.16 MiB and under 2 ms a
// trigger, 500 sink topics cost KEDA about 80 MiB and a 0.9 s read, within
// the HPA's 15 s period, so the triggers stay. Revisit past a few hundred
// sink topics per ConnectCluster: there KEDA's rebuild after each change
// (a minute and more), not the memory, is what hurts, and the served
// figure is the way.

// Trigger names are identifiers the formula can use: KEDA's formula compiler
// reads "archive.orders" as a field access and refuses it, so names are
// "lag_" plus the connector and topic with every other character replaced
// by "_", made unique with a numeric suffix.

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// FallbackFailureThreshold is how many reads in a row a trigger may fail
// before the composite counts it as 0; until then KEDA answers the composite
// with an error and the HPA holds.
const FallbackFailureThreshold = 3

// sinkTerm is one running sink's part of the formula.
type sinkTerm struct {
	// triggers are the names of the sink's triggers, one per topic.
	triggers []string
	// capLag is effectiveTasks × lagThreshold.
	capLag int64
}

// formula is the composite over the terms, in KEDA's expression language,
// every trigger counting 0 when it has no value:
// "min((a ?? 0) + (b ?? 0), 6000) + min((c ?? 0), 2000)". Empty without terms.
func formula(terms []sinkTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		if len(t.triggers) == 0 {
			continue
		}
		vals := make([]string, len(t.triggers))
		for i, name := range t.triggers {
			vals[i] = "(" + name + " ?? 0)"
		}
		parts = append(parts, fmt.Sprintf("min(%s, %s)", strings.Join(vals, " + "), strconv.FormatInt(t.capLag, 10)))
	}
	return strings.Join(parts, " + ")
}

// UnreadableTrigger is a trigger of the derived ScaledObject that KEDA
// failed to read on its last tries.
type UnreadableTrigger struct {
	// Name is the trigger's name in the formula.
	Name string
	// Connector and Topic are what the trigger reads (group connect-<Connector>).
	Connector, Topic string
	// Failures is how many reads in a row failed.
	Failures int32
}

func (u UnreadableTrigger) String() string {
	if u.Topic == "" {
		return fmt.Sprintf("%s (connector %s, backlog: %d failed reads)", u.Name, u.Connector, u.Failures)
	}
	return fmt.Sprintf("%s (connector %s, topic %s: %d failed reads)", u.Name, u.Connector, u.Topic, u.Failures)
}

// kedaMetricIndex is the trigger index KEDA puts at the start of each
// trigger's metric name ("s2-kafka-orders" is trigger 2's).
var kedaMetricIndex = regexp.MustCompile(`^s(\d+)-`)

// UnreadableTriggers lists the triggers whose health KEDA records as
// failing in the ScaledObject's status (status.health, kept by KEDA for a
// ScaledObject with a fallback, keyed by metric name), in trigger order.
func UnreadableTriggers(so *kedav1alpha1.ScaledObject) []UnreadableTrigger {
	if so == nil {
		return nil
	}
	var out []UnreadableTrigger
	idx := map[string]int{}
	for metric, h := range so.Status.Health {
		if h.Status != kedav1alpha1.HealthStatusFailing || h.NumberOfFailures == nil || *h.NumberOfFailures <= 0 {
			continue
		}
		m := kedaMetricIndex.FindStringSubmatch(metric)
		if m == nil {
			continue
		}
		i, err := strconv.Atoi(m[1])
		if err != nil || i >= len(so.Spec.Triggers) {
			continue
		}
		tr := so.Spec.Triggers[i]
		idx[tr.Name] = i
		u := UnreadableTrigger{
			Name:      tr.Name,
			Connector: strings.TrimPrefix(tr.Metadata["consumerGroup"], sinkGroupPrefix),
			Topic:     tr.Metadata["topic"],
			Failures:  *h.NumberOfFailures,
		}
		if tr.Type == BacklogTriggerType {
			u.Connector, u.Topic = backlogConnector(tr), ""
		}
		out = append(out, u)
	}
	sort.Slice(out, func(a, b int) bool { return idx[out[a].Name] < idx[out[b].Name] })
	return out
}

// triggerNames hands out unique, formula-safe trigger names.
type triggerNames map[string]bool

// nextBacklog returns the name of a connector's backlog trigger.
func (n triggerNames) nextBacklog(connector string) string {
	return n.unique("backlog_" + identifier(connector))
}

// next returns the name of the trigger of connector on topic.
func (n triggerNames) next(connector, topic string) string {
	return n.unique("lag_" + identifier(connector) + "__" + identifier(topic))
}

// unique makes base unique among the names handed out.
func (n triggerNames) unique(base string) string {
	name := base
	for i := 2; n[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	n[name] = true
	return name
}

// identifier replaces every character that cannot be part of an identifier
// in KEDA's expression language with "_".
func identifier(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

// saturatingMul is a × b for non-negative a and b, at most MaxInt64.
func saturatingMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
