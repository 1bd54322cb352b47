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

package connectcluster

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// secretNamesChanged reports whether a connector edit changed the Secrets it
// references (the workers' Role follows).
func secretNamesChanged(o, n *v1alpha1.KafkaConnector) bool {
	return !slices.Equal(clusterkit.ConnectorSecretNames(*o), clusterkit.ConnectorSecretNames(*n))
}

// BuildSecretsRole returns the Role allowing "get" on exactly the named
// Secrets, and its RoleBinding to the workers' ServiceAccount, both owned by
// the cluster. With no names it returns nil, nil: an RBAC rule with empty
// resourceNames would allow every Secret of the namespace, so the reconciler
// deletes the Role instead.
func BuildSecretsRole(cc *v1alpha1.ConnectCluster, secretNames []string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	if len(secretNames) == 0 {
		return nil, nil
	}
	name := clusterkit.SecretsRoleName(cc)
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: objectMeta(cc, name),
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"secrets"},
			Verbs:         []string{"get"},
			ResourceNames: slices.Clone(secretNames),
		}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: objectMeta(cc, name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName(cc), Namespace: cc.Namespace}},
	}
	return role, binding
}
