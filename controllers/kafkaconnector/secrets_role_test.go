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
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
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
	names := ConnectorSecretNames(kcs)
	if !reflect.DeepEqual(names, []string{"pg", "vendor-api"}) {
		t.Fatalf("ConnectorSecretNames = %v", names)
	}
	a := SecretsAccess{Namespace: "ns", Name: "c1-connect-secrets", ServiceAccount: "c1-connect", Labels: map[string]string{"x": "y"}}
	role, binding := BuildSecretsRole(a, names)
	if len(role.Rules) != 1 {
		t.Fatalf("rules %+v", role.Rules)
	}
	r := role.Rules[0]
	if !reflect.DeepEqual(r.ResourceNames, names) || !reflect.DeepEqual(r.Verbs, []string{"get"}) || !reflect.DeepEqual(r.Resources, []string{"secrets"}) {
		t.Fatalf("rule %+v does not allow exactly get on the named Secrets", r)
	}
	if binding.RoleRef.Name != role.Name || binding.Subjects[0].Name != "c1-connect" || binding.Subjects[0].Namespace != "ns" {
		t.Fatalf("binding %+v", binding)
	}
	if role, binding := BuildSecretsRole(a, nil); role != nil || binding != nil {
		t.Fatal("no referenced Secret must give no Role: empty resourceNames would allow every Secret")
	}
}
