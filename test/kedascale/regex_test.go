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
	"context"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
)

// TestRegexSinkFollowsTheBrokersTopics resolves a topics.regex sink's topics
// from the broker's topic list, as the operator does at each reconcile (its
// workers have reported none yet), and follows a topic created later.
func TestRegexSinkFollowsTheBrokersTopics(t *testing.T) {
	b := newBroker(t, false)
	b.topic(t, "audit.logins", 2, 500)
	b.topic(t, "orders", 4, 5000) // not the sink's: never counted
	b.join(t, "connect-audit", nil, `audit\..*`)
	kcs := func(ns string) []v1alpha1.KafkaConnector {
		return []v1alpha1.KafkaConnector{sink(ns, "audit", 6, map[string]string{"topics.regex": `audit\..*`})}
	}
	eval := func() evaluation {
		t.Helper()
		ns := namespace(t)
		cc := b.cluster(ns, 1, 20, 1000)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		listed, err := b.adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns := autoscaling.ResolveRegexTopics(autoscaling.ConnectorsFrom(kcs(ns)), listed.Names())
		tgt := autoscaling.Target{DeploymentName: cc.Name + "-connect"}
		so, _ := autoscaling.BuildScaledObject(cc, conns, autoscaling.Totals{EffectiveTasks: 6}, tgt)
		if so == nil {
			t.Fatal("no ScaledObject")
		}
		for _, tr := range so.Spec.Triggers {
			if tr.Metadata["topic"] == "orders" || tr.Metadata["topic"] == "" {
				t.Fatalf("trigger %s reads topic %q", tr.Name, tr.Metadata["topic"])
			}
		}
		return evaluate(t, ns, so, nil, nil)
	}
	if ev := eval(); ev.desired != 1 {
		t.Fatalf("one topic with lag 1000: %d workers (metrics %v), want 1", ev.desired, ev.metrics)
	}
	b.topic(t, "audit.payments", 4, 750) // lag 3000 more
	if ev := eval(); ev.desired != 4 {
		t.Fatalf("after audit.payments appeared: %d workers (metrics %v), want 4", ev.desired, ev.metrics)
	}
}
