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

package kedascale

import (
	"context"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// One sink whose lag KEDA cannot read must not blind the autoscaler for the
// others. KEDA's principal may describe every topic but only the group of
// sink "orders": Kafka refuses it sink "audit"'s group (GROUP_AUTHORIZATION_FAILED,
// kfake's real ACL check), so KEDA's kafka scaler fails both of audit's
// triggers on every read. With the composite formula alone ("a + b" over
// every trigger) KEDA answered the HPA with an error on every read and the
// workers stayed where they were, however much lag "orders" built. Now, for
// its first failureThreshold reads the HPA holds (a blip is not a verdict),
// then audit counts as no lag and orders' 3000 asks for 3 workers; KEDA
// records audit's triggers as failing in the ScaledObject's status, where the
// operator reads them for the Autoscaling condition.
func TestAnUnreadableSinkDoesNotBlindTheAutoscaler(t *testing.T) {
	b := newBrokerACLs(t, true, []kfake.ACL{
		{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
		{Resource: kmsg.ACLResourceTypeGroup, Name: "connect-orders", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
	})
	ns := namespace(t)
	b.topic(t, "orders", 4, 1000)
	b.commit(t, "connect-orders", "orders", 4, 250) // lag 3000
	b.topic(t, "audit.logins", 2, 3000)             // lag 6000 that KEDA may not read
	b.topic(t, "audit.payments", 2, 3000)
	kcs := []v1alpha1.KafkaConnector{
		sink(ns, "orders", 4, map[string]string{"topics": "orders"}),
		sink(ns, "audit", 4, map[string]string{"topics": "audit.logins,audit.payments"}),
	}
	for _, kc := range kcs {
		b.join(t, kc.SinkGroup(), plugin.SplitList(kc.Spec.Config["topics"]), "")
	}
	so, ta, _ := derive(b.cluster(ns, 1, 20, 1000), kcs)
	t.Logf("formula %s; fallback %+v", so.Spec.Advanced.ScalingModifiers.Formula, so.Spec.Fallback)
	ev := newEvaluator(t, ns, so, ta, b.secrets(ns))

	threshold := autoscaling.FallbackFailureThreshold
	var got evaluation
	var err error
	reads := 0
	for reads < threshold+3 {
		reads++
		if got, err = ev.read(); err == nil {
			break
		}
		t.Logf("read %d: %v", reads, err)
	}
	if err != nil {
		t.Fatalf("after %d reads KEDA still answers the composite with an error (%v): one unreadable sink blinds the autoscaler", reads, err)
	}
	if reads <= threshold {
		t.Fatalf("KEDA answered at read %d, before the %d failed reads after which an unreadable trigger counts as no lag", reads, threshold)
	}
	t.Logf("read %d: metrics %v → %d workers", reads, got.metrics, got.desired)
	if got.desired != 3 {
		t.Fatalf("the HPA asks for %d workers, want 3 (orders' lag 3000; audit unreadable counts as none, neither its cap nor the maximum): metrics %v", got.desired, got.metrics)
	}

	// What the operator reads: KEDA's health of each trigger, in the stored status.
	var stored kedav1alpha1.ScaledObject
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(so), &stored); err != nil {
		t.Fatal(err)
	}
	unread := autoscaling.UnreadableTriggers(&stored)
	var names []string
	for _, u := range unread {
		names = append(names, u.String())
		if u.Connector != "audit" || u.Failures <= int32(threshold) {
			t.Errorf("unreadable trigger %s: want connector audit with more than %d failures", u, threshold)
		}
	}
	t.Logf("unreadable: %s", strings.Join(names, "; "))
	if len(unread) != 2 || unread[0].Topic != "audit.logins" || unread[1].Topic != "audit.payments" {
		t.Fatalf("unreadable triggers %v, want audit's two (health %v)", unread, stored.Status.Health)
	}
	cond := autoscaling.AutoscalingCondition(autoscaling.ConditionInput{Enabled: true, KEDAServed: true, Triggers: len(stored.Spec.Triggers),
		ScaledObjectReady: &metav1.Condition{Status: metav1.ConditionTrue}, Unreadable: unread}, 1)
	if cond.Reason != v1alpha1.ReasonTriggersUnreadable || !strings.Contains(cond.Message, "connector audit, topic audit.payments") {
		t.Fatalf("condition %s: %s", cond.Reason, cond.Message)
	}
	t.Logf("condition %s: %s", cond.Reason, cond.Message)

	// Once KEDA may read audit's group, its lag counts again: orders 3000 + audit's 6000
	// capped at its 4 tasks × 1000 = 7000.
	acl := kadm.NewACLs().Allow("User:" + b.auth.user).AllowHosts("*").Groups("connect-audit").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := b.adm.CreateACLs(ctx, acl)
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("granting KEDA's user the group: %v", err)
	}
	for i := 0; ; i++ {
		got, err = ev.read()
		if err == nil && got.desired == 7 {
			break
		}
		if i == 5 {
			t.Fatalf("after the grant: %d workers (err %v, metrics %v), want 7", got.desired, err, got.metrics)
		}
	}
	t.Logf("after the grant: metrics %v → %d workers", got.metrics, got.desired)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(so), &stored); err != nil {
		t.Fatal(err)
	}
	if u := autoscaling.UnreadableTriggers(&stored); len(u) != 0 {
		t.Fatalf("still unreadable after the grant: %v", u)
	}
}
