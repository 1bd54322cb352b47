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

package kedascale

import (
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// The lag situations, each with the worker count the HPA must ask for. The
// lag threshold is 1000 records per worker throughout; "need" is the
// composite rule of DESIGN.md: per running sink, its lag summed over its
// topics, capped at effectiveTasks × 1000, summed over the sinks, divided by
// 1000 and rounded up, within the bounds min..min(maxReplicas, tasks).
//
// This file uses only the builder API that existed before the composite
// metric (ConnectorsFrom, BuildScaledObject, BuildTriggerAuthentication), so
// it also runs against the earlier builder; "before" records what that
// builder's ScaledObjects gave (one trigger per topic and sink, the HPA
// taking the largest; a regex sink's trigger without a topic).
type lagCase struct {
	name    string
	secure  bool
	minR    int32
	maxR    int32
	setup   func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector
	want    int32
	before  int32
	comment string
}

func lagCases() []lagCase {
	return []lagCase{
		{
			name: "several topics per sink", minR: 1, maxR: 20, want: 6, before: 3,
			comment: "lag 3000 on each of two topics: 6000 in all",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "archive.orders", 4, 1000)
				b.topic(t, "archive.refunds", 4, 1000)
				b.commit(t, "connect-archive", "archive.orders", 4, 250)
				b.commit(t, "connect-archive", "archive.refunds", 4, 250)
				return []v1alpha1.KafkaConnector{sink(ns, "archive", 8, map[string]string{"topics": "archive.orders,archive.refunds"})}
			},
		},
		{
			name: "several sinks", minR: 1, maxR: 20, want: 9, before: 3,
			comment: "three sinks with lag 3000 each",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				var kcs []v1alpha1.KafkaConnector
				for _, n := range []string{"a", "b", "c"} {
					b.topic(t, "t-"+n, 4, 1000)
					b.commit(t, "connect-sink-"+n, "t-"+n, 4, 250)
					kcs = append(kcs, sink(ns, "sink-"+n, 4, map[string]string{"topics": "t-" + n}))
				}
				return kcs
			},
		},
		{
			name: "lag beyond partitions times threshold", minR: 1, maxR: 20, want: 2, before: 2,
			comment: "lag 10000 on 2 partitions: KEDA caps the topic at 2 × 1000, and the sink runs 2 tasks",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "big", 2, 5000)
				b.commit(t, "connect-big", "big", 2, 0)
				return []v1alpha1.KafkaConnector{sink(ns, "big", 2, map[string]string{"topics": "big"})}
			},
		},
		{
			name: "a sink capped at its effective tasks", minR: 1, maxR: 20, want: 5, before: 4,
			comment: "sink capped: two topics of 4 partitions with lag 5000 each, but tasks.max 3; a second sink with 2000",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "x1", 4, 1250)
				b.topic(t, "x2", 4, 1250)
				b.topic(t, "y", 4, 500)
				return []v1alpha1.KafkaConnector{
					sink(ns, "capped", 3, map[string]string{"topics": "x1,x2"}),
					sink(ns, "small", 4, map[string]string{"topics": "y"}),
				}
			},
		},
		{
			name: "a new group with no commits", minR: 1, maxR: 20, want: 3, before: 3,
			comment: "no offsets committed: with offsetResetPolicy earliest every retained record is lag (2500)",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "fresh", 4, 625)
				return []v1alpha1.KafkaConnector{sink(ns, "fresh", 4, map[string]string{"topics": "fresh"})}
			},
		},
		{
			name: "regex topics, new group", minR: 1, maxR: 20, want: 3, before: 4,
			comment: "a topics.regex sink that has committed nothing, on a broker with another, busier topic: only its own topics count (3000)",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "audit.logins", 2, 750)
				b.topic(t, "audit.payments", 2, 750)
				b.topic(t, "unrelated", 4, 5000)
				return []v1alpha1.KafkaConnector{sink(ns, "audit", 4, map[string]string{"topics.regex": `audit\..*`}, "audit.logins", "audit.payments")}
			},
		},
		{
			name: "regex topics, commits on one topic", minR: 1, maxR: 20, want: 3, before: 1,
			comment: "the group committed on one topic only: the other topic's lag counts too (1000 + 1500)",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "audit.logins", 2, 750)
				b.topic(t, "audit.payments", 2, 750)
				b.commit(t, "connect-audit", "audit.logins", 2, 250)
				return []v1alpha1.KafkaConnector{sink(ns, "audit", 4, map[string]string{"topics.regex": `audit\..*`}, "audit.logins", "audit.payments")}
			},
		},
		{
			name: "zero lag", minR: 2, maxR: 20, want: 2, before: 2,
			comment: "everything consumed: the minimum",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "done.a", 2, 100)
				b.topic(t, "done.b", 2, 100)
				b.commit(t, "connect-done", "done.a", 2, 100)
				b.commit(t, "connect-done", "done.b", 2, 100)
				return []v1alpha1.KafkaConnector{sink(ns, "done", 4, map[string]string{"topics": "done.a,done.b"})}
			},
		},
		{
			name: "TLS and SASL", secure: true, minR: 1, maxR: 20, want: 4, before: 2,
			comment: "Kafka with TLS and SASL/SCRAM-SHA-512: KEDA reads through the derived TriggerAuthentication (2000 + 2000)",
			setup: func(t *testing.T, b *broker, ns string) []v1alpha1.KafkaConnector {
				b.topic(t, "secure.a", 2, 1000)
				b.topic(t, "secure.b", 2, 1000)
				return []v1alpha1.KafkaConnector{sink(ns, "secure", 4, map[string]string{"topics": "secure.a,secure.b"})}
			},
		},
	}
}

