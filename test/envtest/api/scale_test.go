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

package apitest

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestScaleSubresource reads and writes spec.replicas through the scale subresource (what
// kubectl scale and an HPA use) and checks that replicas and the selector come from status.
func TestScaleSubresource(t *testing.T) {
	ns := newNamespace(t)
	cc := validCluster(ns, "scaled")
	cc.Spec.Replicas = ptr(int32(2))
	if err := k8sClient.Create(ctx(t), cc); err != nil {
		t.Fatal(err)
	}
	cc.Status = v1.ConnectClusterStatus{
		Replicas:      2,
		ReadyReplicas: 1,
		Selector:      "app.kubernetes.io/name=conveyor-worker,app.kubernetes.io/instance=scaled",
		GroupID:       v1.DefaultGroupID(ns, "scaled"),
		Conditions: []metav1.Condition{{Type: v1.ConnectClusterReady, Status: metav1.ConditionFalse,
			Reason: v1.ReasonWorkersNotReady, Message: "1 of 2 workers ready", LastTransitionTime: metav1.Now()}},
	}
	if err := k8sClient.Status().Update(ctx(t), cc); err != nil {
		t.Fatalf("writing status: %v", err)
	}

	var scale autoscalingv1.Scale
	if err := k8sClient.SubResource("scale").Get(ctx(t), cc, &scale); err != nil {
		t.Fatalf("reading the scale subresource: %v", err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != cc.Status.Selector {
		t.Fatalf("scale = spec %d, status %d, selector %q; want 2, 2, %q", scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, cc.Status.Selector)
	}

	scale.Spec.Replicas = 5
	if err := k8sClient.SubResource("scale").Update(ctx(t), cc, client.WithSubResourceBody(&scale)); err != nil {
		t.Fatalf("writing the scale subresource: %v", err)
	}
	var got v1.ConnectCluster
	if err := k8sClient.Get(ctx(t), key(ns, "scaled"), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 5 {
		t.Errorf("spec.replicas after scaling to 5 = %v", deref(got.Spec.Replicas))
	}
	if got.Status.Replicas != 2 {
		t.Errorf("status.replicas changed to %d by a scale write; the operator owns it", got.Status.Replicas)
	}

	scale.Spec.Replicas = -1
	if err := k8sClient.SubResource("scale").Update(ctx(t), cc, client.WithSubResourceBody(&scale)); err == nil {
		t.Errorf("scaling to -1 replicas was accepted")
	}

	// The status subresource: a status change through the main resource is dropped.
	got.Status.Replicas = 9
	got.Spec.Replicas = ptr(int32(3))
	if err := k8sClient.Update(ctx(t), &got); err != nil {
		t.Fatal(err)
	}
	var again v1.ConnectCluster
	if err := k8sClient.Get(ctx(t), key(ns, "scaled"), &again); err != nil {
		t.Fatal(err)
	}
	if again.Status.Replicas != 2 || *again.Spec.Replicas != 3 {
		t.Errorf("after a main-resource update: status.replicas %d (want 2, unchanged), spec.replicas %d (want 3)", again.Status.Replicas, *again.Spec.Replicas)
	}
}
