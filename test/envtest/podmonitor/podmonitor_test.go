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

// Package podmonitor runs the operator as controllers.Setup wires it on an
// API server first without, then with, a PodMonitor CRD: absent, the
// Monitoring condition says PodMonitorCRDNotInstalled and the cluster
// still reconciles; installed later, the PodMonitor is applied without a
// restart; turned off, it goes. The operator runs with its generated
// ClusterRole. The CRD is a minimal stand-in of
// prometheus-operator's (testdata), as the real one is not in the module
// cache; no Prometheus runs here.
package podmonitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

var (
	k8s       client.Client
	cfg       *rest.Config
	bootstrap string
)

func TestMain(m *testing.M) {
	os.Exit(envkit.Main(m, envkit.Options{KEDATypes: true}, func(e *envkit.Env) error {
		k8s, cfg = e.Client, e.Config
		kafka, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return fmt.Errorf("starting kfake: %w", err)
		}
		e.DeferFunc(kafka.Close)
		bootstrap = kafka.ListenAddrs()[0]
		// The operator runs with the ClusterRole it ships: a podmonitors
		// verb missing from the RBAC markers fails here.
		opCfg, err := e.OperatorConfig("conveyor-operator")
		if err != nil {
			return err
		}
		_, err = e.StartManager(opCfg, ctrl.Options{}, func(mgr ctrl.Manager) error {
			opts := envkit.OperatorOptions()
			// The topic re-check stays at 10 minutes: a CRD installed later
			// must be noticed through the checker waking the cluster.
			opts.KEDACheckInterval = 500 * time.Millisecond
			return controllers.Setup(mgr, opts)
		})
		return err
	}))
}

const podMonitorGV = "monitoring.coreos.com/v1"

func podMonitorCRD() envtest.CRDInstallOptions {
	return envtest.CRDInstallOptions{Paths: []string{filepath.Join("testdata", "monitoring.coreos.com_podmonitors.yaml")}, ErrorIfPathMissing: true}
}

func newCluster(t *testing.T, pm *v1alpha1.PodMonitorSpec) *v1alpha1.ConnectCluster {
	t.Helper()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podmonitor-"}}
	if err := k8s.Create(context.Background(), nsObj); err != nil {
		t.Fatal(err)
	}
	rf := int32(1)
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: nsObj.Name},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka:   v1alpha1.KafkaConnection{BootstrapServers: bootstrap},
			Storage: v1alpha1.StorageSpec{ReplicationFactor: &rf},
			Metrics: v1alpha1.MetricsSpec{PodMonitor: pm},
		},
	}
	if err := k8s.Create(context.Background(), cc); err != nil {
		t.Fatalf("creating the ConnectCluster: %v", err)
	}
	return cc
}

// conditions reads the cluster's Monitoring and Reconciled conditions.
func conditions(cc *v1alpha1.ConnectCluster) (mon, rec *metav1.Condition, seen string) {
	var got v1alpha1.ConnectCluster
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(cc), &got); err != nil {
		return nil, nil, err.Error()
	}
	mon = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConnectClusterMonitoring)
	rec = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConnectClusterReconciled)
	return mon, rec, fmt.Sprintf("Monitoring=%v Reconciled=%v", condString(mon), condString(rec))
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
}

func getPodMonitor(cc *v1alpha1.ConnectCluster) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(connectcluster.PodMonitorGVK)
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: cc.Namespace, Name: connectcluster.PodMonitorName(cc)}, u)
	return u, err
}

func TestPodMonitorCRDAbsentIsAConditionThenPickedUp(t *testing.T) {
	envkit.RemoveCRDs(t, cfg, podMonitorCRD(), podMonitorGV) // installed by an earlier run (-count)
	cc := newCluster(t, &v1alpha1.PodMonitorSpec{Enabled: true})
	notInstalled := func() (bool, string) {
		mon, rec, seen := conditions(cc)
		return mon != nil && mon.Status == metav1.ConditionFalse && mon.Reason == v1alpha1.ReasonPodMonitorCRDNotInstalled &&
			mon.ObservedGeneration == cc.Generation &&
			rec != nil && rec.Status == metav1.ConditionTrue, seen
	}
	took := testkit.Eventually(t, 30*time.Second, "Monitoring=False/PodMonitorCRDNotInstalled with Reconciled=True", notInstalled)
	t.Logf("Monitoring=False/PodMonitorCRDNotInstalled after %s", took.Round(time.Millisecond))
	// No error loop: the missing CRD stays a condition and the cluster stays reconciled.
	testkit.Consistently(t, 2*time.Second, "the condition holds and Reconciled stays True", notInstalled)

	envkit.InstallCRDs(t, cfg, podMonitorCRD())
	took = testkit.Eventually(t, 30*time.Second, "the PodMonitor applied once the CRD is installed, without a restart", func() (bool, string) {
		mon, _, seen := conditions(cc)
		_, err := getPodMonitor(cc)
		return err == nil && mon != nil && mon.Status == metav1.ConditionTrue && mon.Reason == v1alpha1.ReasonPodMonitorReady, fmt.Sprintf("%s; get: %v", seen, err)
	})
	t.Logf("CRD installed later picked up after %s", took.Round(time.Millisecond))
}

