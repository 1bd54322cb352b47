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

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func TestAllowedSecretNames(t *testing.T) {
	cc := &v1alpha1.ConnectCluster{Spec: v1alpha1.ConnectClusterSpec{ConnectorAccess: &v1alpha1.ConnectorAccess{Secrets: []string{"db", "api"}}}}
	kc := func(v ...string) v1alpha1.KafkaConnector {
		m := map[string]string{}
		for i, x := range v {
			m[string(rune('a'+i))] = x
		}
		return v1alpha1.KafkaConnector{Spec: v1alpha1.KafkaConnectorSpec{Config: m}}
	}
	got := AllowedSecretNames(cc, kc("${secret:db:pw}", "${secret:sa-token:token}"), kc("${secret:api:k}"), kc("${secret:other:x}"))
	if !reflect.DeepEqual(got, []string{"api", "db"}) {
		t.Fatalf("the Role would list %v, want only the allowed [api db]", got)
	}
	if got := AllowedSecretNames(&v1alpha1.ConnectCluster{}, kc("${secret:db:pw}")); got != nil {
		t.Fatalf("a cluster that allows nothing grants %v", got)
	}
}
