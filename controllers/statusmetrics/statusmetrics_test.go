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

package statusmetrics_test

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
)

// readySeries returns the conveyor_kafkaconnector_ready series of namespace
// ns as "name/cluster/reason" -> value.
func readySeries(t *testing.T, ns string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != statusmetrics.ConnectorReady {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["namespace"] == ns {
				out[l["kafkaconnector"]+"/"+l["connectcluster"]+"/"+l["reason"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestConnectorKeepsOneSeriesPerConnector: a connector has one Ready series
// whatever its reason or cluster went through; another connector's series
// stays; DeleteConnector drops the connector's series only.
func TestConnectorKeepsOneSeriesPerConnector(t *testing.T) {
	const ns = "series-test"
	statusmetrics.Connector(ns, "a", "c1", nil)
	statusmetrics.Connector(ns, "b", "c1", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Running"})
	statusmetrics.Connector(ns, "a", "c1", &metav1.Condition{Status: metav1.ConditionFalse, Reason: "TasksPending"})
	statusmetrics.Connector(ns, "a", "c2", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Running"})
	statusmetrics.Connector(ns, "a", "c2", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Running"})
	want := map[string]float64{"a/c2/Running": 1, "b/c1/Running": 1}
	if got := readySeries(t, ns); !maps.Equal(got, want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	statusmetrics.DeleteConnector(ns, "a")
	statusmetrics.DeleteConnector(ns, "never-seen")
	if got := readySeries(t, ns); !slices.Equal(slices.Collect(maps.Keys(got)), []string{"b/c1/Running"}) {
		t.Fatalf("after deleting a: series %v, want b's only", got)
	}
}
