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
	"reflect"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/authentication"
	"github.com/kedacore/keda/v2/pkg/scaling"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
)

// TestATriggerChangeLeavesTheCompositeReadable replays, with KEDA's scale
// handler, what the e2e test's failing runs went through (settle.go): the
// ScaledObject is created with sink-b's triggers, and sink-a's come while
// KEDA reconciles it, so KEDA builds the scalers of the new generation from
// the ScaledObject whose status still lists sink-b's metric names, and its
// scale loop is not restarted (its reconcile of the first generation had
// already stored the second). KEDA then answers the composite metric with
// "no matching metrics found for composite-metric" for as long as the
// ScaledObject's spec stays the same: the workers stayed at 2 with 3600 lag
// to scale on. The operator settles the change: once KEDA's status lists the
// new names, it writes the formula without its settling " + 0", and KEDA
// rebuilds its scalers from a ScaledObject whose status is right.
//
// What is not KEDA's code here: the two steps of KEDA's ScaledObject
// reconciler that build the scalers of a new generation and record their
// metric names (kedaReconcile), with the loop restart left out.
func TestATriggerChangeLeavesTheCompositeReadable(t *testing.T) {
	b := newBroker(t, false)
	ns := namespace(t)
	sinkA, sinkB := sinksAB(t, b, ns)
	cc := b.cluster(ns, 2, 10, 1000)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	key := client.ObjectKey{Namespace: ns, Name: cc.Name + "-connect"}
	workerDeployment(t, ctx, key)
	h := scaling.NewScaleHandler(k8s, nil, scheme, 10*time.Second, 10*time.Second, events.NewFakeRecorder(100), &authentication.AuthClientSet{})
	keda := &kedaReconciler{h: h}
	t.Cleanup(func() {
		var so kedav1alpha1.ScaledObject
		if k8s.Get(context.Background(), key, &so) == nil {
			_ = h.DeleteScalableObject(context.Background(), &so)
		}
	})
	read := func() (float64, error) {
		list, err := h.GetScaledObjectMetrics(ctx, key.Name, key.Namespace, kedav1alpha1.CompositeMetricName)
		if err != nil {
			return 0, err
		}
		if len(list.Items) != 1 {
			return 0, fmt.Errorf("%d values: %+v", len(list.Items), list.Items)
		}
		return list.Items[0].Value.AsApproximateFloat64(), nil
	}

	// 1. Created with sink-b's triggers: KEDA reads 1600.
	operatorApply(t, ctx, cc, key, sinkB)
	keda.reconcile(t, ctx, key)
	if v, err := read(); err != nil || v != 1600 {
		t.Fatalf("sink-b alone: composite %v, %v; want 1600", v, err)
	}

	// 2. sink-a runs too: four triggers, none with a metric name of before
	// ("s0-kafka-b1" is now "s2-kafka-b1"). KEDA builds the new generation's
	// scalers from the ScaledObject as it read it, whose status lists sink-b's
	// names, then records the new names.
	operatorApply(t, ctx, cc, key, sinkA, sinkB)
	keda.reconcile(t, ctx, key)
	if _, err := read(); err == nil || !strings.Contains(err.Error(), "no matching metrics found for composite-metric") {
		// If this fails, KEDA no longer lists the previous generation's metric
		// names in a new generation's cache: settle.go can go.
		t.Fatalf("KEDA 2.21 answers the composite after a trigger change (%v); settle.go describes the KEDA behaviour this test reproduces", err)
	}
	stored := keda.stored(t, ctx, key)
	want := autoscaling.KEDAMetricNames(stored.Spec.Triggers)
	if !reflect.DeepEqual(stored.Status.ExternalMetricNames, want) {
		t.Fatalf("KEDA recorded %v, want %v (autoscaling.KEDAMetricNames must name the metrics as KEDA does)", stored.Status.ExternalMetricNames, want)
	}
	_, err := read()
	t.Logf("after the trigger change KEDA answers %q while its status lists %v", err, stored.Status.ExternalMetricNames)

	// 3. The operator's next loop sees the names recorded and settles; KEDA
	// rebuilds its scalers for that generation, and the composite is
	// min(2000 + 2000, 2000) + min(800 + 800, 4000) = 3600: 4 workers.
	operatorApply(t, ctx, cc, key, sinkA, sinkB)
	keda.reconcile(t, ctx, key)
	v, err := read()
	if err != nil || v != 3600 {
		t.Fatalf("after the operator's next loop: composite %v, %v; want 3600 (generation %d, formula %q)", v, err,
			keda.stored(t, ctx, key).Generation, keda.stored(t, ctx, key).Spec.Advanced.ScalingModifiers.Formula)
	}
	if d := hpaDesired(v, 1000, 2); d != 4 {
		t.Fatalf("the HPA asks for %d workers, want 4", d)
	}
	t.Logf("settled: composite %v → 4 workers, formula %q", v, keda.stored(t, ctx, key).Spec.Advanced.ScalingModifiers.Formula)
}

