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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/test/localcluster"
)

// prometheusImage maps to a folder holding the Prometheus server that hack/prometheus.sh
// builds (Debian's prometheus has no Kubernetes service discovery), linked there by TestMain.
const prometheusImage = "localcluster.test/prometheus"

const (
	prometheusName = "prometheus"
	prometheusPort = 9090
	// The metrics token, copied into the monitoring namespace (prometheus-operator copies
	// a PodMonitor's credentials into its own Secret the same way), mounted here.
	prometheusTokenDir = "/etc/prometheus/secrets/metrics-token"
	prometheusRules    = "alerts.yaml"
	// Test-time intervals: the shipped rules keep their expressions; only the `for:` of
	// the alert under test is shortened (testFor), see prometheusRulesFile.
	scrapeInterval     = "2s"
	evaluationInterval = "1s"
	testFor            = "5s"
)

// prometheusImageDir links the Prometheus server into dir (the image folder that appears
// at /usr/local/bin inside the pod): $CONVEYOR_PROMETHEUS (hack/test.sh sets it), else what
// hack/prometheus.sh builds or finds in ~/.cache/conveyor.
func prometheusImageDir(ctx context.Context, dir string) error {
	bin := os.Getenv("CONVEYOR_PROMETHEUS")
	if bin == "" {
		root, err := localcluster.ModuleRoot(ctx)
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "prometheus.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("hack/prometheus.sh: %w", err)
		}
		bin = strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.Symlink(bin, filepath.Join(dir, "prometheus"))
}

// podMonitorScrapeConfig turns the PodMonitor the operator derives for a ConnectCluster
// into the scrape job prometheus-operator generates from it: Kubernetes service
// discovery of the pods in the PodMonitor's namespace, kept when they carry the
// selector's labels and for the container port the endpoint names, with the
// namespace, pod and container target labels, and the bearer token (here read from a
// file, where prometheus-operator inlines the Secret's value).
func podMonitorScrapeConfig(pm *unstructured.Unstructured, tokenFile string) (map[string]any, error) {
	sel, _, err := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if err != nil || len(sel) == 0 {
		return nil, fmt.Errorf("PodMonitor %s: spec.selector.matchLabels: %v", pm.GetName(), err)
	}
	eps, _, err := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if err != nil || len(eps) != 1 {
		return nil, fmt.Errorf("PodMonitor %s: want one podMetricsEndpoint, got %d (%v)", pm.GetName(), len(eps), err)
	}
	ep, _ := eps[0].(map[string]any)
	port, _ := ep["port"].(string)
	path, _ := ep["path"].(string)
	scheme, _ := ep["scheme"].(string)
	sanitize := regexp.MustCompile(`[^a-zA-Z0-9_]`)
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var relabel []any
	for _, k := range keys {
		name := sanitize.ReplaceAllString(k, "_")
		relabel = append(relabel, map[string]any{
			"action":        "keep",
			"source_labels": []string{"__meta_kubernetes_pod_label_" + name, "__meta_kubernetes_pod_labelpresent_" + name},
			"regex":         "(" + regexp.QuoteMeta(sel[k]) + ");true",
		})
	}
	relabel = append(relabel,
		map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_pod_container_port_name"}, "regex": regexp.QuoteMeta(port)},
		map[string]any{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_pod_container_name"}, "target_label": "container"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
		map[string]any{"target_label": "job", "replacement": pm.GetNamespace() + "/" + pm.GetName()},
		map[string]any{"target_label": "endpoint", "replacement": port},
	)
	job := map[string]any{
		"job_name":              fmt.Sprintf("podMonitor/%s/%s/0", pm.GetNamespace(), pm.GetName()),
		"metrics_path":          path,
		"scheme":                scheme,
		"kubernetes_sd_configs": []any{map[string]any{"role": "pod", "namespaces": map[string]any{"names": []string{pm.GetNamespace()}}}},
		"relabel_configs":       relabel,
	}
	if auth, ok := ep["authorization"].(map[string]any); ok {
		job["authorization"] = map[string]any{"type": auth["type"], "credentials_file": tokenFile}
	}
	return job, nil
}

// prometheusRulesFile is the chart's alert rules (charts/conveyor/files/alerts.yaml) as
// Prometheus loads them, with one test-time change: the `for:` of the alerts named in
// shorten becomes testFor, so that a test waits seconds rather than a minute. The
// expressions, labels and annotations are the shipped ones.
func prometheusRulesFile(root string, shorten ...string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "charts", "conveyor", "files", "alerts.yaml"))
	if err != nil {
		return "", err
	}
	var file struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		return "", fmt.Errorf("alerts.yaml: %w", err)
	}
	found := map[string]bool{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			for _, name := range shorten {
				if r["alert"] == name {
					r["for"] = testFor
					found[name] = true
				}
			}
		}
	}
	for _, name := range shorten {
		if !found[name] {
			return "", fmt.Errorf("alerts.yaml has no alert %s", name)
		}
	}
	out, err := yaml.Marshal(file)
	return string(out), err
}

