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
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
)

// inProgress reads, from the operator's metrics registry, the reconciles in
// progress of kind and the start times of its running objects by
// "namespace/name"; ok is false when kind has no ReconcilesInProgress series.
func inProgress(t *testing.T, kind string) (n float64, starts map[string]float64, ok bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	starts = map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] != kind {
				continue
			}
			switch f.GetName() {
			case statusmetrics.ReconcilesInProgress:
				n, ok = m.GetGauge().GetValue(), true
			case statusmetrics.ReconcileStart:
				starts[labels["namespace"]+"/"+labels["name"]] = m.GetGauge().GetValue()
			}
		}
	}
	return n, starts, ok
}

// TestTrackReconcilesShowsAHeldReconcile: while a reconcile is held, its
// kind counts one in progress and the object has a start-time series from
// when it began; when it returns (or panics, as controller-runtime recovers)
// the count is back to 0 and the series is gone.
func TestTrackReconcilesShowsAHeldReconcile(t *testing.T) {
	const kind = "TrackTest"
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	r := statusmetrics.TrackReconciles(kind, reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		entered <- struct{}{}
		if req.Name == "boom" {
			panic("a panicking reconcile")
		}
		<-release
		return reconcile.Result{}, nil
	}))
	if n, starts, ok := inProgress(t, kind); !ok || n != 0 || len(starts) != 0 {
		t.Fatalf("at rest: in progress %v (series %v), starts %v", n, ok, starts)
	}

	before := float64(time.Now().UnixNano()) / 1e9
	done := make(chan error, 1)
	go func() {
		_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "held"}})
		done <- err
	}()
	<-entered
	after := float64(time.Now().UnixNano()) / 1e9
	n, starts, _ := inProgress(t, kind)
	if start := starts["ns/held"]; n != 1 || len(starts) != 1 || start < before || start > after {
		t.Fatalf("held: in progress %v, starts %v, want 1 and ns/held in [%f, %f]", n, starts, before, after)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, starts, _ := inProgress(t, kind); n != 0 || len(starts) != 0 {
		t.Fatalf("after the reconcile returned: in progress %v, starts %v", n, starts)
	}

	func() {
		defer func() { _ = recover() }()
		_, _ = r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "boom"}})
	}()
	<-entered
	if n, starts, _ := inProgress(t, kind); n != 0 || len(starts) != 0 {
		t.Fatalf("after the reconcile panicked: in progress %v, starts %v", n, starts)
	}
}