// TestDesiredReplicasWithKEDAsCode is the table: the builder derives the
// objects, KEDA's own code reads the broker, the HPA's rule gives workers.
func TestDesiredReplicasWithKEDAsCode(t *testing.T) {
	for _, c := range lagCases() {
		t.Run(c.name, func(t *testing.T) {
			b := newBroker(t, c.secure)
			ns := namespace(t)
			kcs := c.setup(t, b, ns)
			for _, kc := range kcs {
				b.join(t, kc.SinkGroup(), plugin.SplitList(kc.Spec.Config["topics"]), kc.Spec.Config["topics.regex"])
			}
			so, ta, _ := derive(b.cluster(ns, c.minR, c.maxR, 1000), kcs)
			if so == nil {
				t.Fatal("no ScaledObject derived")
			}
			ev := evaluate(t, ns, so, ta, b.secrets(ns))
			t.Logf("%s: metrics %v → %d workers (bounds %d..%d; the earlier builder gave %d)", c.comment, ev.metrics, ev.desired, *so.Spec.MinReplicaCount, *so.Spec.MaxReplicaCount, c.before)
			if ev.desired != c.want {
				t.Fatalf("%s: the HPA asks for %d workers, want %d (metrics %v)", c.comment, ev.desired, c.want, ev.metrics)
			}
		})
	}
}

// TestTriggerNamesWorkInAFormula checks, with KEDA's formula compiler, that
// every derived trigger name can be used in a scalingModifiers formula: a
// name like "archive.orders" reads as a field access and is refused.
func TestTriggerNamesWorkInAFormula(t *testing.T) {
	cc := (&broker{addrs: []string{"127.0.0.1:9092"}}).cluster("names", 1, 10, 1000)
	kcs := []v1alpha1.KafkaConnector{
		sink("names", "archive", 4, map[string]string{"topics": "orders,orders-v2,audit.logins"}),
		sink("names", "mirror.eu-west", 2, map[string]string{"topics": "orders"}),
	}
	so, _, _ := derive(cc, kcs)
	if len(so.Spec.Triggers) != 4 {
		t.Fatalf("%d triggers, want 4", len(so.Spec.Triggers))
	}
	if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
		t.Fatal(err)
	}
	for _, tr := range so.Spec.Triggers {
		probe := so.DeepCopy()
		probe.Spec.Advanced = &kedav1alpha1.AdvancedConfig{ScalingModifiers: kedav1alpha1.ScalingModifiers{Formula: tr.Name, Target: "1000"}}
		if _, err := kedav1alpha1.ValidateAndCompileScalingModifiers(probe); err != nil {
			t.Errorf("trigger name %q cannot be used in a formula: %v", tr.Name, err)
		}
	}
}
