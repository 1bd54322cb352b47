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

import (
	"reflect"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestSettleMetricNameChanges walks a ScaledObject through the changes
// settle.go describes: a change of the triggers' metric names writes the
// settling formula until KEDA's status lists the new names, then the plain
// one; changes that keep the names, and new ScaledObjects, need no settling.
func TestSettleMetricNameChanges(t *testing.T) {
	const RUNNING, running = v1alpha1.ConnectorStateRunning, v1alpha1.ConnectorTargetRunning
	cc := cluster()
	sinkB := connector("sink-b", "FileSink", 4, 4, RUNNING, running, map[string]string{"topics": "b1,b2"})
	sinkA := connector("sink-a", "FileSink", 2, 2, RUNNING, running, map[string]string{"topics": "a1,a2"})
	build := func(cc *v1alpha1.ConnectCluster, kcs ...v1alpha1.KafkaConnector) *kedav1alpha1.ScaledObject {
		so, _ := BuildScaledObject(cc, ConnectorsFrom(kcs), Totals{EffectiveTasks: 6}, target)
		return so
	}
	// stored is what the server holds after an apply of so, with the metric
	// names KEDA recorded (nil: not yet).
	stored := func(so *kedav1alpha1.ScaledObject, kedaNames []string) *kedav1alpha1.ScaledObject {
		s := so.DeepCopy()
		s.Status.ExternalMetricNames = kedaNames
		return s
	}
	plain := build(cc, sinkA, sinkB).Spec.Advanced.ScalingModifiers.Formula

	// Created with sink-b's triggers: nothing to settle.
	first := build(cc, sinkB)
	if Settle(first, nil) || first.Spec.Advanced.ScalingModifiers.Formula != build(cc, sinkB).Spec.Advanced.ScalingModifiers.Formula {
		t.Fatalf("a new ScaledObject settles: %q", first.Spec.Advanced.ScalingModifiers.Formula)
	}
	bNames := []string{"s0-kafka-b1", "s1-kafka-b2"}
	if got := KEDAMetricNames(first.Spec.Triggers); !reflect.DeepEqual(got, bNames) {
		t.Fatalf("metric names %v, want %v", got, bNames)
	}

	// sink-a starts: every metric name changes ("s0-kafka-b1" becomes
	// "s2-kafka-b1"), so the ScaledObject settles.
	second := build(cc, sinkA, sinkB)
	if !Settle(second, stored(first, bNames)) || second.Spec.Advanced.ScalingModifiers.Formula != plain+" + 0" {
		t.Fatalf("a change of metric names does not settle: %q", second.Spec.Advanced.ScalingModifiers.Formula)
	}
	abNames := []string{"s0-kafka-a1", "s1-kafka-a2", "s2-kafka-b1", "s3-kafka-b2"}
	// KEDA still lists the old names, or none: still settling, and a task cap
	// changing meanwhile keeps the settling form.
	for _, names := range [][]string{bNames, nil, abNames[:3]} {
		again := build(cc, sinkA, sinkB)
		if !Settle(again, stored(second, names)) || again.Spec.Advanced.ScalingModifiers.Formula != plain+" + 0" {
			t.Fatalf("settled while KEDA lists %v: %q", names, again.Spec.Advanced.ScalingModifiers.Formula)
		}
	}
	// KEDA recorded the new names: the plain formula, a new generation with
	// the same triggers.
	third := build(cc, sinkA, sinkB)
	if Settle(third, stored(second, []string{"s3-kafka-b2", "s0-kafka-a1", "s2-kafka-b1", "s1-kafka-a2"})) || third.Spec.Advanced.ScalingModifiers.Formula != plain {
		t.Fatalf("not settled after KEDA recorded the names: %q", third.Spec.Advanced.ScalingModifiers.Formula)
	}
	if !reflect.DeepEqual(third.Spec.Triggers, second.Spec.Triggers) {
		t.Fatal("settling changed the triggers")
	}
	// And stays so.
	fourth := build(cc, sinkA, sinkB)
	if Settle(fourth, stored(third, abNames)) || fourth.Spec.Advanced.ScalingModifiers.Formula != plain {
		t.Fatalf("a settled ScaledObject settles again: %q", fourth.Spec.Advanced.ScalingModifiers.Formula)
	}

	// A new lag threshold keeps the names: no settling, even before KEDA
	// recorded anything.
	cc2 := cluster()
	cc2.Spec.Autoscaling.LagThreshold = ptr.To[int64](500)
	fifth := build(cc2, sinkA, sinkB)
	if Settle(fifth, stored(third, nil)) || fifth.Spec.Advanced.ScalingModifiers.Formula != build(cc2, sinkA, sinkB).Spec.Advanced.ScalingModifiers.Formula {
		t.Fatalf("a change that keeps the metric names settles: %q", fifth.Spec.Advanced.ScalingModifiers.Formula)
	}

	// Without scalingModifiers there is no formula to settle.
	noMods, _ := BuildScaledObjectFor(cc, ConnectorsFrom([]v1alpha1.KafkaConnector{sinkA, sinkB}), Totals{EffectiveTasks: 6}, target, Features{})
	if Settle(noMods, stored(first, bNames)) || noMods.Spec.Advanced.ScalingModifiers.Formula != "" {
		t.Fatalf("settling without scalingModifiers: %+v", noMods.Spec.Advanced)
	}
}

// TestKEDAMetricNamesNormalize: KEDA writes "-" for the characters it
// normalizes in a topic name; test/kedascale compares with KEDA's scalers.
func TestKEDAMetricNamesNormalize(t *testing.T) {
	tr := []kedav1alpha1.ScaleTriggers{
		{Type: "kafka", Metadata: map[string]string{"topic": "audit.logins"}},
		{Type: "kafka", Metadata: map[string]string{"topic": "a/b:c%d(e)_f-g"}},
	}
	if got, want := KEDAMetricNames(tr), []string{"s0-kafka-audit-logins", "s1-kafka-a-b-c-d-e-_f-g"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestSettleRecheck: a settling ScaledObject is looked at again every second
// at first, then less often, at most every 30s; not at all once settled.
func TestSettleRecheck(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	c := &Converger{Clock: clk}
	steps := []struct {
		after    time.Duration
		settling bool
		want     time.Duration
	}{
		{0, true, time.Second},
		{2 * time.Second, true, time.Second},
		{18 * time.Second, true, 5 * time.Second},
		{10 * time.Minute, true, 30 * time.Second},
		{0, false, 0},
		{0, true, time.Second}, // a new change starts over
	}
	for i, s := range steps {
		clk.SetTime(clk.Now().Add(s.after))
		if got := c.settleRecheck(types.NamespacedName{Namespace: "ns", Name: "c"}, s.settling); got != s.want {
			t.Fatalf("step %d: recheck after %v, want %v", i, got, s.want)
		}
	}
}