// operatorApply is the operator's loop for the ScaledObject: derive it from
// the running sinks, settle it against the stored one (Converger does the
// same), and write its spec.
func operatorApply(t *testing.T, ctx context.Context, cc *v1alpha1.ConnectCluster, key client.ObjectKey, kcs ...v1alpha1.KafkaConnector) {
	t.Helper()
	if err := applyScaledObject(ctx, cc, key, kcs...); err != nil {
		t.Fatal(err)
	}
}

// applyScaledObject writes the spec with an update, again on a conflict
// with KEDA's own writes (the operator's server-side apply has none).
func applyScaledObject(ctx context.Context, cc *v1alpha1.ConnectCluster, key client.ObjectKey, kcs ...v1alpha1.KafkaConnector) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		so, _, _ := derive(cc, kcs)
		var stored kedav1alpha1.ScaledObject
		switch err := k8s.Get(ctx, key, &stored); {
		case apierrors.IsNotFound(err):
			autoscaling.Settle(so, nil)
			return k8s.Create(ctx, so)
		case err != nil:
			return err
		}
		autoscaling.Settle(so, &stored)
		stored.Spec = so.Spec
		return k8s.Update(ctx, &stored)
	})
}

// workerDeployment is the Deployment a ScaledObject scales.
func workerDeployment(t *testing.T, ctx context.Context, key client.ObjectKey) {
	t.Helper()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "worker"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "worker"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "conveyor"}}},
			},
		},
	}
	if err := k8s.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
}

// sinksAB are the e2e test's two sinks with its lag: sink a 8000 (capped at
// 2 tasks × 1000), sink b 1600; no sink has committed anything. The
// composite is min(2000 + 2000, 2000) + min(800 + 800, 4000) = 3600.
func sinksAB(t *testing.T, b *broker, ns string) (sinkA, sinkB v1alpha1.KafkaConnector) {
	t.Helper()
	b.topic(t, "a1", 2, 2000)
	b.topic(t, "a2", 2, 2000)
	b.topic(t, "b1", 2, 400)
	b.topic(t, "b2", 2, 400)
	sinkA = sink(ns, "sink-a", 2, map[string]string{"topics": "a1,a2"})
	sinkB = sink(ns, "sink-b", 4, map[string]string{"topics": "b1,b2"})
	for _, kc := range []v1alpha1.KafkaConnector{sinkA, sinkB} {
		b.join(t, kc.SinkGroup(), strings.Split(kc.Spec.Config["topics"], ","), "")
	}
	return sinkA, sinkB
}

// kedaReconciler is what KEDA's ScaledObject reconciler does with a new
// generation (controllers/keda/hpa.go, getScaledObjectMetricSpecs): build
// the scalers from a copy of the ScaledObject as read, then record their
// metric names in the status. It leaves out the scale loop's restart, which
// would clear that cache: KEDA skips it when its reconcile of the older
// generation already stored the newer one (settle.go).
type kedaReconciler struct {
	h          scaling.ScaleHandler
	generation int64
}

func (k *kedaReconciler) reconcile(t *testing.T, ctx context.Context, key client.ObjectKey) {
	t.Helper()
	so := k.stored(t, ctx, key)
	if so.Generation == k.generation {
		return // KEDA's GetScalersCache keeps the cache of the same generation
	}
	// Recorded by KEDA's reconciler before it builds the scalers.
	so.Status.ScaleTargetGVKR = &kedav1alpha1.GroupVersionKindResource{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}
	cache, err := k.h.GetScalersCache(ctx, so.DeepCopy())
	if err != nil {
		t.Fatalf("KEDA refuses the ScaledObject: %v", err)
	}
	so.Status.ExternalMetricNames = nil
	for _, s := range cache.GetMetricSpecForScaling(ctx) {
		if s.External != nil {
			so.Status.ExternalMetricNames = append(so.Status.ExternalMetricNames, s.External.Metric.Name)
		}
	}
	if err := k8s.Status().Update(ctx, so); err != nil {
		t.Fatal(err)
	}
	k.generation = so.Generation
}

func (k *kedaReconciler) stored(t *testing.T, ctx context.Context, key client.ObjectKey) *kedav1alpha1.ScaledObject {
	t.Helper()
	var so kedav1alpha1.ScaledObject
	if err := k8s.Get(ctx, key, &so); err != nil {
		t.Fatal(err)
	}
	return &so
}
