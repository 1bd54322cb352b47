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
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// reconcileGauges reads the reconciles in progress by kind and the start
// times by "kind/namespace/name" from the operator's metrics registry (what
// its metrics endpoint serves).
func reconcileGauges(t *testing.T) (inProgress map[string]float64, starts map[string]float64) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the operator's metrics: %v", err)
	}
	inProgress, starts = map[string]float64{}, map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case statusmetrics.ReconcilesInProgress:
				inProgress[labels["kind"]] = m.GetGauge().GetValue()
			case statusmetrics.ReconcileStart:
				starts[labels["kind"]+"/"+labels["namespace"]+"/"+labels["name"]] = m.GetGauge().GetValue()
			}
		}
	}
	return inProgress, starts
}

// TestHeldReconcileShowsInTheGauges: a KafkaConnector's reconcile is held in
// the middle (the operator's REST call to the worker about it waits). While
// it waits, the operator's metrics count a KafkaConnector reconcile in
// progress and give that connector a start time from when the reconcile
// began; once the call goes through, the connector's series goes and the
// count drops back to 0. Both reconcilers report their kind.
func TestHeldReconcileShowsInTheGauges(t *testing.T) {
	sharedCluster(t)
	topic := testkit.Unique(t, "held")
	createTopic(t, topic, 1)
	name := testkit.Unique(t, "held")
	sink(t, name, 1, topic, nil)
	waitReady(t, name)
	t.Cleanup(func() { deleteConnector(t, name) })
	key := "KafkaConnector/" + namespace + "/" + name

	waiting, release := writes.hold(name)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	poked := float64(time.Now().UnixNano()) / 1e9
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) {
		if kc.Annotations == nil {
			kc.Annotations = map[string]string{}
		}
		kc.Annotations["test.conveyor.dev/poke"] = "held"
	})
	var call string
	select {
	case call = <-waiting:
	case <-time.After(settle):
		t.Fatalf("no REST call about %s within %s of the edit", name, settle)
	}
	inProgress, starts := reconcileGauges(t)
	start, ok := starts[key]
	now := float64(time.Now().UnixNano()) / 1e9
	if !ok || inProgress["KafkaConnector"] < 1 || start < poked || start > now {
		t.Fatalf("while %s waits: in progress %v, starts %v; want %s in [%.3f, %.3f]", call, inProgress, starts, key, poked, now)
	}
	if _, ok := inProgress["ConnectCluster"]; !ok {
		t.Fatalf("no %s series for kind ConnectCluster: %v", statusmetrics.ReconcilesInProgress, inProgress)
	}
	// Held for a while: the start time stays that of the held reconcile.
	testkit.Consistently(t, time.Second, "the held reconcile's start time", func() (bool, string) {
		_, starts := reconcileGauges(t)
		return starts[key] == start, fmt.Sprintf("%v, want %.3f", starts[key], start)
	})
	t.Logf("held at %s: %v in progress, started %.3fs before the check", call, inProgress["KafkaConnector"], now-start)

	release()
	released = true
	took := testkit.Eventually(t, settle, "the reconcile to end and the count to drop to 0", func() (bool, string) {
		inProgress, starts := reconcileGauges(t)
		_, still := starts[key]
		return !still && inProgress["KafkaConnector"] == 0, fmt.Sprintf("in progress %v, starts %v", inProgress, starts)
	})
	t.Logf("back to 0 in %s after the release", took.Round(time.Millisecond))
}
