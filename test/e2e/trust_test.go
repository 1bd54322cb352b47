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
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// curlStatus runs the real curl against url, with the Authorization
// header when auth is set, and returns the HTTP status it saw.
func curlStatus(t *testing.T, url, auth string) string {
	t.Helper()
	args := []string{"-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", url}
	if auth != "" {
		args = append(args, "-H", "Authorization: "+auth)
	}
	out, err := exec.Command("curl", args...).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", url, err)
	}
	return strings.TrimSpace(string(out))
}

// restStatus is the HTTP status of GET path on a worker with token.
func restStatus(ctx context.Context, podIP, token, path string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:%d%s", podIP, v1alpha1.RestPort, path), nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// metricsAndTokenRotation: the workers' metrics port (9404, what the
// NetworkPolicy and the scrape annotations name) answers 401 to curl
// without credentials or with the REST token, and 200 with the cluster's
// metrics token (a real Prometheus scrapes it in prometheusScrapesAndAlerts);
// /metrics on the REST port needs the REST token.
// Then the REST token Secret is rotated: the new token (written with a
// trailing newline) works and the old one gets 401 on every worker, with no
// pod restarted.
func (w *walk) metricsAndTokenRotation(t *testing.T) {
	ctx := t.Context()
	pods, cc, err := w.cv.WorkerPods(ctx, samplesNS, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) == 0 {
		t.Fatal("no worker pods of ConnectCluster scale")
	}
	port := fmt.Sprint(cc.MetricsPort())
	if got := pods[0].Annotations["prometheus.io/port"]; got != port {
		t.Fatalf("scrape annotation prometheus.io/port=%q, metrics port %s", got, port)
	}
	mref := cc.MetricsTokenSecret()
	ms, err := cluster.Client.CoreV1().Secrets(samplesNS).Get(ctx, mref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the metrics token Secret: %v", err)
	}
	metricsTok := strings.TrimSpace(string(ms.Data[mref.Key]))
	restTok, err := w.cv.RestToken(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		url := "http://" + p.Status.PodIP + ":" + port + "/metrics"
		if got := curlStatus(t, url, ""); got != "401" {
			t.Errorf("curl %s without credentials: %s, want 401", url, got)
		}
		if got := curlStatus(t, url, "Bearer "+restTok); got != "401" {
			t.Errorf("curl %s with the REST token: %s, want 401 (the scrape token is its own)", url, got)
		}
		if got := curlStatus(t, url, "Bearer "+metricsTok); got != "200" {
			t.Errorf("curl %s with the metrics token: %s, want 200", url, got)
		}
		rest := fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, v1alpha1.RestPort)
		if got := curlStatus(t, rest, ""); got != "401" {
			t.Errorf("curl %s (REST port) without a token: %s, want 401", rest, got)
		}
	}

	// Rotation.
	restarts := map[types.UID]int32{}
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			restarts[p.UID] += s.RestartCount
		}
	}
	ref := cc.RestTokenSecret()
	newTok := fmt.Sprintf("rotated-%d", time.Now().UnixNano())
	s, err := cluster.Client.CoreV1().Secrets(samplesNS).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data[ref.Key] = []byte(newTok + "\n")
	start := time.Now()
	if _, err := cluster.Client.CoreV1().Secrets(samplesNS).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("rotating the REST token: %v", err)
	}
	waitFor(t, 90*time.Second, "every worker to take the new REST token and refuse the old one", func() (bool, error) {
		for _, p := range pods {
			if got := restStatus(ctx, p.Status.PodIP, newTok, "/connectors"); got != http.StatusOK {
				return false, fmt.Errorf("%s: new token got %d", p.Name, got)
			}
			if got := restStatus(ctx, p.Status.PodIP, restTok, "/connectors"); got != http.StatusUnauthorized {
				return false, fmt.Errorf("%s: old token got %d", p.Name, got)
			}
		}
		return true, nil
	})
	t.Logf("REST token rotated on %d workers %s after the Secret update (the local kubelet re-renders Secret volumes every 20 s; a worker re-reads its token file within 1 s of a change)",
		len(pods), time.Since(start).Round(100*time.Millisecond))
	after, _, err := w.cv.WorkerPods(ctx, samplesNS, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(pods) {
		t.Fatalf("%d worker pods before the rotation, %d after", len(pods), len(after))
	}
	for _, p := range after {
		var n int32
		for _, s := range p.Status.ContainerStatuses {
			n += s.RestartCount
		}
		if prev, ok := restarts[p.UID]; !ok || prev != n {
			t.Errorf("pod %s was replaced or restarted by the rotation (restarts %d -> %d, known %v)", p.Name, prev, n, ok)
		}
	}
	// The operator sends the trimmed token: its connectors stay Running.
	if _, err := w.cv.WaitConnectorsRunning(ctx, samplesNS, 2*time.Minute, "scale-src", "scale-sink"); err != nil {
		t.Fatal(err)
	}
}
