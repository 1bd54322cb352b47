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

package autoscalingtest

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

// kedaAnnotations are the annotations under autoscaling.keda.sh/ of o.
func kedaAnnotations(o client.Object) map[string]string {
	out := map[string]string{}
	for k, v := range o.GetAnnotations() {
		if strings.HasPrefix(k, "autoscaling.keda.sh/") {
			out[k] = v
		}
	}
	return out
}

// TestPauseAnnotationsFollowTheCluster: KEDA's pause annotations set on the
// ConnectCluster reach the stored ScaledObject with their values, the
// Autoscaling condition lists them, a key KEDA does not read is named and not
// passed, and removing them from the ConnectCluster removes them from the
// ScaledObject, while an annotation written on the ScaledObject by someone
// else stays.
func TestPauseAnnotationsFollowTheCluster(t *testing.T) {
	envkit.InstallKEDA(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := cachedClient(ctx, t)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pause-"}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns.Name, Annotations: map[string]string{
			kedav1alpha1.PausedReplicasAnnotation: "3",
			kedav1alpha1.PausedScaleInAnnotation:  "true",
			"autoscaling.keda.sh/pause":           "true", // a typo: not KEDA's
			"example.com/owner":                   "team-orders",
		}},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka:             v1alpha1.KafkaConnection{BootstrapServers: "broker-0.kafka.svc:9092"},
			MaxTasksPerWorker: ptr.To[int32](2),
			Autoscaling:       &v1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](3)},
		},
	}
	if err := k8sClient.Create(ctx, cc); err != nil {
		t.Fatal(err)
	}
	runningSink(ctx, t, cl, ns.Name, "archive", 2, 2)

	conv := &autoscaling.Converger{Client: cl, APIReader: k8sClient, KEDA: servedFlag(true)}
	so := &kedav1alpha1.ScaledObject{}
	key := types.NamespacedName{Namespace: ns.Name, Name: "orders-connect"}
	pass := func() clusterkit.AutoscalingResult {
		t.Helper()
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cc), cc); err != nil {
			t.Fatal(err)
		}
		res, err := conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 1, Tasks: 2}, "orders-connect")
		if err != nil {
			t.Fatal(err)
		}
		if err := k8sClient.Get(ctx, key, so); err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := pass()
	want := map[string]string{kedav1alpha1.PausedReplicasAnnotation: "3", kedav1alpha1.PausedScaleInAnnotation: "true"}
	if got := kedaAnnotations(so); !maps.Equal(got, want) || so.Annotations["example.com/owner"] != "" {
		t.Fatalf("ScaledObject annotations %v, want exactly KEDA's %v", so.Annotations, want)
	}
	msg := res.Autoscaling.Message
	for _, part := range []string{`autoscaling.keda.sh/paused-replicas="3"`, `autoscaling.keda.sh/paused-scale-in="true"`, "autoscaling.keda.sh/pause not passed"} {
		if !strings.Contains(msg, part) {
			t.Fatalf("Autoscaling message %q does not say %q", msg, part)
		}
	}
	t.Logf("Autoscaling: %s", msg)

	// Someone annotates the ScaledObject itself: not the operator's to remove.
	so.Annotations[kedav1alpha1.PausedScaleOutAnnotation] = "true"
	if err := k8sClient.Update(ctx, so); err != nil {
		t.Fatal(err)
	}
	// The user changes one and removes the other on the ConnectCluster.
	patch := client.MergeFrom(cc.DeepCopy())
	cc.Annotations[kedav1alpha1.PausedReplicasAnnotation] = "5"
	delete(cc.Annotations, kedav1alpha1.PausedScaleInAnnotation)
	if err := k8sClient.Patch(ctx, cc, patch); err != nil {
		t.Fatal(err)
	}
	pass()
	want = map[string]string{kedav1alpha1.PausedReplicasAnnotation: "5", kedav1alpha1.PausedScaleOutAnnotation: "true"}
	if got := kedaAnnotations(so); !maps.Equal(got, want) {
		t.Fatalf("after the edit: ScaledObject's KEDA annotations %v, want %v", got, want)
	}

	// Resume: every annotation the ConnectCluster passed is gone.
	patch = client.MergeFrom(cc.DeepCopy())
	delete(cc.Annotations, kedav1alpha1.PausedReplicasAnnotation)
	if err := k8sClient.Patch(ctx, cc, patch); err != nil {
		t.Fatal(err)
	}
	res = pass()
	want = map[string]string{kedav1alpha1.PausedScaleOutAnnotation: "true"}
	if got := kedaAnnotations(so); !maps.Equal(got, want) {
		t.Fatalf("after the resume: ScaledObject's KEDA annotations %v, want only the one written on it %v", got, want)
	}
	if strings.Contains(res.Autoscaling.Message, "KEDA annotations passed") {
		t.Fatalf("after the resume the Autoscaling message still lists annotations: %q", res.Autoscaling.Message)
	}
}
