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

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/test/localcluster"
)

// monitoringNS is where Prometheus would run: the scale cluster's
// networkPolicy.metricsNamespaceSelector admits it to the metrics port.
const monitoringNS = "monitoring"

// admits reports whether one of the policy's ingress rules lets a pod in
// namespace ns (with those labels) reach port.
func admits(np *networkingv1.NetworkPolicy, ns *corev1.Namespace, port int32) (bool, error) {
	for _, r := range np.Spec.Ingress {
		if !slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.IntVal == port }) {
			continue
		}
		for _, peer := range r.From {
			if peer.NamespaceSelector == nil || peer.PodSelector != nil {
				continue // same-namespace pods or a pod subset: not a scraper elsewhere
			}
			sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
			if err != nil {
				return false, err
			}
			if sel.Matches(labels.Set(ns.Labels)) {
				return true, nil
			}
		}
	}
	return false, nil
}

// metricsPathAllowed: the workers' NetworkPolicy, as the operator wrote it
// to the API server, admits a scraper in the monitoring namespace (its
// kubernetes.io/metadata.name label is set by the API server) to the
// metrics port and not to the REST port. The local cluster has no network
// plugin that enforces policies, so the test reads the policy's rules and
// then scrapes from outside the pods, from the test process, as Prometheus
// in that namespace would.
func metricsPathAllowed(t *testing.T, cc *v1alpha1.ConnectCluster) {
	t.Helper()
	ctx := t.Context()
	ns, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: monitoringNS}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		ns, err = cluster.Client.CoreV1().Namespaces().Get(ctx, monitoringNS, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("the monitoring namespace: %v", err)
	}
	var np *networkingv1.NetworkPolicy
	waitFor(t, time.Minute, "the workers' NetworkPolicy with a metrics rule", func() (bool, error) {
		np, err = cluster.Client.NetworkingV1().NetworkPolicies(cc.Namespace).Get(ctx, connectcluster.NetworkPolicyName(cc), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ok, err := admits(np, ns, cc.MetricsPort())
		return ok, err
	})
	if ok, err := admits(np, ns, v1alpha1.RestPort); err != nil || ok {
		t.Fatalf("NetworkPolicy %s admits namespace %s to the REST port %d (%v): only the metrics port is its path", np.Name, monitoringNS, v1alpha1.RestPort, err)
	}
	t.Logf("NetworkPolicy %s admits namespace %s to port %d only (a network plugin enforces it; the local cluster has none)", np.Name, monitoringNS, cc.MetricsPort())
}

// sinkLagScraped: each task of scale-sink shows in the scrape of the worker
// that runs it (its workerId is that pod's IP and REST port) as
// kafka_connect_sink_lag{connector="scale-sink",task="N"}.
func sinkLagScraped(t *testing.T, cv *localcluster.Conveyor, scraped map[string]map[string]*dto.MetricFamily) {
	t.Helper()
	kcs, err := cv.WaitConnectorsRunning(t.Context(), samplesNS, time.Minute, "scale-sink")
	if err != nil {
		t.Fatal(err)
	}
	tasks := kcs[0].Status.Tasks
	if len(tasks) == 0 {
		t.Fatal("scale-sink reports no tasks")
	}
	for _, task := range tasks {
		ip, _, _ := strings.Cut(task.WorkerID, ":")
		fams, ok := scraped[ip]
		if !ok {
			t.Errorf("task %d of scale-sink runs on %s, a worker that was not scraped (%d scraped)", task.ID, task.WorkerID, len(scraped))
			continue
		}
		found := ""
		for _, m := range fams["kafka_connect_sink_lag"].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["connector"] == "scale-sink" && l["task"] == fmt.Sprint(task.ID) {
				found = fmt.Sprint(m.GetGauge().GetValue())
			}
		}
		if found == "" {
			t.Errorf("the scrape of %s has no kafka_connect_sink_lag{connector=\"scale-sink\",task=\"%d\"} (families: %d)", ip, task.ID, len(fams))
			continue
		}
		t.Logf("kafka_connect_sink_lag{connector=\"scale-sink\",task=\"%d\"} = %s on the metrics port of %s", task.ID, found, ip)
	}
}
