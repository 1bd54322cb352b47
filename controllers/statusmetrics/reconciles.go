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

package statusmetrics

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciles in progress (Strimzi proposal 145, "Alerting for stuck
// reconciliations"): a reconcile that never returns fails nothing and
// records no duration, so only a gauge of what runs now shows it.
//
// ReconcilesInProgress counts, per kind, the reconciles running now; it is 0
// for a kind at rest, so a dashboard shows the reconciler exists.
// ReconcileStart has one series per object whose reconcile runs now, valued
// at the time it started (Unix seconds), and none otherwise: an alert on
// time() - ReconcileStart names the stuck object. Its cardinality is bounded
// by the reconcilers' workers (MaxConcurrentReconciles): controller-runtime
// never reconciles one object in two workers at once, and a series goes when
// its reconcile returns, panics included.
const (
	ReconcilesInProgress = "conveyor_operator_reconciles_in_progress"
	ReconcileStart       = "conveyor_operator_reconcile_start_timestamp_seconds"
)

// reconciles is the collector of ReconcilesInProgress and ReconcileStart.
var reconciles = &reconcileCollector{
	inProgress: prometheus.NewDesc(ReconcilesInProgress,
		"Reconciles running now, by kind of object.",
		[]string{"kind"}, nil),
	start: prometheus.NewDesc(ReconcileStart,
		"Start time (Unix seconds) of the reconcile running now for the object; no series when none runs.",
		[]string{"kind", "namespace", "name"}, nil),
	running: map[string]map[types.NamespacedName]time.Time{},
}

func init() { metrics.Registry.MustRegister(reconciles) }

// TrackReconciles returns r with its reconciles counted under kind (the
// object's Kind, e.g. "ConnectCluster") in ReconcilesInProgress and
// ReconcileStart. Every reconciler the operator registers goes through it.
func TrackReconciles(kind string, r reconcile.Reconciler) reconcile.Reconciler {
	reconciles.register(kind)
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		defer reconciles.begin(kind, req.NamespacedName, time.Now())()
		return r.Reconcile(ctx, req)
	})
}

type reconcileCollector struct {
	inProgress, start *prometheus.Desc
	mu                sync.Mutex
	// running: per kind, the objects being reconciled and since when.
	running map[string]map[types.NamespacedName]time.Time
}

func (c *reconcileCollector) register(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[kind] == nil {
		c.running[kind] = map[types.NamespacedName]time.Time{}
	}
}

// begin records key's reconcile as started at now and returns what ends it.
func (c *reconcileCollector) begin(kind string, key types.NamespacedName, now time.Time) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[kind][key] = now
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.running[kind], key)
	}
}

func (c *reconcileCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inProgress
	ch <- c.start
}

func (c *reconcileCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kinds := make([]string, 0, len(c.running))
	for kind := range c.running {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		running := c.running[kind]
		ch <- prometheus.MustNewConstMetric(c.inProgress, prometheus.GaugeValue, float64(len(running)), kind)
		for key, since := range running {
			ch <- prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, float64(since.UnixNano())/1e9, kind, key.Namespace, key.Name)
		}
	}
}
