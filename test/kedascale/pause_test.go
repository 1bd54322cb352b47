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
	"fmt"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// serverSideApply applies the ScaledObject derived for cc as the operator
// does (server-side apply under its field manager, clusterkit.ApplyChild,
// without the owner check: no ConnectCluster is stored here).
func serverSideApply(t *testing.T, ctx context.Context, cc *v1alpha1.ConnectCluster, kcs ...v1alpha1.KafkaConnector) {
	t.Helper()
	so, _, _ := derive(cc, kcs)
	u, err := clusterkit.ApplyForm(so)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(clusterkit.FieldManager), client.ForceOwnership); err != nil {
		t.Fatalf("applying the ScaledObject: %v", err)
	}
}

// TestKEDAPausesOnTheClustersAnnotation: KEDA's own ScaledObject reconciler
// honours the pause annotation the ConnectCluster passes to the derived
// ScaledObject: with autoscaling.keda.sh/paused-replicas: "3" it scales the
// worker Deployment to 3 and reports Paused; once the annotation is gone from
// the ConnectCluster (and so from the ScaledObject), KEDA reports it unpaused.
func TestKEDAPausesOnTheClustersAnnotation(t *testing.T) {
	b := newBroker(t, false)
	ns := namespace(t)
	b.topic(t, "orders", 2, 100)
	archive := sink(ns, "archive", 2, map[string]string{"topics": "orders"})
	b.join(t, archive.SinkGroup(), []string{"orders"}, "")
	cc := b.cluster(ns, 1, 10, 1000)
	cc.Annotations = map[string]string{kedav1alpha1.PausedReplicasAnnotation: "3"}
	key := client.ObjectKey{Namespace: ns, Name: cc.Name + "-connect"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	workerDeployment(t, ctx, key)
	startKEDA(t, ns, nil)

	serverSideApply(t, ctx, cc, archive)
	paused := func(want metav1.ConditionStatus, replicas int32) func() (bool, string) {
		return func() (bool, string) {
			var so kedav1alpha1.ScaledObject
			var dep appsv1.Deployment
			if err := k8s.Get(ctx, key, &so); err != nil {
				return false, err.Error()
			}
			if err := k8s.Get(ctx, key, &dep); err != nil {
				return false, err.Error()
			}
			c := so.Status.Conditions.GetPausedCondition()
			return c.Status == want && (replicas == 0 || *dep.Spec.Replicas == replicas),
				fmt.Sprintf("Paused %s (%s), annotations %v, Deployment replicas %d", c.Status, c.Message, so.Annotations, *dep.Spec.Replicas)
		}
	}
	took := testkit.Eventually(t, 60*time.Second, "KEDA to pause the ScaledObject at 3 workers", paused(metav1.ConditionTrue, 3))
	t.Logf("KEDA paused the derived ScaledObject and scaled the workers to 3 in %s", took.Round(time.Millisecond))

	delete(cc.Annotations, kedav1alpha1.PausedReplicasAnnotation)
	serverSideApply(t, ctx, cc, archive)
	took = testkit.Eventually(t, 60*time.Second, "KEDA to unpause the ScaledObject", paused(metav1.ConditionFalse, 0))
	t.Logf("KEDA unpaused it %s after the annotation left the ConnectCluster", took.Round(time.Millisecond))
}
