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
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// The ExactlyOnce condition reports a real refusal: kfake with ACLs on
// (EnableACLs) and two SASL users, one allowed to WRITE the transactional
// ids with the cluster's group prefix and one without any transactional-id
// ACL. The probe (InitProducerID, as a starting source task sends it) is
// refused for the second with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and the
// condition says so and names the prefix to grant.
func TestExactlyOnceConditionReportsTransactionalIDDenial(t *testing.T) {
	allow := func(op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTransactionalId, Name: "orders-", Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: op, Allow: true}
	}
	topics := kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "allowed", "allowed-pw", topics, allow(kmsg.ACLOperationWrite), allow(kmsg.ACLOperationDescribe)),
		kfake.User("PLAIN", "denied", "denied-pw", topics))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	cc.Spec.GroupID = ptr.To("orders")
	cc.Spec.ExactlyOnce = ptr.To(true)
	id := ProbeTransactionalID(cc)
	if id != "orders-conveyor-operator-check-0" {
		t.Fatalf("probe id %q", id)
	}
	probe := func(user, pass string) error {
		admin, err := NewKadmAdmin(clusterkit.KafkaConnection{BootstrapServers: c.ListenAddrs(), SASL: plain.Auth{User: user, Pass: pass}.AsMechanism()})
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return admin.(TransactionProber).ProbeTransactions(ctx, id)
	}

	st, reason, msg := ExactlyOnceCondition(cc.ExactlyOnceSourceSupport(), cc.GroupID(), id, probe("allowed", "allowed-pw"))
	if st != metav1.ConditionTrue || reason != v1alpha1.ReasonTransactionsAllowed {
		t.Fatalf("allowed principal: %s %s %q", st, reason, msg)
	}
	err = probe("denied", "denied-pw")
	st, reason, msg = ExactlyOnceCondition(cc.ExactlyOnceSourceSupport(), cc.GroupID(), id, err)
	if st != metav1.ConditionFalse || reason != v1alpha1.ReasonTransactionsDenied || !strings.Contains(msg, `"orders-"`) {
		t.Fatalf("denied principal (probe error %v): %s %s %q, want False/TransactionsDenied naming the prefix orders-", err, st, reason, msg)
	}
	t.Logf("denied: %s", msg)

	cc.Spec.ExactlyOnce = nil
	if st, reason, _ := ExactlyOnceCondition(cc.ExactlyOnceSourceSupport(), cc.GroupID(), id, nil); st != metav1.ConditionFalse || reason != v1alpha1.ReasonExactlyOnceDisabled {
		t.Fatalf("exactly-once off: %s %s", st, reason)
	}
	cc.Spec.Config = map[string]string{"exactly.once.source.support": "preparing"}
	if st, _, _ := ExactlyOnceCondition(cc.ExactlyOnceSourceSupport(), cc.GroupID(), id, nil); st != metav1.ConditionTrue {
		t.Fatalf("preparing through config: %s", st)
	}
}

// spec.exactlyOnce renders exactly.once.source.support=enabled and makes
// sink consumers read read_committed, unless spec.config says otherwise.
func TestBuildWorkerConfigExactlyOnce(t *testing.T) {
	cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	cc.Spec.Kafka.BootstrapServers = "k:9092"
	cc.Spec.ExactlyOnce = ptr.To(true)
	cfg, err := BuildWorkerConfig(cc, WorkerConfigInputs{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ExactlyOnceSourceSupport != "enabled" || cfg.Extra[KeyConsumerIsolationLevel] != "read_committed" {
		t.Fatalf("exactly.once.source.support=%q consumer.isolation.level=%q", cfg.ExactlyOnceSourceSupport, cfg.Extra[KeyConsumerIsolationLevel])
	}
	cc.Spec.Config = map[string]string{KeyConsumerIsolationLevel: "read_uncommitted"}
	if cfg, err = BuildWorkerConfig(cc, WorkerConfigInputs{}); err != nil || cfg.Extra[KeyConsumerIsolationLevel] != "read_uncommitted" {
		t.Fatalf("spec.config's isolation level was overridden: %v %q", err, cfg.Extra[KeyConsumerIsolationLevel])
	}
	cc.Spec.ExactlyOnce = nil
	if cfg, err = BuildWorkerConfig(cc, WorkerConfigInputs{}); err != nil || cfg.ExactlyOnceSourceSupport != "disabled" {
		t.Fatalf("without spec.exactlyOnce: %v %q", err, cfg.ExactlyOnceSourceSupport)
	}
}
