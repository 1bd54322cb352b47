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
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestKafkaReadsOnKfake: the production hooks read a real in-process broker
// through the cluster's spec.kafka; a missing SASL Secret is an error naming it.
func TestKafkaReadsOnKfake(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	reads := KafkaReads{Reader: fake.NewClientBuilder().WithScheme(scheme).Build()}
	cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"},
		Spec: v1alpha1.ConnectClusterSpec{Kafka: v1alpha1.KafkaConnection{BootstrapServers: strings.Join(cluster.ListenAddrs(), ",")}}}

	counts, err := reads.Partitions(context.Background(), cc, []string{"orders"})
	if err != nil || counts["orders"] != 3 {
		t.Fatalf("Partitions = %v, %v", counts, err)
	}
	if lag, err := reads.Lag(context.Background(), cc, "connect-nobody"); err != nil || lag != nil {
		t.Fatalf("Lag of a group without commits = %v, %v", lag, err)
	}

	cc.Spec.Kafka.SASL = &v1alpha1.KafkaSASL{Mechanism: v1alpha1.SASLMechanismPlain,
		Username: v1alpha1.SecretKeyRef{Name: "missing", Key: "user"}, Password: v1alpha1.SecretKeyRef{Name: "missing", Key: "password"}}
	if _, err := reads.Partitions(context.Background(), cc, []string{"orders"}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing SASL Secret: %v", err)
	}
}
