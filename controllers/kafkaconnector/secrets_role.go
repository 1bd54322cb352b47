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

package kafkaconnector

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// SecretsAccess names the Role (and RoleBinding) that lets a cluster's
// workers read the Secrets its connectors reference.
type SecretsAccess struct {
	// Namespace of the cluster, its connectors and their Secrets.
	Namespace string
	// Name of the Role and of the RoleBinding.
	Name string
	// ServiceAccount the worker pods run as.
	ServiceAccount string
	// Labels go on both objects.
	Labels map[string]string
}

// ConnectorSecretNames is the sorted list of Secrets that the connectors
// reference through ${secret:<name>:<key>} placeholders. A connector with a
// malformed placeholder contributes nothing (its own status says why).
func ConnectorSecretNames(kcs []v1alpha1.KafkaConnector) []string {
	var all [][]SecretRef
	for i := range kcs {
		if refs, err := SecretRefs(kcs[i].Spec.Config); err == nil {
			all = append(all, refs)
		}
	}
	return SecretNames(all...)
}

// BuildSecretsRole returns the Role allowing "get" on exactly the named
// Secrets, and its RoleBinding to the workers' ServiceAccount. With no
// names it returns nil, nil: an RBAC rule with empty resourceNames would
// allow every Secret of the namespace, so the caller deletes the Role
// instead. The caller sets the owner reference (the ConnectCluster).
func BuildSecretsRole(a SecretsAccess, secretNames []string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	if len(secretNames) == 0 {
		return nil, nil
	}
	meta := func() metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace}
		if len(a.Labels) > 0 {
			m.Labels = make(map[string]string, len(a.Labels))
			for k, v := range a.Labels {
				m.Labels[k] = v
			}
		}
		return m
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: meta(),
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"secrets"},
			Verbs:         []string{"get"},
			ResourceNames: append([]string(nil), secretNames...),
		}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: meta(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: a.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: a.ServiceAccount, Namespace: a.Namespace}},
	}
	return role, binding
}
