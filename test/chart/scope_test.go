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
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

type rbacObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Rules   []rbacv1.PolicyRule `json:"rules"`
	RoleRef rbacv1.RoleRef      `json:"roleRef"`
}

func renderRBAC(t *testing.T, args ...string) []rbacObject {
	t.Helper()
	out, err := helm(t, append([]string{"template", "conveyor", chartDir, "--namespace", "conveyor-system", "--skip-crds"}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(out)), 4096)
	var objs []rbacObject
	for {
		var o rbacObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
}

// TestNamespacedScopeGrantsNothingClusterWide: with rbac.scope=namespaces the
// operator may touch Secrets (and every other resource) only in the watched
// namespaces. The only cluster-wide rules left are those controller-runtime's
// metrics filter needs (TokenReviews, SubjectAccessReviews) and the
// metrics-reader role for scrapers, which grant no object in any namespace.
func TestNamespacedScopeGrantsNothingClusterWide(t *testing.T) {
	objs := renderRBAC(t, "--set", "rbac.scope=namespaces", "--set", "watchNamespaces={team-a,team-b}")
	secretsIn := map[string]bool{}
	for _, o := range objs {
		switch o.Kind {
		case "ClusterRole":
			for _, r := range o.Rules {
				for _, res := range r.Resources {
					if res != "tokenreviews" && res != "subjectaccessreviews" {
						t.Errorf("ClusterRole %s grants %v on %s cluster-wide in namespaced mode", o.Metadata.Name, r.Verbs, res)
					}
				}
			}
		case "Role":
			for _, r := range o.Rules {
				if slices.Contains(r.Resources, "secrets") {
					secretsIn[o.Metadata.Namespace] = true
				}
			}
		}
	}
	if len(secretsIn) != 2 || !secretsIn["team-a"] || !secretsIn["team-b"] {
		t.Fatalf("Secrets are granted in %v, want exactly team-a and team-b", secretsIn)
	}
	// The default (cluster) scope grants Secrets through a ClusterRole: the
	// test above would see it.
	clusterWide := false
	for _, o := range renderRBAC(t) {
		for _, r := range o.Rules {
			if o.Kind == "ClusterRole" && slices.Contains(r.Resources, "secrets") {
				clusterWide = true
			}
		}
	}
	if !clusterWide {
		t.Fatal("the cluster scope renders no cluster-wide Secret rule: this test no longer tells the scopes apart")
	}
}

// TestMetricsAuthRBAC: with secure metrics (the default) the chart gives the
// operator what controller-runtime's filter needs and a reader role.
func TestMetricsAuthRBAC(t *testing.T) {
	have := map[string]bool{}
	for _, o := range renderRBAC(t) {
		for _, r := range o.Rules {
			for _, res := range append(slices.Clone(r.Resources), r.NonResourceURLs...) {
				have[o.Kind+" "+res+" "+r.Verbs[0]] = true
			}
		}
	}
	for _, want := range []string{"ClusterRole tokenreviews create", "ClusterRole subjectaccessreviews create", "ClusterRole /metrics get"} {
		if !have[want] {
			t.Errorf("missing %s", want)
		}
	}
	for _, o := range renderRBAC(t, "--set", "metrics.secure=false") {
		if o.Metadata.Name == "conveyor-metrics-auth" {
			t.Error("plain metrics still render the metrics-auth ClusterRole")
		}
	}
}