// prometheus is a running Prometheus pod and how to query its HTTP API.
type prometheus struct {
	base   string // http://podIP:9090
	client *http.Client
}

// startPrometheus runs Debian's Prometheus as a pod in the monitoring namespace, as a
// cluster's Prometheus would run: a ServiceAccount allowed to list and watch the pods of
// the ConnectCluster's namespace (Kubernetes service discovery through the API server,
// with the pod's in-cluster credentials), the scrape job of the operator's PodMonitor,
// the metrics token from a Secret of its own namespace, and the chart's alert rules.
func startPrometheus(t *testing.T, ctx context.Context, root string, cc *v1alpha1.ConnectCluster, shorten ...string) *prometheus {
	t.Helper()
	cs := cluster.Client
	must := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	mref := cc.MetricsTokenSecret()
	ms, err := cs.CoreV1().Secrets(cc.Namespace).Get(ctx, mref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the metrics token Secret: %v", err)
	}
	_, err = cs.CoreV1().Secrets(monitoringNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "conveyor-metrics-token"},
		Data:       map[string][]byte{"token": ms.Data[mref.Key]},
	}, metav1.CreateOptions{})
	must("the metrics token Secret for Prometheus", err)

	job, err := podMonitorScrapeConfig(connectcluster.BuildPodMonitor(cc), prometheusTokenDir+"/token")
	if err != nil {
		t.Fatal(err)
	}
	config, err := yaml.Marshal(map[string]any{
		"global": map[string]any{
			"scrape_interval":     scrapeInterval,
			"scrape_timeout":      scrapeInterval,
			"evaluation_interval": evaluationInterval,
		},
		"rule_files":     []string{"/etc/prometheus/config/" + prometheusRules},
		"scrape_configs": []any{job},
	})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := prometheusRulesFile(root, shorten...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps(monitoringNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: prometheusName},
		Data:       map[string]string{"prometheus.yml": string(config), prometheusRules: rules},
	}, metav1.CreateOptions{})
	must("the Prometheus ConfigMap", err)
	t.Logf("Prometheus configuration (the scrape job of PodMonitor %s):\n%s", connectcluster.PodMonitorName(cc), config)

	_, err = cs.CoreV1().ServiceAccounts(monitoringNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: prometheusName}}, metav1.CreateOptions{})
	must("the Prometheus ServiceAccount", err)
	_, err = cs.RbacV1().Roles(cc.Namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "monitoring-prometheus"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{})
	must("the discovery Role", err)
	_, err = cs.RbacV1().RoleBindings(cc.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "monitoring-prometheus"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "monitoring-prometheus"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: monitoringNS, Name: prometheusName}},
	}, metav1.CreateOptions{})
	must("the discovery RoleBinding", err)

	nobody := int64(65534)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: prometheusName, Labels: map[string]string{"app.kubernetes.io/name": prometheusName}},
		Spec: corev1.PodSpec{
			ServiceAccountName: prometheusName,
			SecurityContext:    &corev1.PodSecurityContext{RunAsUser: &nobody, RunAsGroup: &nobody, FSGroup: &nobody, RunAsNonRoot: ptr.To(true)},
			Containers: []corev1.Container{{
				Name:    prometheusName,
				Image:   prometheusImage,
				Command: []string{"prometheus"},
				Args: []string{
					"--config.file=/etc/prometheus/config/prometheus.yml",
					"--storage.tsdb.path=/prometheus",
					"--storage.tsdb.retention.time=1h",
					fmt.Sprintf("--web.listen-address=$(POD_IP):%d", prometheusPort),
				},
				Env:   []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: prometheusPort}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/ready", Port: intstr.FromInt32(prometheusPort)}},
					PeriodSeconds: 1,
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/prometheus/config", ReadOnly: true},
					{Name: "metrics-token", MountPath: prometheusTokenDir, ReadOnly: true},
					{Name: "data", MountPath: "/prometheus"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: prometheusName}}}},
				{Name: "metrics-token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "conveyor-metrics-token"}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	_, err = cs.CoreV1().Pods(monitoringNS).Create(ctx, pod, metav1.CreateOptions{})
	must("the Prometheus pod", err)
	var ip string
	waitFor(t, 2*time.Minute, "the Prometheus pod to be Ready", func() (bool, error) {
		p, err := cs.CoreV1().Pods(monitoringNS).Get(ctx, prometheusName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ip = p.Status.PodIP
				return true, nil
			}
		}
		return false, fmt.Errorf("phase %s, log %s", p.Status.Phase, logTail(prometheusLog()))
	})
	return &prometheus{base: fmt.Sprintf("http://%s:%d", ip, prometheusPort), client: cluster.HTTPClient()}
}

