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

package connectcluster

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

func TestBuildPodMonitorAuthorizationFollowsMetricsAuthentication(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name string
		auth v1alpha1.MetricsAuthentication
		want any // spec.podMetricsEndpoints[0].authorization; nil: none
	}{
		{"generated token", v1alpha1.MetricsAuthentication{},
			map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "orders-metrics-token", "key": "token"}}},
		{"user's token Secret", v1alpha1.MetricsAuthentication{TokenSecret: &v1alpha1.SecretKeyRef{Name: "scrape", Key: "bearer"}},
			map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "scrape", "key": "bearer"}}},
		{"authentication off", v1alpha1.MetricsAuthentication{Enabled: &off}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "ns", UID: "u1"},
				Spec: v1alpha1.ConnectClusterSpec{Metrics: v1alpha1.MetricsSpec{Authentication: tc.auth,
					// A user label may not replace the operator's own.
					PodMonitor: &v1alpha1.PodMonitorSpec{Enabled: true, Labels: map[string]string{clusterkit.LabelManagedBy: "me", "release": "prom"}}}}}
			pm := BuildPodMonitor(cc)
			eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
			if len(eps) != 1 {
				t.Fatalf("podMetricsEndpoints = %v", eps)
			}
			ep := eps[0].(map[string]any)
			if got := ep["authorization"]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("authorization = %v, want %v", got, tc.want)
			}
			if _, has := ep["interval"]; has {
				t.Errorf("interval set without podMonitor.interval: %v", ep)
			}
			if l := pm.GetLabels(); l[clusterkit.LabelManagedBy] != clusterkit.ManagedBy || l["release"] != "prom" {
				t.Errorf("labels = %v, want %s=%s and release=prom", l, clusterkit.LabelManagedBy, clusterkit.ManagedBy)
			}
			if pm.GroupVersionKind() != PodMonitorGVK || pm.GetName() != "orders-connect" || pm.GetNamespace() != "ns" {
				t.Errorf("object = %v %s/%s", pm.GroupVersionKind(), pm.GetNamespace(), pm.GetName())
			}
		})
	}
}
