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
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

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
// runs Prometheus in that namespace (prometheusScrapesAndAlerts).
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

// prometheusScrapesAndAlerts runs a real Prometheus (Debian's prometheus 2.42) as a pod
// in the monitoring namespace, the one the workers' NetworkPolicy admits to the metrics
// port. It finds the worker pods through Kubernetes service discovery against the local
// API server, scrapes each with the metrics token, and evaluates the chart's alert
// rules. Then a task fails on purpose: ConveyorTaskFailed fires for it, and resolves once
// the task runs again.
func (w *walk) prometheusScrapesAndAlerts(t *testing.T) {
	ctx := t.Context()
	pods, cc, err := w.cv.WorkerPods(ctx, samplesNS, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) == 0 {
		t.Fatal("no worker pods of ConnectCluster scale")
	}
	metricsPathAllowed(t, cc)
	t.Cleanup(func() { stopPrometheus(context.Background(), samplesNS) })
	start := time.Now()
	prom := startPrometheus(t, ctx, w.root, cc, "ConveyorTaskFailed")
	t.Logf("Prometheus Ready at %s after %s", prom.base, time.Since(start).Round(100*time.Millisecond))

	// Every worker pod, found by discovery, scraped with the token: up == 1, one series
	// per pod, and nothing else in the job.
	job := cc.Namespace + "/" + connectcluster.PodMonitorName(cc)
	want := map[string]string{} // pod name -> podIP:metricsPort
	for _, p := range pods {
		want[p.Name] = fmt.Sprintf("%s:%d", p.Status.PodIP, cc.MetricsPort())
	}
	var up []sample
	waitFor(t, time.Minute, "up == 1 for every worker pod of scale", func() (bool, error) {
		up, err = prom.query(ctx, fmt.Sprintf(`up{job=%q}`, job))
		if err != nil {
			return false, err
		}
		got := map[string]string{}
		for _, s := range up {
			if s.value() != "1" {
				return false, fmt.Errorf("up{pod=%q} = %s", s.Metric["pod"], s.value())
			}
			got[s.Metric["pod"]] = s.Metric["instance"]
		}
		return maps.Equal(got, want), fmt.Errorf("up series by pod %v, want %v; targets: %s", got, want, targetSummary(ctx, prom))
	})
	for _, s := range up {
		t.Logf("up{job=%q,namespace=%q,pod=%q,instance=%q} = %s", job, s.Metric["namespace"], s.Metric["pod"], s.Metric["instance"], s.value())
	}
	sinkLagInPrometheus(t, w.cv, prom, pods)
	taskFailedAlert(t, w.cv, prom)
}

// targetSummary lists Prometheus' active targets, for failure messages.
func targetSummary(ctx context.Context, prom *prometheus) string {
	ts, err := prom.targets(ctx)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, tg := range ts {
		out = append(out, fmt.Sprintf("%s %s %s", tg.ScrapeURL, tg.Health, tg.LastError))
	}
	return strings.Join(out, "; ")
}

// sinkLagInPrometheus: each task of scale-sink has its
// kafka_connect_sink_lag{connector="scale-sink",task="N"} series in Prometheus, labelled
// with the pod that runs it (its workerId is that pod's IP and REST port).
func sinkLagInPrometheus(t *testing.T, cv *localcluster.Conveyor, prom *prometheus, pods []corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	kcs, err := cv.WaitConnectorsRunning(ctx, samplesNS, time.Minute, "scale-sink")
	if err != nil {
		t.Fatal(err)
	}
	tasks := kcs[0].Status.Tasks
	if len(tasks) == 0 {
		t.Fatal("scale-sink reports no tasks")
	}
	podOf := map[string]string{} // pod IP -> pod name
	for _, p := range pods {
		podOf[p.Status.PodIP] = p.Name
	}
	for _, task := range tasks {
		ip, _, _ := strings.Cut(task.WorkerID, ":")
		q := fmt.Sprintf(`kafka_connect_sink_lag{namespace=%q,connector="scale-sink",task="%d"}`, samplesNS, task.ID)
		var res []sample
		waitFor(t, 30*time.Second, q, func() (bool, error) {
			res, err = prom.query(ctx, q)
			return err == nil && len(res) == 1, fmt.Errorf("%d series, %v", len(res), err)
		})
		if got := res[0].Metric["pod"]; got != podOf[ip] {
			t.Errorf("%s comes from pod %q; task %d runs on %s (pod %q)", q, got, task.ID, task.WorkerID, podOf[ip])
			continue
		}
		t.Logf("%s = %s, scraped from pod %s", q, res[0].value(), res[0].Metric["pod"])
	}
}