// prometheusLog is the path of the Prometheus container's log in the local cluster.
func prometheusLog() string {
	return filepath.Join(cluster.Dir, "logs", fmt.Sprintf("%s_%s_%s.log", monitoringNS, prometheusName, prometheusName))
}

func logTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 800 {
		b = b[len(b)-800:]
	}
	return strings.TrimSpace(string(b))
}

// stopPrometheus deletes the pod and what startPrometheus created for it.
func stopPrometheus(ctx context.Context, ns string) {
	cs := cluster.Client
	_ = cs.CoreV1().Pods(monitoringNS).Delete(ctx, prometheusName, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	_ = cs.CoreV1().ConfigMaps(monitoringNS).Delete(ctx, prometheusName, metav1.DeleteOptions{})
	_ = cs.CoreV1().Secrets(monitoringNS).Delete(ctx, "conveyor-metrics-token", metav1.DeleteOptions{})
	_ = cs.CoreV1().ServiceAccounts(monitoringNS).Delete(ctx, prometheusName, metav1.DeleteOptions{})
	_ = cs.RbacV1().RoleBindings(ns).Delete(ctx, "monitoring-prometheus", metav1.DeleteOptions{})
	_ = cs.RbacV1().Roles(ns).Delete(ctx, "monitoring-prometheus", metav1.DeleteOptions{})
}

// get calls the Prometheus HTTP API and decodes its data field into out.
func (p *prometheus) get(ctx context.Context, path string, params url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, env.Status, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

// sample is one series of an instant vector.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value() string { v, _ := s.Value[1].(string); return v }

// query evaluates an instant PromQL query.
func (p *prometheus) query(ctx context.Context, q string) ([]sample, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []sample `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s", q, data.ResultType)
	}
	return data.Result, nil
}

// promAlert is one alert as /api/v1/alerts lists it (pending or firing).
type promAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

func (p *prometheus) alerts(ctx context.Context, name string) ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	if err := p.get(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return nil, err
	}
	var out []promAlert
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == name {
			out = append(out, a)
		}
	}
	return out, nil
}

// targets lists the active targets of Prometheus' scrape jobs with their discovered labels.
type promTarget struct {
	Labels     map[string]string `json:"labels"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	ScrapePool string            `json:"scrapePool"`
}

func (p *prometheus) targets(ctx context.Context) ([]promTarget, error) {
	var data struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	err := p.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets, err
}
