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
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// cacheCycles and cacheLanes: 100 create/edit/delete cycles, 10 at a time.
const (
	cacheCycles = 100
	cacheLanes  = 10
)

// cacheEntries reads the conveyor_operator_cache_entries gauges from the
// operator's metrics registry: entries by "reconciler/cache".
func cacheEntries(t *testing.T) map[string]int {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the operator's metrics: %v", err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != statusmetrics.CacheEntries {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["reconciler"]+"/"+labels["cache"]] = int(m.GetGauge().GetValue())
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s series: the reconcilers registered no caches", statusmetrics.CacheEntries)
	}
	return out
}

func formatEntries(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// TestCachesForgetDeletedObjects: 100 cycles, each creating a ConnectCluster
// and a KafkaConnector on it, waiting until the connector runs, editing both
// specs (a new generation of each, read by the next passes; the connector is
// paused, so a state action is remembered too), then deleting
// both. Afterwards every cache of both reconcilers holds no more entries
// than before the cycles: what the passes kept about each object (cluster
// views, per-connector marks, applied children, topic checks) went with it.
func TestCachesForgetDeletedObjects(t *testing.T) {
	sharedCluster(t)
	ctx := context.Background()
	topic := testkit.Unique(t, "caches")
	createTopic(t, topic, 1)
	// The baseline holds the entries of what lives on (the shared cluster,
	// other tests' connectors): one cycle first, then the counts must hold
	// still for two resyncs.
	cacheCycle(ctx, t, testkit.Unique(t, "cache-warmup"), topic, func() {})
	var before map[string]int
	last, since := "", time.Time{}
	testkit.Eventually(t, settle+4*connectorResync, "cache entries steady for two resyncs", func() (bool, string) {
		before = cacheEntries(t)
		if seen := formatEntries(before); seen != last {
			last, since = seen, time.Now()
		}
		return time.Since(since) > 2*connectorResync, fmt.Sprintf("%s, steady for %s", last, time.Since(since).Round(time.Millisecond))
	})
	t.Logf("cache entries before: %s", formatEntries(before))
	peak := map[string]int{}
	notePeak := func() {
		for k, v := range cacheEntries(t) {
			peak[k] = max(peak[k], v)
		}
	}

	start := time.Now()
	t.Run("cycles", func(t *testing.T) {
		for lane := range cacheLanes {
			t.Run(fmt.Sprintf("lane%d", lane), func(t *testing.T) {
				t.Parallel()
				midway := func() {}
				if lane == 0 {
					midway = notePeak
				}
				for i := lane; i < cacheCycles; i += cacheLanes {
					cacheCycle(ctx, t, testkit.Unique(t, fmt.Sprintf("cache-%d", i)), topic, midway)
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("%d create/edit/delete cycles in %s", cacheCycles, time.Since(start).Round(time.Millisecond))
	t.Logf("cache entries at the peak seen in the middle of cycles: %s", formatEntries(peak))
	var after map[string]int
	took := testkit.Eventually(t, settle, "every cache back to at most its entries before the cycles", func() (bool, string) {
		after = cacheEntries(t)
		var grown []string
		for k, v := range after {
			if v > before[k] {
				grown = append(grown, fmt.Sprintf("%s %d > %d", k, v, before[k]))
			}
		}
		sort.Strings(grown)
		return len(grown) == 0, "grown: " + strings.Join(grown, ", ")
	})
	t.Logf("cache entries after (%s after the last delete): %s", took.Round(time.Millisecond), formatEntries(after))
}

// cacheCycle creates cluster and connector name, waits until the connector
// is Ready, edits both specs, waits until the connector is Ready at its new
// generation and the cluster's new generation was observed, calls midway,
// and deletes both, waiting until they are gone.
func cacheCycle(ctx context.Context, t *testing.T, name, topic string, midway func()) {
	t.Helper()
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka:   v1alpha1.KafkaConnection{BootstrapServers: bootstrap},
			GroupID: ptr(name + "-group"),
			Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1),
				OffsetPartitions: ptr(storagePartitions), StatusPartitions: ptr(storagePartitions)},
			RestAPI: v1alpha1.RestAPISpec{Authentication: v1alpha1.RestAuthentication{
				TokenSecret: &v1alpha1.SecretKeyRef{Name: "orders-rest", Key: "token"}}},
		},
	}
	if err := k8s.Create(ctx, cc); err != nil {
		t.Fatalf("creating ConnectCluster %s: %v", name, err)
	}
	kc := sinkSpec(t, name, 1, topic, nil)
	kc.Spec.ClusterRef.Name = name
	if err := k8s.Create(ctx, kc); err != nil {
		t.Fatalf("creating KafkaConnector %s: %v", name, err)
	}
	waitReady(t, name)

	// A new generation of each.
	orig := cc.DeepCopy()
	cc.Spec.MaxTasksPerWorker = ptr[int32](9)
	if err := k8s.Patch(ctx, cc, client.MergeFrom(orig)); err != nil {
		t.Fatalf("editing ConnectCluster %s: %v", name, err)
	}
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) {
		kc.Spec.Config["partition.check.interval.ms"] = "600"
		kc.Spec.State = v1alpha1.ConnectorTargetPaused // a state action the reconciler remembers
	})
	waitReady(t, name)
	testkit.Eventually(t, settle, "ConnectCluster "+name+" observed its edit", func() (bool, string) {
		return clusterObserved(ctx, t, name)
	})
	midway()

	for _, o := range []client.Object{kc, cc} {
		if err := k8s.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			t.Fatalf("deleting %T %s: %v", o, name, err)
		}
		testkit.Eventually(t, settle, fmt.Sprintf("%T %s gone", o, name), func() (bool, string) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}

// clusterObserved says the ConnectCluster's status describes its generation.
func clusterObserved(ctx context.Context, t *testing.T, name string) (bool, string) {
	t.Helper()
	got := &v1alpha1.ConnectCluster{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, got); err != nil {
		return false, err.Error()
	}
	return got.Status.ObservedGeneration == got.Generation, fmt.Sprintf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
}
