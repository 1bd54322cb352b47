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
// The cost: each trigger in a formula is a point of failure. When one trigger
// fails (a topic deleted, a partition without a leader), KEDA answers the
// composite metric with an error and the HPA keeps the current worker count
// until every trigger reads again (KEDA emits KEDAMetricSourceFailed events).
// Holding is the safe side of failing; the operator re-derives the triggers
// from the connectors' topics at every reconcile, so a deleted topic drops
// out of the formula.
//
// Trigger names are identifiers the formula can use: KEDA's formula compiler
// reads "archive.orders" as a field access and refuses it, so names are
// "lag_" plus the connector and topic with every other character replaced
// by "_", made unique with a numeric suffix.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sinkTerm is one running sink's part of the formula.
type sinkTerm struct {
	// triggers are the names of the sink's triggers, one per topic.
	triggers []string
	// capLag is effectiveTasks × lagThreshold.
	capLag int64
}

// formula is the composite over the terms, in KEDA's expression language:
// "min(a + b, 6000) + min(c, 2000)". Empty without terms.
func formula(terms []sinkTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		if len(t.triggers) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("min(%s, %s)", strings.Join(t.triggers, " + "), strconv.FormatInt(t.capLag, 10)))
	}
	return strings.Join(parts, " + ")
}

// triggerNames hands out unique, formula-safe trigger names.
type triggerNames map[string]bool

// next returns the name of the trigger of connector on topic.
func (n triggerNames) next(connector, topic string) string {
	base := "lag_" + identifier(connector) + "__" + identifier(topic)
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
