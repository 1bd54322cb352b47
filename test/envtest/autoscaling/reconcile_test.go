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

package autoscalingtest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

type servedFlag bool

func (s servedFlag) Served() bool { return bool(s) }

// cachedClient reads connectors through a cache with the shared index, as
// the manager's client does; it lives as long as ctx.
func cachedClient(ctx context.Context, t *testing.T) client.Client {
	t.Helper()
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := clusterkit.SetupIndexes(ctx, c); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	cl, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	// Inform on connectors before waiting for the sync.
	if _, err := c.GetInformer(ctx, &v1alpha1.KafkaConnector{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	return cl
}

// runningSink creates a FileSink KafkaConnector on cluster "orders" reading
// topic "orders", with the status of a running one, and waits until cl's
// cache sees it.
func runningSink(ctx context.Context, t *testing.T, cl client.Client, ns, name string, tasksMax, effective int32) *v1alpha1.KafkaConnector {
	t.Helper()
	sink := &v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: "orders"}, Class: "FileSink", TasksMax: ptr.To(tasksMax),
			Config: map[string]string{"topics": "orders", "file": "/data/o"}},
	}
	if err := k8sClient.Create(ctx, sink); err != nil {
		t.Fatal(err)
	}
	sink.Status = v1alpha1.KafkaConnectorStatus{State: v1alpha1.ConnectorStateRunning, TasksMax: tasksMax, EffectiveTasks: effective}
	if err := k8sClient.Status().Update(ctx, sink); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "the cache to see the running sink", func() bool {
		var kc v1alpha1.KafkaConnector
		return cl.Get(ctx, client.ObjectKeyFromObject(sink), &kc) == nil && kc.Status.State == v1alpha1.ConnectorStateRunning
	})
	return sink
}

