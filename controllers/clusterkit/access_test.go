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

package clusterkit

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func TestConnectorAccessProblem(t *testing.T) {
	cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.ConnectClusterSpec{ConnectorAccess: &v1alpha1.ConnectorAccess{
		Secrets: []string{"db"}, FilePaths: []string{"/opt/creds"}, EnvVariables: []string{"REGION"}}}}
	open := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	for _, c := range []struct {
		cc           *v1alpha1.ConnectCluster
		key, value   string
		reason, name string
	}{
		{cc, "password", "${secret:db:password}", "", ""},
		{cc, "topics", "x-${secret:other:t}", v1alpha1.ReasonSecretNotAllowed, "topics"},
		{open, "password", "${secret:db:password}", v1alpha1.ReasonSecretNotAllowed, "password"},
		{cc, "f", "${file:/opt/creds/a.properties:k}", "", ""},
		{cc, "f", "${file:/opt/creds}", "", ""},
		{cc, "f", "${file:/opt/credsX/a}", v1alpha1.ReasonProviderNotAllowed, "f"},
		{cc, "f", "${file:/opt/creds/../../etc/conveyor/rest/token}", v1alpha1.ReasonProviderNotAllowed, "f"},
		{open, "f", "${file:/var/run/secrets/kubernetes.io/serviceaccount/token}", v1alpha1.ReasonProviderNotAllowed, "f"},
		{cc, "e", "${env:REGION}", "", ""},
		{cc, "e", "${env:KAFKA_PASSWORD}", v1alpha1.ReasonProviderNotAllowed, "e"},
		{cc, "u", "${vault:x:y}", "", ""}, // unknown providers are left to the worker, which leaves them unresolved
	} {
		p := ConnectorAccessProblem(c.cc, map[string]string{c.key: c.value, "plain": "v"})
		switch {
		case c.reason == "" && p != nil:
			t.Errorf("%s: refused: %+v", c.value, p)
		case c.reason != "" && (p == nil || p.Reason != c.reason || !strings.Contains(p.Message, `"`+c.name+`"`) || !strings.Contains(p.Message, "spec.connectorAccess")):
			t.Errorf("%s: got %+v, want %s naming %q and spec.connectorAccess", c.value, p, c.reason, c.name)
		}
	}
}
