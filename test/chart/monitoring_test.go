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

package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

const (
	alertsFile    = "../../charts/conveyor/files/alerts.yaml"
	dashboardFile = "../../charts/conveyor/files/dashboard.json"
)

// promtool finds Debian's promtool (hack/install-deps.sh installs the prometheus
// package): $PROMTOOL, then the link hack/build-test-binaries.sh keeps beside helm,
// then PATH.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	if p := filepath.Join(filepath.Dir(helmBinary(t)), "promtool"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: run hack/install-deps.sh (Debian's prometheus package): %v", err)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPromtoolChecksTheAlerts: the real promtool checks the rules file and
// the PrometheusRule the chart renders from it (the same groups), and its
// unit tests show each alert firing on the series it is about, with the
// labels and annotations it should have, and not firing otherwise.
func TestPromtoolChecksTheAlerts(t *testing.T) {
	t.Logf("%s", runPromtool(t, "check", "rules", alertsFile))

	out, err := helm(t, "template", "conveyor", chartDir, "--namespace", "conveyor-system", "--skip-crds",
		"--set", "monitoring.prometheusRule.enabled=true", "--show-only", "templates/monitoring.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var rule struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(out), &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("rendered PrometheusRule: kind %q, %v\n%s", rule.Kind, err, out)
	}
	rendered, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rendered-rules.yaml")
	if err := os.WriteFile(path, rendered, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", runPromtool(t, "check", "rules", path))
	var file map[string]any
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, file["groups"]), mustJSON(t, rule.Spec["groups"]); a != b {
		t.Fatalf("the PrometheusRule's groups differ from %s:\n%s\n%s", alertsFile, a, b)
	}

	t.Logf("%s", runPromtool(t, "test", "rules", "testdata/alerts_test.yaml"))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricRef finds our metric names in PromQL with the label matchers that
// follow them: name{label="...",...}.
var metricRef = regexp.MustCompile(`\b((?:kafka_connect|conveyor)_[a-z_]+)(\{[^}]*\})?`)

var matcherLabel = regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)`)

// byLabels finds the labels of "by (...)" clauses.
var byLabels = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)

// scrapeLabels are added by Prometheus' Kubernetes service discovery, not
// by the worker or the operator.
var scrapeLabels = []string{"namespace", "pod"}

// queries returns every PromQL expression of the dashboard and the alerts.
func queries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("dashboard panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			out["dashboard variable "+v.Name] = v.Definition
		}
	}
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	return out
}

// TestDashboardAndAlertsUseExportedMetrics: every metric the dashboard and
// the alerts query, and every label they select or group by, is one that
// Conveyor really exports: the worker's, scraped from a real worker that
// runs a source and a sink on kfake, and the operator's, gathered from the
// registry the operator serves.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	kafka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kafka.Close)
	token := "monitoring-test-token"
	w, stop, err := envkit.StartWorker(envkit.WorkerSpec{
		Bootstrap: kafka.ListenAddrs()[0],
		Cluster: &v1alpha1.ConnectCluster{Spec: v1alpha1.ConnectClusterSpec{GroupID: ptr("monitoring"),
			Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1)}}},
		RestToken: token,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	rc, err := workerclient.New([]string{"http://" + w.RESTAddr()}, workerclient.Options{Token: token, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []map[string]string{
		{"name": "mon-src", "connector.class": "RangeSource", "topic": "mon", "tasks.max": "1", "count": "10000"},
		{"name": "mon-sink", "connector.class": "FileSink", "topics": "mon", "file": filepath.Join(dir, "out.txt"),
			"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "mon-dlq", "errors.deadletterqueue.topic.replication.factor": "1"},
	} {
		if _, _, err := rc.PutConnectorConfig(ctx, c["name"], c); err != nil {
			t.Fatalf("creating %s: %v", c["name"], err)
		}
	}
	var worker map[string]map[string]bool // family -> label names
	testkit.Eventually(t, 60*time.Second, "both connectors' tasks running and lag reported", func() (bool, string) {
		fams, err := scrapeFamilies(ctx, "http://"+w.RESTAddr()+"/metrics", token)
		if err != nil {
			return false, err.Error()
		}
		worker = fams
		return fams["kafka_connect_sink_lag"] != nil && fams["kafka_connect_source_record_write_total"] != nil, fmt.Sprintf("%d families", len(fams))
	})

	// The operator's status gauges, as its registry serves them.
	statusmetrics.Connector("ns", "kc", "cc", &metav1.Condition{Status: metav1.ConditionFalse, Reason: "TasksPending"})
	statusmetrics.Cluster("ns", "cc", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "WorkersReady"}, 2, 2)
	t.Cleanup(func() { statusmetrics.DeleteConnector("ns", "kc"); statusmetrics.DeleteCluster("ns", "cc") })
	// A reconcile in progress: its start-time series exists only meanwhile.
	entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	held := statusmetrics.TrackReconciles("MonitoringTest", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		close(entered)
		<-release
		return reconcile.Result{}, nil
	}))
	go func() {
		defer close(done)
		_, _ = held.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "held"}})
	}()
	<-entered
	mfs, err := crmetrics.Registry.Gather()
	close(release)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]map[string]bool{}
	for n, ls := range worker {
		exported[n] = ls
	}
	for _, mf := range mfs {
		ls := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = true
			}
		}
		exported[mf.GetName()] = ls
	}

	used := 0
	for where, q := range queries(t) {
		refs := metricRef.FindAllStringSubmatch(q, -1)
		if len(refs) == 0 {
			t.Errorf("%s: no Conveyor metric in %q", where, q)
		}
		labelsOf := map[string]bool{}
		for _, ref := range refs {
			name := ref[1]
			ls, ok := exported[name]
			if !ok {
				t.Errorf("%s uses %s, which neither a worker nor the operator exports", where, name)
				continue
			}
			used++
			for n := range ls {
				labelsOf[n] = true
			}
			for _, m := range matcherLabel.FindAllStringSubmatch(ref[2], -1) {
				if !ls[m[1]] && !slices.Contains(scrapeLabels, m[1]) {
					t.Errorf("%s selects %s{%s=...}, a label %s does not have", where, name, m[1], name)
				}
			}
		}
		for _, by := range byLabels.FindAllStringSubmatch(q, -1) {
			for _, l := range strings.Split(by[1], ",") {
				l = strings.TrimSpace(l)
				if l != "" && !labelsOf[l] && !slices.Contains(scrapeLabels, l) {
					t.Errorf("%s groups by %q, a label none of its metrics has", where, l)
				}
			}
		}
	}
	t.Logf("%d metric references in the dashboard and alerts checked against %d worker and %d operator families", used, len(worker), len(mfs))
}

// scrapeFamilies reads /metrics as Prometheus does and returns each
// family's label names.
func scrapeFamilies(ctx context.Context, url, token string) (map[string]map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape: HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for n, mf := range fams {
		ls := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = true
			}
		}
		out[n] = ls
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
