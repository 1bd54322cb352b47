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
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// kstatusRun numbers the runs of TestKstatus (-count=2 reuses the
// process, so names must not repeat).
var kstatusRun int

// kstatusOf is what Flux and kubectl-style waits see: the object as the API
// server serves it, read through kstatus' Compute.
func kstatusOf(t *testing.T, kind, name string) (*status.Result, *unstructured.Unstructured) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: kind})
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatalf("reading %s %s: %v", kind, name, err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatalf("kstatus.Compute(%s %s): %v", kind, name, err)
	}
	return res, u
}

func conditionsOf(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := ""
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out += fmt.Sprintf(" %v=%v/%v", m["type"], m["status"], m["reason"])
	}
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return fmt.Sprintf("generation=%d observedGeneration=%d%s", u.GetGeneration(), og, out)
}

// TestKstatus: kstatus (sigs.k8s.io/cli-utils, what Flux uses) reads both
// CRDs right on real objects that the operator reconciled: Current when
// Ready, InProgress while they converge by themselves, Failed when the user
// must act; and a new object the operator has not seen is InProgress (the
// API server defaults status.observedGeneration to 0), never Current.
func TestKstatus(t *testing.T) {
	sharedCluster(t)
	t.Cleanup(func() { deleteAllConnectors(t) })
	kstatusRun++
	sfx := fmt.Sprintf("ks%d", kstatusRun)
	ctx := context.Background()
	topic := "kstatus-" + sfx
	createTopic(t, topic, 1)

	cluster := func(name string, mutate func(*v1alpha1.ConnectCluster)) string {
		cc := &v1alpha1.ConnectCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: v1alpha1.ConnectClusterSpec{
				Kafka:   v1alpha1.KafkaConnection{BootstrapServers: bootstrap},
				GroupID: ptr(name + "-group"),
				Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1)},
			},
		}
		if mutate != nil {
			mutate(cc)
		}
		if err := k8s.Create(ctx, cc); err != nil {
			t.Fatalf("creating ConnectCluster %s: %v", name, err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), cc) })
		return name
	}
	readyCC := cluster("ready-"+sfx, nil)
	pendingCC := cluster("pending-"+sfx, nil)
	missingSecretCC := cluster("nosecret-"+sfx, func(cc *v1alpha1.ConnectCluster) {
		cc.Spec.RestAPI.Authentication.TokenSecret = &v1alpha1.SecretKeyRef{Name: "no-such-secret-" + sfx, Key: "token"}
	})
	// What the deployment controller and kubelets would write for readyCC.
	testkit.EventuallyNoError(t, settle, "marking the Deployment of "+readyCC+" ready", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: readyCC + "-connect"}, d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		return k8s.Status().Update(ctx, d)
	})

	running := sink(t, "ks-running-"+sfx, 1, topic, nil).Name
	noPlugin := sinkSpec(t, "ks-noplugin-"+sfx, 1, topic, nil)
	noPlugin.Spec.Class = "com.example.NoSuchConnector"
	if err := k8s.Create(ctx, noPlugin); err != nil {
		t.Fatal(err)
	}
	failedTask := sink(t, "ks-failedtask-"+sfx, 1, topic, map[string]string{"file": outDir}).Name
	noCluster := sinkSpec(t, "ks-nocluster-"+sfx, 1, topic, nil)
	noCluster.Spec.ClusterRef.Name = "no-such-cluster-" + sfx
	if err := k8s.Create(ctx, noCluster); err != nil {
		t.Fatal(err)
	}

	paused := sinkSpec(t, "ks-paused-"+sfx, 1, topic, nil)
	paused.Spec.State = v1alpha1.ConnectorTargetPaused
	if err := k8s.Create(ctx, paused); err != nil {
		t.Fatal(err)
	}

	// want is kstatus' answer, argo what config/argocd/health.lua says.
	rows := []struct {
		kind, name string
		want       status.Status
		argo       string
		why        string
	}{
		{"ConnectCluster", readyCC, status.CurrentStatus, "Healthy", "workers Ready"},
		{"ConnectCluster", pendingCC, status.InProgressStatus, "Progressing", "no worker ready yet (WorkersNotReady)"},
		{"ConnectCluster", missingSecretCC, status.FailedStatus, "Degraded", "restApi token Secret missing (SecretNotFound)"},
		{"KafkaConnector", running, status.CurrentStatus, "Healthy", "connector and task RUNNING"},
		{"KafkaConnector", paused.Name, status.CurrentStatus, "Suspended", "paused as spec.state asks (ConnectorPaused)"},
		{"KafkaConnector", noPlugin.Name, status.FailedStatus, "Degraded", "class names no plugin (PluginNotFound)"},
		{"KafkaConnector", failedTask, status.FailedStatus, "Degraded", "its task FAILED (TasksFailed)"},
		{"KafkaConnector", noCluster.Name, status.InProgressStatus, "Progressing", "clusterRef not there yet (ClusterNotFound)"},
	}
	for _, r := range rows {
		var last *status.Result
		var obj *unstructured.Unstructured
		testkit.Eventually(t, resync+10*time.Second, fmt.Sprintf("kstatus of %s %s to be %s (%s)", r.kind, r.name, r.want, r.why), func() (bool, string) {
			res, u := kstatusOf(t, r.kind, r.name)
			last, obj = res, u
			return res.Status == r.want, fmt.Sprintf("%s %q; %s", res.Status, res.Message, conditionsOf(u))
		})
		argo, msg := argoHealth(t, obj)
		if argo != r.argo {
			t.Errorf("Argo CD health of %s %s: %s %q, want %s (%s; %s)", r.kind, r.name, argo, msg, r.argo, r.why, conditionsOf(obj))
		}
		t.Logf("%-14s %-28s kstatus %-10s argo %-11s %s: %s", r.kind, r.name, last.Status, argo, r.why, last.Message)
	}

	// Objects the operator has not seen yet: a server-side dry run answers
	// exactly what the API server would store, and no reconciler sees it.
	fresh := []client.Object{
		sinkSpec(t, "ks-fresh-"+sfx, 1, topic, nil),
		&v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "fresh-" + sfx, Namespace: namespace},
			Spec: v1alpha1.ConnectClusterSpec{Kafka: v1alpha1.KafkaConnection{BootstrapServers: bootstrap}, GroupID: ptr("fresh-" + sfx)}},
	}
	for _, o := range fresh {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		kind := "KafkaConnector"
		if _, ok := o.(*v1alpha1.ConnectCluster); ok {
			kind = "ConnectCluster"
		}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
		unstructured.RemoveNestedField(u.Object, "status")
		if err := k8s.Create(ctx, u, client.DryRunAll); err != nil {
			t.Fatalf("dry-run create of %s %s: %v", kind, o.GetName(), err)
		}
		res, err := status.Compute(u)
		if err != nil {
			t.Fatal(err)
		}
		argo, msg := argoHealth(t, u)
		if res.Status != status.InProgressStatus || argo != "Progressing" {
			t.Errorf("a new %s %s the operator has not seen: kstatus %s %q, Argo CD %s %q (%s), want InProgress and Progressing", kind, o.GetName(), res.Status, res.Message, argo, msg, conditionsOf(u))
		} else {
			t.Logf("new %-14s %-28s kstatus %-10s argo %-11s %s", kind, o.GetName(), res.Status, argo, res.Message)
		}
	}
}
