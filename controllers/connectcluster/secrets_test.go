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
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

func TestSecretsRole(t *testing.T) {
	kc := func(name string, cfg map[string]string) v1alpha1.KafkaConnector {
		return v1alpha1.KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.KafkaConnectorSpec{Config: cfg}}
	}
	kcs := []v1alpha1.KafkaConnector{
		kc("a", map[string]string{"connection.password": "${secret:pg:password}", "connection.user": "${secret:pg:user}"}),
		kc("b", map[string]string{"api.key": "${secret:vendor-api:key}", "plain": "x"}),
		kc("c", map[string]string{"bad": "${secret:broken}"}),
		kc("d", nil),
	}
	names := clusterkit.ConnectorSecretNames(kcs...)
	if !reflect.DeepEqual(names, []string{"pg", "vendor-api"}) {
		t.Fatalf("ConnectorSecretNames = %v", names)
	}
	cc := minimalCluster()
	role, binding := BuildSecretsRole(cc, names)
	if len(role.Rules) != 1 {
		t.Fatalf("rules %+v", role.Rules)
	}
	r := role.Rules[0]
	if !reflect.DeepEqual(r.ResourceNames, names) || !reflect.DeepEqual(r.Verbs, []string{"get"}) ||
		!reflect.DeepEqual(r.Resources, []string{"secrets"}) || !reflect.DeepEqual(r.APIGroups, []string{""}) {
		t.Fatalf("rule %+v does not allow exactly get on the named Secrets", r)
	}
	if role.Name != "orders-connect-secrets" || binding.RoleRef.Name != role.Name || binding.RoleRef.Kind != "Role" ||
		len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" ||
		binding.Subjects[0].Name != ServiceAccountName(cc) || binding.Subjects[0].Namespace != cc.Namespace {
		t.Fatalf("binding %+v of role %s", binding, role.Name)
	}
	for _, o := range []metav1.Object{role, binding} {
		if !metav1.IsControlledBy(o, cc) || o.GetNamespace() != cc.Namespace {
			t.Fatalf("%s is not owned by the cluster in its namespace: %+v", o.GetName(), o.GetOwnerReferences())
		}
	}
	names[0] = "changed"
	if role.Rules[0].ResourceNames[0] != "pg" {
		t.Fatal("the Role shares the caller's slice")
	}
	if role, binding := BuildSecretsRole(cc, nil); role != nil || binding != nil {
		t.Fatal("no referenced Secret must give no Role: empty resourceNames would allow every Secret")
	}
	if !secretNamesChanged(&kcs[0], &kcs[1]) || secretNamesChanged(&kcs[2], &kcs[3]) {
		t.Fatal("secretNamesChanged")
	}
}
