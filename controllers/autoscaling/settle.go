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

// Settling KEDA's metric names after the triggers change.
//
// KEDA answers the composite metric from its scalers cache, which holds the
// scalers built for one generation of the ScaledObject and a copy of the
// ScaledObject they were built from. For a ScaledObject with
// scalingModifiers, KEDA's metrics server reads only the trigger metrics
// listed in that copy's status.externalMetricNames (KEDA 2.21
// pkg/scaling/scale_handler.go, getTrueMetricArray, called from
// GetScaledObjectMetrics), and refetches the ScaledObject only when that list
// is empty. But KEDA's reconciler builds the cache for a new generation from
// the ScaledObject as it read it, before it writes the new generation's
// metric names into the status (controllers/keda/hpa.go,
// getScaledObjectMetricSpecs: GetScalersCache(scaledObject.DeepCopy()), then
// UpdateScaledObjectStatus with the new names). So after every change of the
// triggers (a sink starts, a topic appears) the new cache lists the previous
// triggers' metric names ("s0-kafka-b1"), while its scalers answer the new
// ones ("s0-kafka-a1", ..., "s2-kafka-b1"). KEDA then answers "no matching
// metrics found for composite-metric" when no name survived, or leaves the
// missing triggers out of the formula (where "?? 0" counts them as no lag)
// when some did; neither is logged as a scaler error.
//
// KEDA usually discards that cache at once: a new generation restarts the
// ScaledObject's scale loop, whose old loop clears the cache on its way out,
// and the next read rebuilds it from the stored ScaledObject. The loop is not
// restarted when the reconcile that saw the older generation already stored
// the newer one: KEDA's status patches write the server's object back into
// the object being reconciled (pkg/status TransformObject), so a ScaledObject
// updated while KEDA reconciles it jumps to the new generation mid-reconcile,
// and the next reconcile finds "no generation change"
// (controllers/keda/scaledobject_controller.go, scaledObjectGenerationChanged).
// The stale cache then stays until the next change of the ScaledObject's
// spec: in the e2e test the workers stayed at 2 for minutes while the HPA read
// FailedGetExternalMetric (the ScaledObject was created with sink-b's
// triggers and got sink-a's a few milliseconds later, during KEDA's first
// reconcile). A rebuild after a cleared cache that reads the ScaledObject
// before the status write reached KEDA's informer ends the same way.
//
// So the operator settles every change of the triggers' metric names with a
// second generation: the ScaledObject that changes them carries the formula
// with a neutral " + 0" appended, and once KEDA's status lists exactly the
// new triggers' metric names, the operator writes the formula without it.
// That generation has the same triggers, so any cache KEDA builds for it is
// built from a ScaledObject whose status already lists the right names, and
// the scale loop's restart clears whatever cache came before. Until then the
// ConnectCluster reconciler looks again every few seconds (the operator does
// not watch ScaledObjects: KEDA's CRDs are optional). Changes that keep the
// metric names (thresholds, task caps, the fallback) need no second step:
// the stale list still names every trigger.

import (
	"fmt"
	"slices"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// settlingSuffix marks the formula of a ScaledObject whose triggers' metric
// names changed and which KEDA has not yet recorded; it adds nothing.
const settlingSuffix = " + 0"

// Settle sets the formula of so, the ScaledObject the builder derived, to
// its settling form when its triggers' metric names differ from those of
// stored, the ScaledObject on the server (nil when there is none), or when
// stored is itself settling and KEDA has not yet recorded the metric names
// in its status; it returns whether so is settling, in which case the caller
// should look again soon. A ScaledObject without a formula needs no
// settling (KEDA's metrics server then reads each metric by its own name).
func Settle(so, stored *kedav1alpha1.ScaledObject) (settling bool) {
	if so == nil || so.Spec.Advanced == nil || so.Spec.Advanced.ScalingModifiers.Formula == "" {
		return false
	}
	mods := &so.Spec.Advanced.ScalingModifiers
	mods.Formula = strings.TrimSuffix(mods.Formula, settlingSuffix)
	if stored == nil {
		// A new ScaledObject: KEDA's cache copy has no metric names yet, and
		// KEDA refetches the ScaledObject until it has them.
		return false
	}
	names := KEDAMetricNames(so.Spec.Triggers)
	switch {
	case !sameSet(names, KEDAMetricNames(stored.Spec.Triggers)):
	case !isSettling(stored):
		return false
	case sameSet(names, stored.Status.ExternalMetricNames):
		return false
	}
	mods.Formula += settlingSuffix
	return true
}

func isSettling(so *kedav1alpha1.ScaledObject) bool {
	return so.Spec.Advanced != nil && strings.HasSuffix(so.Spec.Advanced.ScalingModifiers.Formula, settlingSuffix)
}

// KEDAMetricNames are the external metric names KEDA gives the triggers,
// in trigger order: "s<index>-kafka-<topic>", with the characters KEDA
// normalizes ("/", ".", ":", "%", "(" and ")") as "-" (KEDA 2.21
// pkg/scalers/kafka_scaler.go GetMetricSpecForScaling; test/kedascale checks
// them against KEDA's scalers).
func KEDAMetricNames(triggers []kedav1alpha1.ScaleTriggers) []string {
	out := make([]string, len(triggers))
	for i, t := range triggers {
		name := t.Type + "-" + t.Metadata["topic"]
		if t.Metadata["topic"] == "" {
			name = t.Type + "-" + t.Metadata["consumerGroup"] + "-topics"
		}
		out[i] = fmt.Sprintf("s%d-%s", i, kedaNormalize.Replace(name))
	}
	return out
}

var kedaNormalize = strings.NewReplacer("/", "-", ".", "-", ":", "-", "%", "-", "(", "-", ")", "-")

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
