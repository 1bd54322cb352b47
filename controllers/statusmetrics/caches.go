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
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// CacheEntries is the metric of what the reconcilers keep in memory between
// passes: entries per reconciler and cache. Each cache forgets an object's
// entries when the object is deleted, so at rest the figures follow the
// number of live objects, never the number ever seen.
const CacheEntries = "conveyor_operator_cache_entries"

// caches is the collector of CacheEntries: it asks each registered
// reconciler for its counts at every scrape.
var caches = &cacheCollector{
	desc: prometheus.NewDesc(CacheEntries,
		"Entries the operator's reconcilers keep in memory between passes, by reconciler and cache.",
		[]string{"reconciler", "cache"}, nil),
	sources: map[string]func() map[string]int{},
}

func init() { metrics.Registry.MustRegister(caches) }

// Caches registers a reconciler's cache counts under its name (a later
// registration under the same name replaces the earlier one).
func Caches(reconciler string, entries func() map[string]int) {
	caches.mu.Lock()
	defer caches.mu.Unlock()
	caches.sources[reconciler] = entries
}

// SyncMapLen counts the entries of a sync.Map cache.
func SyncMapLen(m *sync.Map) int {
	n := 0
	m.Range(func(_, _ any) bool { n++; return true })
	return n
}

type cacheCollector struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	sources map[string]func() map[string]int
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for reconciler, entries := range c.sources {
		for cache, n := range entries() {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), reconciler, cache)
		}
	}
}