// TestConvergerFollowsConnectors drives the Converger (the
// clusterkit.Autoscaler) against a real API server with KEDA's CRDs:
// the ScaledObject and TriggerAuthentication appear owned by the cluster,
// a repeated loop writes nothing, triggers and bounds follow the
// connectors, and turning autoscaling off removes both objects.
func TestConvergerFollowsConnectors(t *testing.T) {
	envkit.InstallKEDA(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := cachedClient(ctx, t)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "converge-"}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns.Name},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka: v1alpha1.KafkaConnection{BootstrapServers: "broker-0.kafka.svc:9093",
				SASL: &v1alpha1.KafkaSASL{Mechanism: v1alpha1.SASLMechanismPlain,
					Username: v1alpha1.SecretKeyRef{Name: "sasl", Key: "user"}, Password: v1alpha1.SecretKeyRef{Name: "sasl", Key: "password"}}},
			MaxTasksPerWorker: ptr.To[int32](2),
			Autoscaling:       &v1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](3)},
		},
	}
	if err := k8sClient.Create(ctx, cc); err != nil {
		t.Fatal(err)
	}
	sink := runningSink(ctx, t, cl, ns.Name, "archive", 10, 4)

	// KEDA's objects are read straight from the API server (no informer on
	// optional CRDs), connectors through the cache.
	conv := &autoscaling.Converger{Client: cl, APIReader: k8sClient, KEDA: servedFlag(true)}
	res, err := conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 1, Tasks: 4}, "orders-connect")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Active || res.Autoscaling.Reason != v1alpha1.ReasonScaledObjectNotReady || !res.CapacityRaised.Status || res.CapacityRaised.Reason != v1alpha1.ReasonTaskFloor {
		t.Fatalf("result %+v", res)
	}
	so := &kedav1alpha1.ScaledObject{}
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "orders-connect"}, so); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(so, cc) || *so.Spec.MinReplicaCount != 2 || *so.Spec.MaxReplicaCount != 3 || len(so.Spec.Triggers) != 1 ||
		so.Spec.Triggers[0].Metadata["consumerGroup"] != "connect-archive" || so.Spec.Triggers[0].AuthenticationRef == nil {
		t.Fatalf("ScaledObject %+v owners %+v", so.Spec, so.OwnerReferences)
	}
	ta := &kedav1alpha1.TriggerAuthentication{}
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "orders-connect-kafka"}, ta); err != nil || !metav1.IsControlledBy(ta, cc) {
		t.Fatalf("TriggerAuthentication: %v %+v", err, ta.OwnerReferences)
	}

	// A second loop with nothing changed writes nothing.
	rv := so.ResourceVersion
	if _, err := conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 1, Tasks: 4}, "orders-connect"); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(so), so); err != nil || so.ResourceVersion != rv {
		t.Fatalf("a no-op loop rewrote the ScaledObject (%v, rv %s -> %s)", err, rv, so.ResourceVersion)
	}

	// KEDA reports Ready: the condition follows.
	so.Status.Conditions = kedav1alpha1.Conditions{{Type: kedav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ScaledObjectReady"}}
	if err := k8sClient.Status().Update(ctx, so); err != nil {
		t.Fatal(err)
	}
	res, err = conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 1, Tasks: 4}, "orders-connect")
	if err != nil || !res.Autoscaling.Status || res.Autoscaling.Reason != v1alpha1.ReasonScaledObjectReady {
		t.Fatalf("after KEDA's Ready: %+v %v", res, err)
	}

	// A topics.regex sink: its topics come from the broker's list (the
	// Topics hook) and follow it from one loop to the next; no trigger is
	// ever without a topic.
	regex := &v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: "audit", Namespace: ns.Name},
		Spec: v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: "orders"}, Class: "FileSink", TasksMax: ptr.To[int32](2),
			Config: map[string]string{"topics.regex": `audit\..*`, "file": "/data/a"}},
	}
	if err := k8sClient.Create(ctx, regex); err != nil {
		t.Fatal(err)
	}
	regex.Status = v1alpha1.KafkaConnectorStatus{State: v1alpha1.ConnectorStateRunning, TasksMax: 2, EffectiveTasks: 2}
	if err := k8sClient.Status().Update(ctx, regex); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "the cache to see the regex sink", func() bool {
		var kc v1alpha1.KafkaConnector
		return cl.Get(ctx, client.ObjectKeyFromObject(regex), &kc) == nil && kc.Status.State == v1alpha1.ConnectorStateRunning
	})
	broker := []string{"orders", "audit.logins"}
	conv.Topics = func(context.Context, *v1alpha1.ConnectCluster) ([]string, error) { return broker, nil }
	topicsOf := func() []string {
		t.Helper()
		if _, err := conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 2, Tasks: 6}, "orders-connect"); err != nil {
			t.Fatal(err)
		}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(so), so); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tr := range so.Spec.Triggers {
			out = append(out, tr.Metadata["consumerGroup"]+"/"+tr.Metadata["topic"])
		}
		return out
	}
	if got := topicsOf(); !reflect.DeepEqual(got, []string{"connect-archive/orders", "connect-audit/audit.logins"}) {
		t.Fatalf("triggers %v", got)
	}
	broker = append(broker, "audit.payments")
	if got := topicsOf(); !reflect.DeepEqual(got, []string{"connect-archive/orders", "connect-audit/audit.logins", "connect-audit/audit.payments"}) {
		t.Fatalf("triggers after a new topic %v", got)
	}
	// A change of the triggers' metric names settles in two generations
	// (settle.go): the formula carries a neutral " + 0" until KEDA's status
	// lists the new triggers' metric names, and the loop asks to look again
	// soon; then the formula loses it, which makes KEDA rebuild its scalers
	// from a ScaledObject whose status has the right names.
	const formula = "min((lag_archive__orders ?? 0), 4000) + min((lag_audit__audit_logins ?? 0) + (lag_audit__audit_payments ?? 0), 2000)"
	if f := so.Spec.Advanced.ScalingModifiers.Formula; f != formula+" + 0" {
		t.Fatalf("formula while KEDA has not recorded the new metric names %q", f)
	}
	res, err = conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 2, Tasks: 6}, "orders-connect")
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > 30*time.Second {
		t.Fatalf("a settling ScaledObject: %+v %v", res, err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(so), so); err != nil {
		t.Fatal(err)
	}
	gen := so.Generation
	so.Status.ExternalMetricNames = []string{"s0-kafka-orders", "s1-kafka-audit-logins", "s2-kafka-audit-payments"} // as KEDA records them
	if err := k8sClient.Status().Update(ctx, so); err != nil {
		t.Fatal(err)
	}
	res, err = conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 2, Tasks: 6}, "orders-connect")
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("after KEDA recorded the metric names: %+v %v", res, err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(so), so); err != nil {
		t.Fatal(err)
	}
	if f := so.Spec.Advanced.ScalingModifiers.Formula; f != formula || so.Generation != gen+1 {
		t.Fatalf("settled: formula %q generation %d, want %q and %d", f, so.Generation, formula, gen+1)
	}
	// Kafka not answering: the triggers use the topics the workers report.
	conv.Topics = func(context.Context, *v1alpha1.ConnectCluster) ([]string, error) { return nil, errors.New("no broker") }
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(regex), regex); err != nil {
		t.Fatal(err)
	}
	regex.Status.Topics = []string{"audit.logins"}
	if err := k8sClient.Status().Update(ctx, regex); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "the cache to see the reported topics", func() bool {
		var kc v1alpha1.KafkaConnector
		return cl.Get(ctx, client.ObjectKeyFromObject(regex), &kc) == nil && len(kc.Status.Topics) == 1
	})
	if got := topicsOf(); !reflect.DeepEqual(got, []string{"connect-archive/orders", "connect-audit/audit.logins"}) {
		t.Fatalf("triggers from status.topics %v", got)
	}
	if err := k8sClient.Delete(ctx, regex); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "the cache to lose the regex sink", func() bool {
		return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(regex), &v1alpha1.KafkaConnector{}))
	})

	// The sink stops: no trigger is left, so no ScaledObject.
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sink), sink); err != nil {
		t.Fatal(err)
	}
	sink.Spec.State = v1alpha1.ConnectorTargetStopped
	if err := k8sClient.Update(ctx, sink); err != nil {
		t.Fatal(err)
	}
	sink.Status.State, sink.Status.EffectiveTasks = v1alpha1.ConnectorStateStopped, 0
	if err := k8sClient.Status().Update(ctx, sink); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "the cache to see the stopped sink", func() bool {
		var kc v1alpha1.KafkaConnector
		return cl.Get(ctx, client.ObjectKeyFromObject(sink), &kc) == nil && kc.Status.State == v1alpha1.ConnectorStateStopped
	})
	res, err = conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{Connectors: 1, Tasks: 0}, "orders-connect")
	if err != nil || res.Active || res.Autoscaling.Reason != v1alpha1.ReasonNoSinkConnectors {
		t.Fatalf("stopped sink: %+v %v", res, err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(so), &kedav1alpha1.ScaledObject{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ScaledObject outlived its last trigger: %v", err)
	}

	// Autoscaling off: nothing derived is left; KEDA missing: said so.
	cc.Spec.Autoscaling.Enabled = false
	res, err = conv.ReconcileAutoscaling(ctx, cc, clusterkit.Totals{}, "orders-connect")
	if err != nil || res.Active || res.Autoscaling.Reason != v1alpha1.ReasonAutoscalingDisabled {
		t.Fatalf("disabled: %+v %v", res, err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(ta), &kedav1alpha1.TriggerAuthentication{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the TriggerAuthentication outlived autoscaling: %v", err)
	}
	cc.Spec.Autoscaling.Enabled = true
	res, err = (&autoscaling.Converger{Client: cl, KEDA: servedFlag(false)}).ReconcileAutoscaling(ctx, cc, clusterkit.Totals{}, "orders-connect")
	if err != nil || res.Active || res.Autoscaling.Reason != v1alpha1.ReasonKEDANotInstalled {
		t.Fatalf("KEDA missing: %+v %v", res, err)
	}
}
