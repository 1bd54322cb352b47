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
	"math"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestCompositeFormulaArithmetic evaluates the derived formula with KEDA's
// own compiler (ValidateAndCompileScalingModifiers, which also wraps it in
// float()) on lag figures, and checks the sum-of-capped-sums rule. The
// end-to-end arithmetic against a broker, with KEDA's kafka scaler, is in
// test/kedascale.
func TestCompositeFormulaArithmetic(t *testing.T) {
	const RUNNING, running = v1alpha1.ConnectorStateRunning, v1alpha1.ConnectorTargetRunning
	cc := cluster() // lagThreshold 1000
	kcs := []v1alpha1.KafkaConnector{
		connector("archive", "FileSink", 4, 4, RUNNING, running, map[string]string{"topics": "orders,refunds"}),
		connector("audit", "FileSink", 2, 2, RUNNING, running, map[string]string{"topics": "audit"}),
		connector("mirror", "FileSink", 3, 3, RUNNING, running, map[string]string{"topics": "orders"}),
	}
	so, _ := BuildScaledObject(cc, ConnectorsFrom(kcs), Totals{EffectiveTasks: 9}, target)
	prog, err := kedav1alpha1.ValidateAndCompileScalingModifiers(so.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, tr := range so.Spec.Triggers {
		names[tr.Metadata["consumerGroup"]+"/"+tr.Metadata["topic"]] = tr.Name
	}
	cases := []struct {
		name   string
		lag    map[string]float64 // group/topic → lag
		unread []string           // group/topic of triggers KEDA gives no value (nil)
		absent []string           // group/topic of triggers missing from KEDA's values
		want   float64
	}{
		{"zero lag", map[string]float64{}, nil, nil, 0},
		{"one topic", map[string]float64{"connect-archive/orders": 1500}, nil, nil, 1500},
		{"two topics of one sink add up", map[string]float64{"connect-archive/orders": 1500, "connect-archive/refunds": 1500}, nil, nil, 3000},
		{"a sink is capped at its tasks", map[string]float64{"connect-archive/orders": 3000, "connect-archive/refunds": 3000}, nil, nil, 4000},
		{"sinks add up, each capped", map[string]float64{"connect-archive/orders": 9000, "connect-audit/audit": 500, "connect-mirror/orders": 2500}, nil, nil, 4000 + 500 + 2500},
		{"every sink at its cap", map[string]float64{"connect-archive/orders": 9000, "connect-audit/audit": 9000, "connect-mirror/orders": 9000}, nil, nil, 4000 + 2000 + 3000},
		// KEDA's fallback (behavior scalingModifiers) gives a trigger that keeps failing nil;
		// its operator loop leaves a failing trigger out of the values altogether.
		{"an unreadable trigger counts as no lag", map[string]float64{"connect-archive/orders": 1500, "connect-audit/audit": 500}, []string{"connect-mirror/orders"}, nil, 2000},
		{"a sink that cannot be read at all: the others still scale", map[string]float64{"connect-audit/audit": 9000, "connect-mirror/orders": 2500},
			[]string{"connect-archive/orders"}, []string{"connect-archive/refunds"}, 2000 + 2500},
		{"half a sink unreadable: the rest of it counts", map[string]float64{"connect-archive/refunds": 1200}, []string{"connect-archive/orders"}, nil, 1200},
		{"nothing readable: no lag, the bounds' minimum", nil, []string{"connect-archive/orders", "connect-archive/refunds", "connect-audit/audit"}, []string{"connect-mirror/orders"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]any{}
			for _, n := range names {
				env[n] = 0.0
			}
			for k, v := range c.lag {
				n, ok := names[k]
				if !ok {
					t.Fatalf("no trigger for %s in %v", k, names)
				}
				env[n] = v
			}
			for _, k := range c.unread {
				env[names[k]] = nil
			}
			for _, k := range c.absent {
				delete(env, names[k])
			}
			got, err := expr.Run(prog, env)
			if err != nil {
				t.Fatal(err)
			}
			if got.(float64) != c.want {
				t.Fatalf("formula %q gives %v, want %v", so.Spec.Advanced.ScalingModifiers.Formula, got, c.want)
			}
		})
	}
}

func TestTriggerNamesAreFormulaIdentifiers(t *testing.T) {
	n := triggerNames{}
	got := []string{
		n.next("archive", "orders.v1"),
		n.next("archive", "orders-v1"), // same identifier: gets a suffix
		n.next("a.b", "c"),
		n.next("a-b", "c"),
		n.next("in", "not"), // expr keywords are safe behind the prefix
	}
	want := []string{"lag_archive__orders_v1", "lag_archive__orders_v1_2", "lag_a_b__c", "lag_a_b__c_2", "lag_in__not"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("names %v, want %v", got, want)
		}
	}
	// Each compiles as a bare variable in KEDA's expression language.
	for _, name := range got {
		if _, err := expr.Compile(name, expr.Env(map[string]float64{name: 1})); err != nil {
			t.Fatalf("%q is not an identifier: %v", name, err)
		}
	}
	if _, err := expr.Compile("archive.orders", expr.Env(map[string]float64{"archive.orders": 1})); err == nil {
		t.Fatal("KEDA's compiler accepted a dotted name: the premise of the renaming is gone")
	}
}

