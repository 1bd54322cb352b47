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
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

func TestConnectorToCluster(t *testing.T) {
	kc := &v1alpha1.KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: "c1"}}}
	reqs := connectorToCluster(context.Background(), kc)
	if len(reqs) != 1 || reqs[0].Namespace != "ns" || reqs[0].Name != "c1" {
		t.Fatalf("connectorToCluster = %v", reqs)
	}
	if got := clusterkit.ClusterRefOf(kc); len(got) != 1 || got[0] != "c1" {
		t.Fatalf("ClusterRefOf = %v", got)
	}
	if reqs := connectorToCluster(context.Background(), &v1alpha1.ConnectCluster{}); reqs != nil {
		t.Fatalf("a non-connector mapped to %v", reqs)
	}
	if got := clusterkit.ClusterRefOf(&v1alpha1.KafkaConnector{}); got != nil {
		t.Fatalf("a connector without clusterRef indexed as %v", got)
	}
}