func TestPodMonitorScrapesTheWorkersWithTheMetricsTokenAndGoesWhenDisabled(t *testing.T) {
	envkit.InstallCRDs(t, cfg, podMonitorCRD())
	ctx := context.Background()
	cc := newCluster(t, &v1alpha1.PodMonitorSpec{Enabled: true, Interval: "15s", Labels: map[string]string{"release": "prometheus"}})

	var pm *unstructured.Unstructured
	testkit.Eventually(t, 30*time.Second, "PodMonitor orders-connect and Monitoring=True", func() (bool, string) {
		mon, _, seen := conditions(cc)
		var err error
		pm, err = getPodMonitor(cc)
		return err == nil && mon != nil && mon.Status == metav1.ConditionTrue, fmt.Sprintf("%s; get: %v", seen, err)
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cc), cc); err != nil {
		t.Fatal(err)
	}

	// It selects the worker pods: the Deployment's own pod labels.
	var dep appsv1.Deployment
	testkit.EventuallyNoError(t, 30*time.Second, "the worker Deployment", func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: cc.Namespace, Name: connectcluster.DeploymentName(cc)}, &dep)
	})
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 || !reflect.DeepEqual(sel, dep.Spec.Selector.MatchLabels) {
		t.Errorf("spec.selector.matchLabels = %v, want the worker Deployment's selector %v", sel, dep.Spec.Selector.MatchLabels)
	}
	for k, v := range sel {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the worker pods' labels %v", k, v, dep.Spec.Template.Labels)
		}
	}
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(eps) != 1 {
		t.Fatalf("spec.podMetricsEndpoints = %v, want one endpoint", eps)
	}
	ep := eps[0].(map[string]any)
	want := map[string]any{
		"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "15s",
		"authorization": map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "orders-metrics-token", "key": "token"}},
	}
	if !reflect.DeepEqual(ep, want) {
		t.Errorf("spec.podMetricsEndpoints[0] = %v, want %v", ep, want)
	}
	// The port is the worker container's, and the token Secret exists with the key.
	named := false
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		named = named || (p.Name == "metrics" && p.ContainerPort == 9404)
	}
	if !named {
		t.Errorf("the worker container has no port metrics=9404: %v", dep.Spec.Template.Spec.Containers[0].Ports)
	}
	var secret corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: cc.Namespace, Name: "orders-metrics-token"}, &secret); err != nil || len(secret.Data["token"]) == 0 {
		t.Errorf("metrics token Secret orders-metrics-token with key token: %v (keys %d)", err, len(secret.Data))
	}
	if pm.GetLabels()["release"] != "prometheus" || pm.GetLabels()[clusterkit.LabelManagedBy] == "" {
		t.Errorf("labels = %v, want release=prometheus beside the operator's own", pm.GetLabels())
	}
	if owner := metav1.GetControllerOf(pm); owner == nil || owner.UID != cc.UID || owner.Kind != "ConnectCluster" {
		t.Errorf("controller owner = %v, want ConnectCluster %s", owner, cc.UID)
	}
	applied := false
	for _, mf := range pm.GetManagedFields() {
		applied = applied || (mf.Manager == clusterkit.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !applied {
		t.Errorf("managedFields = %v, want a server-side apply by %s", pm.GetManagedFields(), clusterkit.FieldManager)
	}

	// Turned off: the PodMonitor and the condition go.
	patch := client.MergeFrom(cc.DeepCopy())
	cc.Spec.Metrics.PodMonitor.Enabled = false
	if err := k8s.Patch(ctx, cc, patch); err != nil {
		t.Fatal(err)
	}
	took := testkit.Eventually(t, 30*time.Second, "the PodMonitor removed and the Monitoring condition gone", func() (bool, string) {
		mon, _, seen := conditions(cc)
		_, err := getPodMonitor(cc)
		return apierrors.IsNotFound(err) && mon == nil, fmt.Sprintf("%s; get: %v", seen, err)
	})
	t.Logf("PodMonitor removed %s after podMonitor.enabled=false", took.Round(time.Millisecond))
}