func TestTriggersSkipSinksThatCannotScale(t *testing.T) {
	const RUNNING, running = v1alpha1.ConnectorStateRunning, v1alpha1.ConnectorTargetRunning
	kcs := []v1alpha1.KafkaConnector{
		connector("no-tasks", "FileSink", 4, 0, RUNNING, running, map[string]string{"topics": "a"}),
		connector("regex-none", "FileSink", 4, 4, RUNNING, running, map[string]string{"topics.regex": "x.*"}),
		connector("failed", "FileSink", 4, 4, v1alpha1.ConnectorStateFailed, running, map[string]string{"topics": "b"}),
		connector("ok", "FileSink", 4, 4, RUNNING, running, map[string]string{"topics": "c"}),
	}
	triggers, f := Triggers(cluster(), ConnectorsFrom(kcs), target)
	if len(triggers) != 1 || triggers[0].Metadata["topic"] != "c" || f != "min((lag_ok__c ?? 0), 4000)" {
		t.Fatalf("triggers %+v, formula %q", triggers, f)
	}
}

func TestResolveRegexTopicsMatchesWholeNames(t *testing.T) {
	cs := []Connector{
		{Name: "a", Sink: true, Running: true, TopicsRegex: "orders|audit\\..*", Topics: []string{"stale"}},
		{Name: "b", Sink: true, Running: true, Topics: []string{"orders"}},
		{Name: "c", Sink: true, Running: true, TopicsRegex: "(", Topics: []string{"kept"}},
	}
	got := ResolveRegexTopics(cs, []string{"orders", "orders-archive", "audit.x", "audit", "xorders"})
	if strings.Join(got[0].Topics, ",") != "audit.x,orders" {
		t.Fatalf("regex topics %v", got[0].Topics)
	}
	if strings.Join(got[1].Topics, ",") != "orders" || strings.Join(got[2].Topics, ",") != "kept" {
		t.Fatalf("listed or invalid-regex topics changed: %v %v", got[1].Topics, got[2].Topics)
	}
	if cs[0].Topics[0] != "stale" {
		t.Fatal("ResolveRegexTopics changed its input")
	}
	if !NeedsTopicList(cs) || NeedsTopicList(cs[1:2]) {
		t.Fatal("NeedsTopicList")
	}
}

func TestCapSaturates(t *testing.T) {
	cc := cluster()
	cc.Spec.Autoscaling.LagThreshold = ptr.To[int64](math.MaxInt64 / 2)
	_, f := Triggers(cc, []Connector{{Name: "s", Sink: true, Running: true, Topics: []string{"t"}, EffectiveTasks: 4}}, target)
	if !strings.Contains(f, "9223372036854775807") {
		t.Fatalf("formula %q", f)
	}
}

// UnreadableTriggers names, in trigger order, the triggers whose health KEDA
// records as failing; KEDA keys health by metric name, "s<trigger index>-...".
func TestUnreadableTriggersFromKEDAsHealth(t *testing.T) {
	const RUNNING, running = v1alpha1.ConnectorStateRunning, v1alpha1.ConnectorTargetRunning
	kcs := []v1alpha1.KafkaConnector{
		connector("archive", "FileSink", 4, 4, RUNNING, running, map[string]string{"topics": "orders,refunds"}),
		connector("audit", "FileSink", 2, 2, RUNNING, running, map[string]string{"topics": "audit"}),
	}
	so, _ := BuildScaledObject(cluster(), ConnectorsFrom(kcs), Totals{EffectiveTasks: 6}, target)
	if f := so.Spec.Fallback; f == nil || f.Behavior != kedav1alpha1.FallbackBehaviorScalingModifiers || f.FailureThreshold != FallbackFailureThreshold || f.Replicas != *so.Spec.MinReplicaCount {
		t.Fatalf("fallback %+v, want behavior scalingModifiers, threshold %d, replicas %d", f, FallbackFailureThreshold, *so.Spec.MinReplicaCount)
	}
	if got := UnreadableTriggers(so); got != nil {
		t.Fatalf("no health yet: %v", got)
	}
	so.Status.Health = map[string]kedav1alpha1.HealthStatus{
		"s2-kafka-audit":   {NumberOfFailures: ptr.To[int32](1), Status: kedav1alpha1.HealthStatusFailing},
		"s0-kafka-orders":  {NumberOfFailures: ptr.To[int32](0), Status: kedav1alpha1.HealthStatusHappy},
		"s1-kafka-refunds": {NumberOfFailures: ptr.To[int32](7), Status: kedav1alpha1.HealthStatusFailing},
		"s9-kafka-gone":    {NumberOfFailures: ptr.To[int32](2), Status: kedav1alpha1.HealthStatusFailing}, // no such trigger (any more)
		"cpu":              {NumberOfFailures: ptr.To[int32](2), Status: kedav1alpha1.HealthStatusFailing},
	}
	got := UnreadableTriggers(so)
	want := []UnreadableTrigger{
		{Name: "lag_archive__refunds", Connector: "archive", Topic: "refunds", Failures: 7},
		{Name: "lag_audit__audit", Connector: "audit", Topic: "audit", Failures: 1},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("UnreadableTriggers = %v, want %v", got, want)
	}
	c := AutoscalingCondition(ConditionInput{Enabled: true, KEDAServed: true, Triggers: 3, ScaledObjectReady: &metav1.Condition{Status: metav1.ConditionTrue}, Unreadable: got}, 1)
	if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonTriggersUnreadable ||
		!strings.Contains(c.Message, "lag_archive__refunds (connector archive, topic refunds: 7 failed reads)") || !strings.Contains(c.Message, "2 of 3 trigger(s)") {
		t.Fatalf("condition %+v", c)
	}
	// KEDA's Ready is Unknown (PartialTriggerError) until its fallback takes over.
	if c := AutoscalingCondition(ConditionInput{Enabled: true, KEDAServed: true, Triggers: 3, Unreadable: got}, 1); c.Reason != v1alpha1.ReasonTriggersUnreadable {
		t.Fatalf("with KEDA's Ready Unknown: %+v", c)
	}
}
