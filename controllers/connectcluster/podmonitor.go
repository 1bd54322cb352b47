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
	"context"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// The prometheus-operator PodMonitor, an optional CRD. The operator keeps it
// as unstructured content (no prometheus-operator Go dependency) and needs
// these verbs only: get to check ownership, create and patch for
// server-side apply, delete when podMonitor is turned off.
//
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;create;patch;delete

// PodMonitorGVK is the kind the derived PodMonitor has.
var PodMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// PodMonitorResource is the PodMonitor's resource name that discovery lists.
const PodMonitorResource = "podmonitors"

// CRDServed reports whether an optional CRD is installed, as a periodic
// discovery check last saw it (autoscaling.KEDAChecker is one).
type CRDServed interface {
	Served() bool
}

// PodMonitorName is the derived PodMonitor's name.
func PodMonitorName(cc *v1alpha1.ConnectCluster) string {
	return clusterkit.ChildName(cc.Name, "connect")
}

// BuildPodMonitor builds the PodMonitor that scrapes every worker pod on
// its metrics port, with the metrics token as a bearer token when metrics
// authentication is on.
func BuildPodMonitor(cc *v1alpha1.ConnectCluster) *unstructured.Unstructured {
	labels := map[string]string{}
	if pm := cc.Spec.Metrics.PodMonitor; pm != nil {
		maps.Copy(labels, pm.Labels)
	}
	maps.Copy(labels, clusterkit.CommonLabels(cc))
	endpoint := map[string]any{"port": MetricsPortName, "path": "/metrics", "scheme": "http"}
	if pm := cc.Spec.Metrics.PodMonitor; pm != nil && pm.Interval != "" {
		endpoint["interval"] = pm.Interval
	}
	if cc.MetricsAuthenticationEnabled() {
		ref := cc.MetricsTokenSecret()
		endpoint["authorization"] = map[string]any{
			"type":        "Bearer",
			"credentials": map[string]any{"name": ref.Name, "key": ref.Key},
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"selector":            map[string]any{"matchLabels": toAny(clusterkit.SelectorLabels(cc))},
			"podMetricsEndpoints": []any{endpoint},
		},
	}}
	u.SetGroupVersionKind(PodMonitorGVK)
	u.SetName(PodMonitorName(cc))
	u.SetNamespace(cc.Namespace)
	u.SetLabels(labels)
	u.SetOwnerReferences([]metav1.OwnerReference{OwnerReference(cc)})
	return u
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// reconcilePodMonitor applies or removes the PodMonitor and returns the
// Monitoring condition; nil when podMonitor is off and the condition goes.
// A missing CRD is a condition, never an error: the periodic discovery
// check wakes the cluster once the CRD is installed.
func (r *Reconciler) reconcilePodMonitor(ctx context.Context, cc *v1alpha1.ConnectCluster) (*clusterkit.ConditionValue, error) {
	served := r.opts.PodMonitors != nil && r.opts.PodMonitors.Served()
	enabled := cc.PodMonitorEnabled()
	switch {
	case !served && !enabled:
		return nil, nil
	case !served:
		return &clusterkit.ConditionValue{Reason: v1alpha1.ReasonPodMonitorCRDNotInstalled,
			Message: "metrics.podMonitor.enabled is true but the PodMonitor CRD (monitoring.coreos.com/v1) is not installed; install prometheus-operator's CRDs and the operator applies the PodMonitor without a restart"}, nil
	case !enabled || !cc.MetricsEnabled():
		old := &unstructured.Unstructured{}
		old.SetGroupVersionKind(PodMonitorGVK)
		if err := r.deleteOwned(ctx, cc, old, PodMonitorName(cc)); err != nil {
			return &clusterkit.ConditionValue{Reason: v1alpha1.ReasonPodMonitorFailed, Message: err.Error()}, err
		}
		if !enabled {
			return nil, nil
		}
		return &clusterkit.ConditionValue{Reason: v1alpha1.ReasonMetricsDisabled,
			Message: "metrics.podMonitor.enabled is true but metrics.enabled is false: there is nothing to scrape; turn metrics on or the PodMonitor off"}, nil
	}
	if _, err := clusterkit.ApplyChild(ctx, r.client, r.apiReader, cc, BuildPodMonitor(cc)); err != nil {
		return &clusterkit.ConditionValue{Reason: v1alpha1.ReasonPodMonitorFailed, Message: err.Error()}, err
	}
	return &clusterkit.ConditionValue{Status: true, Reason: v1alpha1.ReasonPodMonitorReady,
		Message: fmt.Sprintf("PodMonitor %s scrapes the workers' %s port", PodMonitorName(cc), MetricsPortName)}, nil
}
