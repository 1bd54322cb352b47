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

// Package statusmetrics exports what the operator last wrote to the status
// of each ConnectCluster and KafkaConnector as Prometheus gauges on the
// operator's metrics endpoint, for the alerts the chart ships (a connector
// not Ready for minutes, workers not Ready), and how many entries the
// reconcilers keep in memory (caches.go).
package statusmetrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names.
const (
	ConnectorReady = "conveyor_kafkaconnector_ready"
	ClusterReady   = "conveyor_connectcluster_ready"
	ClusterWorkers = "conveyor_connectcluster_workers"
)

var (
	connectorReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ConnectorReady,
		Help: "1 when the KafkaConnector's Ready condition is True, else 0; reason is the condition's reason."},
		[]string{"namespace", "kafkaconnector", "connectcluster", "reason"})
	clusterReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ClusterReady,
		Help: "1 when the ConnectCluster's Ready condition is True, else 0; reason is the condition's reason."},
		[]string{"namespace", "connectcluster", "reason"})
	clusterWorkers = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ClusterWorkers,
		Help: "Workers of a ConnectCluster: state=desired (what the operator asks for) and state=ready."},
		[]string{"namespace", "connectcluster", "state"})
)

func init() {
	metrics.Registry.MustRegister(connectorReady, clusterReady, clusterWorkers)
}

func readyValue(c *metav1.Condition) (float64, string) {
	switch {
	case c == nil:
		return 0, "Unknown"
	case c.Status == metav1.ConditionTrue:
		return 1, c.Reason
	}
	return 0, c.Reason
}

// series keeps the label values each object's one series of a vector was
// last set with, so that a change (another cluster, another reason) deletes
// exactly the old series, a hash lookup. DeletePartialMatch scans every
// series of the vector: once per reconcile, it made each pass cost in
// proportion to the number of KafkaConnectors (11% of the operator's CPU
// while 1000 were created, docs/benchmarks.md).
type series struct {
	vec  *prometheus.GaugeVec
	mu   sync.Mutex
	last map[string][]string // namespace/name -> label values
}

// set sets the object's series to v with labels, deleting the one it had
// under other labels.
func (s *series) set(key string, v float64, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.last[key]; ok && !slices.Equal(old, labels) {
		s.vec.DeleteLabelValues(old...)
	}
	if s.last == nil {
		s.last = map[string][]string{}
	}
	s.last[key] = labels
	s.vec.WithLabelValues(labels...).Set(v)
}

// delete drops the object's series.
func (s *series) delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.last[key]; ok {
		s.vec.DeleteLabelValues(old...)
		delete(s.last, key)
	}
}

var connectorSeries = &series{vec: connectorReady}

// Connector records a KafkaConnector's Ready condition (nil: not reported yet).
func Connector(namespace, name, cluster string, ready *metav1.Condition) {
	v, reason := readyValue(ready)
	connectorSeries.set(namespace+"/"+name, v, namespace, name, cluster, reason)
}

// DeleteConnector drops a KafkaConnector's series.
func DeleteConnector(namespace, name string) {
	connectorSeries.delete(namespace + "/" + name)
}

// Cluster records a ConnectCluster's Ready condition and worker counts.
func Cluster(namespace, name string, ready *metav1.Condition, desired, readyWorkers int32) {
	v, reason := readyValue(ready)
	clusterReady.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "connectcluster": name})
	clusterReady.WithLabelValues(namespace, name, reason).Set(v)
	clusterWorkers.WithLabelValues(namespace, name, "desired").Set(float64(desired))
	clusterWorkers.WithLabelValues(namespace, name, "ready").Set(float64(readyWorkers))
}

// DeleteCluster drops a ConnectCluster's series.
func DeleteCluster(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "connectcluster": name}
	clusterReady.DeletePartialMatch(l)
	clusterWorkers.DeletePartialMatch(l)
}
