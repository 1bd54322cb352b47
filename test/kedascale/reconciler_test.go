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
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	kedacontrollers "github.com/kedacore/keda/v2/controllers/keda"
	"github.com/kedacore/keda/v2/pkg/eventemitter"
	kedak8s "github.com/kedacore/keda/v2/pkg/k8s"
	"github.com/kedacore/keda/v2/pkg/scalers/authentication"
	"github.com/kedacore/keda/v2/pkg/scaling"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestKEDAsReconcilerAfterATriggerChangeMidReconcile runs KEDA's own
// ScaledObject reconciler and scale handler, wired as KEDA's operator wires
// them (a manager whose client reads through its informers), and replays the
// e2e test's failing runs: the ScaledObject is created with sink-b's
// triggers, and the operator adds sink-a's while KEDA's first reconcile is
// between building the scalers and recording their metric names (the test
// makes that interleaving certain by applying the operator's change from
// inside KEDA's status write). KEDA's status patch then hands the reconcile
// the new generation, KEDA starts no new scale loop for it, and its scalers
// cache lists sink-b's metric names while its scalers answer others: the
// composite is "no matching metrics found" until the ScaledObject's spec
// changes again. The operator's next loops must make it readable: 3600, 4
// workers, within the time KEDA needs to notice a new generation.
//
// Without the operator's settling the outcome depends on timing: KEDA
// answered "no matching metrics found for composite-metric" until the
// deadline in 3 of 6 runs, as in the e2e failures, and in the others for 3
// to 31 reads, until its scale loop happened to rebuild the cache
// from a ScaledObject read before any metric names were recorded (KEDA then
// refetches the names on every read). Its log is the e2e failure's: one
// "Initializing Scaling logic", then two reconciles that update the HPA and
// start no scale loop.
func TestKEDAsReconcilerAfterATriggerChangeMidReconcile(t *testing.T) {
	b := newBroker(t, false)
	ns := namespace(t)
	sinkA, sinkB := sinksAB(t, b, ns)
	cc := b.cluster(ns, 2, 10, 1000)
	key := client.ObjectKey{Namespace: ns, Name: cc.Name + "-connect"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	workerDeployment(t, ctx, key)

	var changed atomic.Bool
	changeErr := make(chan error, 1)
	h := startKEDA(t, ns, func(c client.Client) client.Client {
		return interceptor.NewClient(withoutWatch{c}, interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				// KEDA records the first generation's metric names: the operator's change
				// lands just before.
				if so, ok := obj.(*kedav1alpha1.ScaledObject); ok && sub == "status" && len(so.Status.ExternalMetricNames) > 0 && changed.CompareAndSwap(false, true) {
					changeErr <- applyScaledObject(ctx, cc, key, sinkA, sinkB)
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		})
	})

	operatorApply(t, ctx, cc, key, sinkB)
	select {
	case err := <-changeErr:
		if err != nil {
			t.Fatalf("the operator's change during KEDA's reconcile: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("KEDA never recorded the first generation's metric names")
	}

	// The operator's loop keeps running, as the ConnectCluster reconciler does
	// (every second while a ScaledObject settles); the HPA reads every 2s in the
	// e2e test.
	failed := map[string]int{}
	testkit.EventuallyNoError(t, 45*time.Second, "KEDA to answer the composite after the trigger change", func() error {
		if err := applyScaledObject(ctx, cc, key, sinkA, sinkB); err != nil {
			return err
		}
		list, err := h.GetScaledObjectMetrics(ctx, key.Name, key.Namespace, kedav1alpha1.CompositeMetricName)
		if err != nil {
			failed[err.Error()]++
			return fmt.Errorf("%w (generation %d)", err, generation(ctx, key))
		}
		if v := list.Items[0].Value.AsApproximateFloat64(); v != 3600 {
			return fmt.Errorf("composite %v, want 3600", v)
		}
		return nil
	})
	t.Logf("KEDA answers 3600 (4 workers) at generation %d; before, it answered %v", generation(ctx, key), failed)
}

// startKEDA runs KEDA's own ScaledObject reconciler and scale handler on
// namespace ns, wired as KEDA's operator wires them (a manager whose client
// reads through its informers), until the test ends; kedaClient, when set,
// wraps the client KEDA's reconciler writes with. It returns the scale
// handler, which answers the metrics as KEDA's metrics server does.
func startKEDA(t *testing.T, ns string, kedaClient func(client.Client) client.Client) scaling.ScaleHandler {
	t.Helper()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	scaleClient, _, err := kedak8s.InitScaleClient(mgr)
	if err != nil {
		t.Fatal(err)
	}
	recorder := mgr.GetEventRecorder("keda-operator")
	auth := &authentication.AuthClientSet{}
	h := scaling.NewScaleHandler(mgr.GetClient(), scaleClient, mgr.GetScheme(), 10*time.Second, 10*time.Second, recorder, auth)
	cl := mgr.GetClient()
	if kedaClient != nil {
		cl = kedaClient(cl)
	}
	r := &kedacontrollers.ScaledObjectReconciler{
		Client: cl, Scheme: mgr.GetScheme(), ScaleClient: scaleClient, ScaleHandler: h,
		EventEmitter: eventemitter.NewEventEmitter(mgr.GetClient(), recorder, "kedascale", auth),
	}
	if err := r.SetupWithManager(mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("KEDA's manager: %v", err)
		}
	})
	return h
}

func generation(ctx context.Context, key client.ObjectKey) int64 {
	var so kedav1alpha1.ScaledObject
	if err := k8s.Get(ctx, key, &so); err != nil {
		return -1
	}
	return so.Generation
}

// withoutWatch lets the interceptor wrap the manager's client, which KEDA's
// reconciler uses without Watch.
type withoutWatch struct{ client.Client }

func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("kedascale: Watch is not used by KEDA's reconciler")
}