// alertSinkManifest is a FileSink of the cluster "scale", which grants /data to file
// connectors. Given /data itself, a directory, as its file, the connector passes
// validation (the path is granted and its folder exists) and its task fails at start (a
// directory cannot be opened for appending).
func alertSinkManifest(file string) string {
	return fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: alert-sink
spec:
  clusterRef: {name: scale}
  class: FileSink
  tasksMax: 1
  config:
    topics: scale-numbers
    file: %s
`, file)
}

// taskFailedAlert makes a task fail and waits for Prometheus to fire ConveyorTaskFailed
// for it (with the rule's labels), then makes it run and waits for the alert to resolve.
func taskFailedAlert(t *testing.T, cv *localcluster.Conveyor, prom *prometheus) {
	t.Helper()
	ctx := t.Context()
	const alert = "ConveyorTaskFailed"
	if as, err := prom.alerts(ctx, alert); err != nil || len(as) > 0 {
		t.Fatalf("%s active before any task failed: %+v (%v)", alert, as, err)
	}
	start := time.Now()
	kubectl(t, alertSinkManifest("/data"), "apply", "-n", samplesNS, "-f", "-")
	t.Cleanup(func() {
		_, _ = cluster.RunKubectl(context.Background(), "", "delete", "-n", samplesNS, "kafkaconnector/alert-sink", "--ignore-not-found")
	})
	var firing promAlert
	waitFor(t, 2*time.Minute, alert+" firing for task 0 of alert-sink", func() (bool, error) {
		as, err := prom.alerts(ctx, alert)
		if err != nil {
			return false, err
		}
		for _, a := range as {
			if a.Labels["connector"] == "alert-sink" {
				firing = a
				return a.State == "firing", fmt.Errorf("state %s", a.State)
			}
		}
		st, _ := prom.query(ctx, `kafka_connect_task_status{connector="alert-sink"} == 1`)
		return false, fmt.Errorf("no alert yet; task states %v", st)
	})
	wantLabels := map[string]string{"alertname": alert, "namespace": samplesNS, "connector": "alert-sink", "task": "0", "severity": "critical"}
	if !maps.Equal(firing.Labels, wantLabels) {
		t.Errorf("%s labels %v, want %v", alert, firing.Labels, wantLabels)
	}
	t.Logf("%s firing %s after the connector was applied (active since %s; for: %s in this test's copy of the rules): %v",
		alert, time.Since(start).Round(100*time.Millisecond), firing.ActiveAt.Format(time.RFC3339), testFor, firing.Labels)

	// The fix: a file the task can create. The task runs again, its FAILED series drops
	// to 0, and the alert resolves.
	fixed := time.Now()
	kubectl(t, alertSinkManifest("/data/alert-sink.jsonl"), "apply", "-n", samplesNS, "-f", "-")
	if _, err := cv.WaitConnectorsRunning(ctx, samplesNS, 2*time.Minute, "alert-sink"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, alert+" resolved for alert-sink", func() (bool, error) {
		as, err := prom.alerts(ctx, alert)
		if err != nil {
			return false, err
		}
		series, err := prom.query(ctx, fmt.Sprintf(`ALERTS{alertname=%q}`, alert))
		return err == nil && len(as) == 0 && len(series) == 0, fmt.Errorf("alerts %+v, ALERTS series %v, %v", as, series, err)
	})
	t.Logf("%s resolved %s after the fix was applied", alert, time.Since(fixed).Round(100*time.Millisecond))
}
