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

package apitest

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestKustomizeInstall applies config/default with the built kubectl (its bundled kustomize)
// and checks what lands: the operator Deployment in conveyor-system with its hardening, the
// ServiceAccount and the bindings pointing at it. Then it applies config/samples with
// kubectl apply -k and with kubectl apply -f, each into a namespace of its own.
func TestKustomizeInstall(t *testing.T) {
	out, err := runKubectl(t, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repoRoot, "config", "default"))
	if err != nil {
		t.Fatalf("kubectl apply -k config/default: %v\n%s", err, out)
	}

	const ns = "conveyor-system"
	var dep appsv1.Deployment
	if err := k8sClient.Get(ctx(t), key(ns, "conveyor-operator"), &dep); err != nil {
		t.Fatalf("the operator Deployment is not in %s: %v", ns, err)
	}
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != "conveyor-operator" {
		t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot and seccomp RuntimeDefault", sc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Args[0] != "operator" {
		t.Errorf("args = %v, want the operator subcommand first", c.Args)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext = %+v, want read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "probes" {
			t.Errorf("probe = %+v, want an HTTP probe on the probes port (8081)", p)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAMESPACE"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE = %+v, want the downward API metadata.namespace", e)
	}
	if got := env["CONVEYOR_IMAGE"].Value; got != c.Image {
		t.Errorf("CONVEYOR_IMAGE = %q, want the container's own image %q", got, c.Image)
	}

	var sa corev1.ServiceAccount
	if err := k8sClient.Get(ctx(t), key(ns, "conveyor-operator"), &sa); err != nil {
		t.Errorf("ServiceAccount: %v", err)
	}
	var crb rbacv1.ClusterRoleBinding
	if err := k8sClient.Get(ctx(t), key("", "conveyor-operator"), &crb); err != nil {
		t.Fatalf("ClusterRoleBinding: %v", err)
	}
	if crb.RoleRef.Name != "conveyor-operator" || len(crb.Subjects) != 1 || crb.Subjects[0].Namespace != ns {
		t.Errorf("ClusterRoleBinding = %+v / %+v, want role conveyor-operator bound to the ServiceAccount in %s", crb.RoleRef, crb.Subjects, ns)
	}
	var rb rbacv1.RoleBinding
	if err := k8sClient.Get(ctx(t), key(ns, "conveyor-leader-election"), &rb); err != nil {
		t.Errorf("leader election RoleBinding: %v", err)
	}
	var cr rbacv1.ClusterRole
	if err := k8sClient.Get(ctx(t), key("", "conveyor-operator"), &cr); err != nil {
		t.Errorf("ClusterRole conveyor-operator: %v", err)
	}

	for _, how := range []string{"-k", "-f"} {
		t.Run("samples with kubectl apply "+how, func(t *testing.T) {
			sampleNS := newNamespace(t)
			out, err := runKubectl(t, "apply", "-n", sampleNS, how, filepath.Join(repoRoot, "config", "samples"))
			if err != nil {
				t.Fatalf("kubectl apply %s config/samples: %v\n%s", how, err, out)
			}
			if !strings.Contains(out, "connectcluster.connect.conveyor.dev/demo created") {
				t.Errorf("kubectl apply output lacks the cluster:\n%s", out)
			}
			var list v1.KafkaConnectorList
			if err := k8sClient.List(ctx(t), &list, client.InNamespace(sampleNS)); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 2 {
				t.Errorf("samples created %d KafkaConnectors, want 2", len(list.Items))
			}
		})
	}
}
