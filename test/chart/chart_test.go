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

// Package chart tests the Helm chart with the real helm binary: lint and
// golden renderings of `helm template` for the values users set most.
package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

const chartDir = "../../charts/conveyor"

// helmBinary finds the helm that hack/build-test-binaries.sh builds.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	out, err := exec.Command("../../hack/build-test-binaries.sh", "tools").Output()
	if err != nil {
		t.Fatalf("finding helm with hack/build-test-binaries.sh tools: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "helm")
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stderr.String(), err
	}
	return string(out), nil
}

func TestLintStrict(t *testing.T) {
	out, err := helm(t, "lint", "--strict", chartDir)
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

func TestTemplateGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"namespaced-rbac", []string{"--set", "rbac.scope=namespaces", "--set", "watchNamespaces={team-a,team-b}"}},
		{"servicemonitor", []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "image.tag=v9.9.9", "--set", "leaderElection.enabled=false"}},
		{"no-metrics", []string{"--set", "metrics.enabled=false", "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=existing"}},
		{"listen-on-pod-ip", []string{"--set", "listenOnPodIP=true"}},
		{"leader-timings", []string{"--set", "leaderElection.leaseDuration=15s", "--set", "leaderElection.renewDeadline=10s",
			"--set", "leaderElection.retryPeriod=2s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", "conveyor", chartDir, "--namespace", "conveyor-system", "--skip-crds"}, tc.args...)
			got, err := helm(t, args...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, got)
			}
			testkit.Golden(t, filepath.Join("testdata", tc.name+".golden.yaml"), []byte(got))
		})
	}
}

// TestTemplateRefusesBadValues shows that mistakes are caught before anything
// reaches the cluster, with a message that names the value to fix.
func TestTemplateRefusesBadValues(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"namespaced rbac without namespaces", []string{"--set", "rbac.scope=namespaces"}, "rbac.scope=namespaces needs watchNamespaces"},
		{"unknown rbac scope", []string{"--set", "rbac.scope=everywhere"}, "/rbac/scope"},
		{"unknown top-level value", []string{"--set", "replicas=2"}, "replicas"},
		{"bad pull policy", []string{"--set", "image.pullPolicy=Sometimes"}, "/image/pullPolicy"},
		{"connector resync without a unit", []string{"--set", "connectorResync=30"}, "/connectorResync"},
		{"connector resync max without a unit", []string{"--set", "connectorResyncMax=120"}, "/connectorResyncMax"},
		{"lease duration without a unit", []string{"--set", "leaderElection.leaseDuration=15"}, "/leaderElection/leaseDuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", "conveyor", chartDir}, tc.args...)
			out, err := helm(t, args...)
			if err == nil {
				t.Fatalf("helm template accepted %v", tc.args)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("error %q does not mention %q", out, tc.want)
			}
		})
	}
}

// TestCRDsMatchConfig guards the rule that the chart's CRDs are copies of
// config/crd/bases made by hack/sync-chart-crds.sh, never edited by hand.
func TestCRDsMatchConfig(t *testing.T) {
	bases, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	copies, err := filepath.Glob(chartDir + "/crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(bases) != len(copies) {
		t.Fatalf("config/crd/bases has %d CRDs, the chart %d: run hack/sync-chart-crds.sh", len(bases), len(copies))
	}
	for _, b := range bases {
		want, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(b)))
		if err != nil {
			t.Fatalf("chart lacks %s: run hack/sync-chart-crds.sh", filepath.Base(b))
		}
		if !bytes.HasSuffix(got, want) {
			t.Errorf("chart copy of %s is stale: run hack/sync-chart-crds.sh", filepath.Base(b))
		}
	}
}
