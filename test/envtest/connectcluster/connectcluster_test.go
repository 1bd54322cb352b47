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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	cc "github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const waitTimeout = 30 * time.Second

// newNamespace creates this run's namespace of base (see namespaces).
func newNamespace(t *testing.T, base string) string {
	t.Helper()
	name, err := namespaces.Next(base)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// eventually waits until f returns nil, within waitTimeout.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	testkit.EventuallyNoError(t, waitTimeout, what, f)
}

func newCluster(ns, name string, bootstrap []string) *v1alpha1.ConnectCluster {
	return &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ConnectClusterSpec{
			Replicas: ptr[int32](2),
			Kafka:    v1alpha1.KafkaConnection{BootstrapServers: strings.Join(bootstrap, ",")},
			Storage:  v1alpha1.StorageSpec{OffsetPartitions: ptr[int32](5), StatusPartitions: ptr[int32](2)},
		},
	}
}

func create(t *testing.T, o client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// updateCluster changes a cluster's spec, retrying when the operator's
// status writes got in between.
func updateCluster(t *testing.T, ns, name string, change func(*v1alpha1.ConnectCluster)) {
	t.Helper()
	eventually(t, "updating ConnectCluster "+name, func() error {
		c := getCluster(t, ns, name)
		change(c)
		return k8s.Update(context.Background(), c)
	})
}

func getCluster(t *testing.T, ns, name string) *v1alpha1.ConnectCluster {
	t.Helper()
	c := &v1alpha1.ConnectCluster{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
		t.Fatalf("reading ConnectCluster %s/%s: %v", ns, name, err)
	}
	return c
}

// condition returns an error unless the cluster's condition has the status
// (and reason, when given) at the current generation.
func condition(ns, name, typ string, status metav1.ConditionStatus, reason string) func() error {
	return func() error {
		c := &v1alpha1.ConnectCluster{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, typ)
		switch {
		case cond == nil:
			return fmt.Errorf("no %s condition yet (conditions %v)", typ, c.Status.Conditions)
		case cond.Status != status || (reason != "" && cond.Reason != reason):
			return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, cond.Status, cond.Reason, cond.Message, status, reason)
		case cond.ObservedGeneration != c.Generation:
			return fmt.Errorf("%s is for generation %d, the cluster is at %d", typ, cond.ObservedGeneration, c.Generation)
		}
		return nil
	}
}

func getDeployment(ns, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name + "-connect"}, d)
	return d, err
}

// markDeploymentReady writes what the deployment controller and kubelets
// would: every desired replica exists, runs the current template and is ready.
func markDeploymentReady(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "the Deployment status update", func() error {
		d, err := getDeployment(ns, name)
		if err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		return k8s.Status().Update(context.Background(), d)
	})
}

func children(ns, name string) []client.Object {
	key := name + "-connect"
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key + "-config"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-rest-token"}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key}},
	}
}

func describeTopics(t *testing.T, addrs []string, names ...string) map[string]cc.ObservedTopic {
	t.Helper()
	admin, err := cc.NewKadmAdmin(clusterkit.KafkaConnection{BootstrapServers: addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := admin.DescribeTopics(ctx, names...)
	if err != nil {
		t.Fatalf("describing topics: %v", err)
	}
	return got
}

// eventReasons lists the reasons of the events about a cluster.
func eventReasons(ns, name string) (map[string]int, error) {
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "ConnectCluster" && e.Regarding.Name == name {
			out[e.Reason]++
		}
	}
	return out, nil
}

func TestCreateChildrenTopicsAndReady(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "create")
	cluster := newCluster(ns, "orders", kafka.ListenAddrs())
	create(t, cluster)

	// Every child exists and is controlled by the cluster.
	eventually(t, "the children with owner references", func() error {
		owner := getCluster(t, ns, "orders")
		for _, o := range children(ns, "orders") {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return fmt.Errorf("%T %s: %w", o, o.GetName(), err)
			}
			if !metav1.IsControlledBy(o, owner) {
				return fmt.Errorf("%T %s is not controlled by the cluster: %v", o, o.GetName(), o.GetOwnerReferences())
			}
		}
		return nil
	})

	// The internal topics exist on Kafka as the spec asks.
	group := ns + ".orders"
	topics := describeTopics(t, kafka.ListenAddrs(), group+"-configs", group+"-offsets", group+"-status")
	for name, want := range map[string]int32{group + "-configs": 1, group + "-offsets": 5, group + "-status": 2} {
		o := topics[name]
		if !o.Exists || o.Partitions != want || o.ReplicationFactor != 3 || o.CleanupPolicy != "compact" {
			t.Errorf("topic %s is %+v, want %d partitions, replication 3, compacted", name, o, want)
		}
	}

	eventually(t, "Reconciled and TopicsReady", func() error {
		if err := condition(ns, "orders", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, v1alpha1.ReasonReconcileSucceeded)(); err != nil {
			return err
		}
		return condition(ns, "orders", v1alpha1.ConnectClusterTopicsReady, metav1.ConditionTrue, v1alpha1.ReasonTopicsReady)()
	})
	eventually(t, "Ready=False while no worker is ready", condition(ns, "orders", v1alpha1.ConnectClusterReady, metav1.ConditionFalse, v1alpha1.ReasonWorkersNotReady))

	got := getCluster(t, ns, "orders")
	if got.Status.GroupID != group || got.Status.RestURL != "http://orders-connect."+ns+".svc:8083" ||
		got.Status.Selector != "app.kubernetes.io/name=conveyor-worker,connect.conveyor.dev/cluster=orders" ||
		got.Status.ObservedGeneration != got.Generation || got.Status.DesiredReplicas != 2 {
		t.Errorf("status %+v", got.Status)
	}
	if got.Spec.GroupID != nil {
		t.Error("the operator wrote spec.groupId; it must never write the spec")
	}

	d, err := getDeployment(ns, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != workerImage {
		t.Errorf("Deployment replicas %d image %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
	if d.Spec.Template.Annotations[clusterkit.AnnotationConfigHash] == "" {
		t.Error("the pod template carries no config hash")
	}
	var np networkingv1.NetworkPolicy
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orders-connect"}, &np); err != nil {
		t.Fatal(err)
	}
	if from := np.Spec.Ingress[0].From; len(from) != 2 || from[1].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != operatorNamespace {
		t.Errorf("REST ingress peers %+v, want the workers and the operator's namespace", from)
	}

	// The workers become ready: so does the cluster.
	markDeploymentReady(t, ns, "orders")
	eventually(t, "Ready=True", condition(ns, "orders", v1alpha1.ConnectClusterReady, metav1.ConditionTrue, v1alpha1.ReasonWorkersReady))
	got = getCluster(t, ns, "orders")
	if got.Status.Replicas != 2 || got.Status.ReadyReplicas != 2 {
		t.Errorf("status replicas %d ready %d, want 2 and 2", got.Status.Replicas, got.Status.ReadyReplicas)
	}

	// Events on state changes: workers created, topics created; once each.
	eventually(t, "events", func() error {
		reasons, err := eventReasons(ns, "orders")
		if err != nil {
			return err
		}
		if reasons[cc.EventWorkersCreated] != 1 || reasons[cc.EventTopicsCreated] != 1 {
			return fmt.Errorf("event reasons %v, want one %s and one %s", reasons, cc.EventWorkersCreated, cc.EventTopicsCreated)
		}
		return nil
	})
}

func TestSpecChangeRollsPodsAndKeepsToken(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "rollout")
	create(t, newCluster(ns, "billing", kafka.ListenAddrs()))
	var hash1 string
	eventually(t, "the Deployment", func() error {
		d, err := getDeployment(ns, "billing")
		if err != nil {
			return err
		}
		hash1 = d.Spec.Template.Annotations[clusterkit.AnnotationConfigHash]
		return nil
	})
	var secret corev1.Secret
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "billing-rest-token"}, &secret); err != nil {
		t.Fatal(err)
	}
	token := string(secret.Data[v1alpha1.RestTokenSecretKey])
	if len(token) < 40 {
		t.Fatalf("generated token %d characters long, want a random 32-byte token", len(token))
	}

	updateCluster(t, ns, "billing", func(c *v1alpha1.ConnectCluster) {
		c.Spec.Config = map[string]string{"offset.flush.interval.ms": "2500"}
		c.Spec.Rebalance.LostWorkerDelay = &metav1.Duration{Duration: 7 * time.Second}
	})
	eventually(t, "a new config hash on the pod template", func() error {
		d, err := getDeployment(ns, "billing")
		if err != nil {
			return err
		}
		if h := d.Spec.Template.Annotations[clusterkit.AnnotationConfigHash]; h == hash1 {
			return fmt.Errorf("hash still %s", h)
		}
		return nil
	})
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "billing-connect-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	props := cm.Data[cc.ConfigFileName]
	for _, want := range []string{"offset.flush.interval.ms=2500", "scheduled.rebalance.max.delay.ms=7000", "bootstrap.servers=" + strings.Join(kafka.ListenAddrs(), ",")} {
		if !strings.Contains(props, want) {
			t.Errorf("worker.properties lacks %q:\n%s", want, props)
		}
	}
	eventually(t, "Reconciled at the new generation", condition(ns, "billing", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, ""))
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "billing-rest-token"}, &secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data[v1alpha1.RestTokenSecretKey]) != token {
		t.Fatal("the REST token changed on a spec change; it must never rotate by accident")
	}
}

func TestDeleteGarbageCollectsChildren(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "delete")
	create(t, newCluster(ns, "audit", kafka.ListenAddrs()))
	eventually(t, "the children", func() error {
		for _, o := range children(ns, "audit") {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return fmt.Errorf("%T %s: %w", o, o.GetName(), err)
			}
		}
		return nil
	})
	if err := k8s.Delete(ctx, getCluster(t, ns, "audit")); err != nil {
		t.Fatal(err)
	}
	// kube-controller-manager's garbage collector follows the owner references.
	eventually(t, "every child garbage-collected", func() error {
		for _, o := range children(ns, "audit") {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o)
			if err == nil {
				return fmt.Errorf("%T %s still exists", o, o.GetName())
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

func TestGroupConflict(t *testing.T) {
	ctx := context.Background()
	nsA := newNamespace(t, "team-a")
	nsB := newNamespace(t, "team-b")
	group := testkit.Unique(t, "shared-group") // the second cluster keeps it
	first := newCluster(nsA, "connect", kafka.ListenAddrs())
	first.Spec.GroupID = ptr(group)
	create(t, first)
	eventually(t, "the first cluster's Deployment", func() error { _, err := getDeployment(nsA, "connect"); return err })

	// Same group on the same Kafka, written differently (another address
	// first, upper case): refused, naming the first.
	second := newCluster(nsB, "connect", nil)
	second.Spec.Kafka.BootstrapServers = "other-kafka.example:9092," + strings.ToUpper(kafka.ListenAddrs()[0])
	second.Spec.GroupID = ptr(group)
	create(t, second)
	eventually(t, "GroupConflict on the second", condition(nsB, "connect", v1alpha1.ConnectClusterGroupConflict, metav1.ConditionTrue, v1alpha1.ReasonGroupInUse))
	c := getCluster(t, nsB, "connect")
	if msg := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConnectClusterGroupConflict).Message; !strings.Contains(msg, nsA+"/connect") {
		t.Errorf("conflict message %q does not name %s/connect", msg, nsA)
	}
	if err := condition(nsB, "connect", v1alpha1.ConnectClusterReady, metav1.ConditionFalse, v1alpha1.ReasonGroupInUse)(); err != nil {
		t.Error(err)
	}
	if _, err := getDeployment(nsB, "connect"); !apierrors.IsNotFound(err) {
		t.Errorf("the refused cluster has a Deployment (err %v)", err)
	}
	if err := condition(nsA, "connect", v1alpha1.ConnectClusterGroupConflict, metav1.ConditionFalse, v1alpha1.ReasonGroupUnique)(); err != nil {
		t.Errorf("the first cluster: %v", err)
	}
	eventually(t, "a GroupConflict event", func() error {
		r, err := eventReasons(nsB, "connect")
		if err != nil || r[cc.EventGroupConflict] != 1 {
			return fmt.Errorf("events %v, %v", r, err)
		}
		return nil
	})

	// The first goes away: the second takes the group.
	if err := k8s.Delete(ctx, getCluster(t, nsA, "connect")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second cluster's Deployment", func() error { _, err := getDeployment(nsB, "connect"); return err })
	eventually(t, "GroupConflict cleared", condition(nsB, "connect", v1alpha1.ConnectClusterGroupConflict, metav1.ConditionFalse, v1alpha1.ReasonGroupUnique))
}

func TestKafkaDownAndBack(t *testing.T) {
	ctx := context.Background()
	own, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	addrs := own.ListenAddrs()
	ns := newNamespace(t, "outage")
	cluster := newCluster(ns, "events", addrs)
	cluster.Spec.Storage.ReplicationFactor = ptr[int32](1)
	create(t, cluster)
	eventually(t, "TopicsReady", condition(ns, "events", v1alpha1.ConnectClusterTopicsReady, metav1.ConditionTrue, ""))

	own.Close()
	eventually(t, "Reconciled=False KafkaUnreachable", condition(ns, "events", v1alpha1.ConnectClusterReconciled, metav1.ConditionFalse, v1alpha1.ReasonKafkaUnreachable))
	c := getCluster(t, ns, "events")
	msg := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConnectClusterReconciled).Message
	if !strings.Contains(msg, addrs[0]) {
		t.Errorf("message %q does not name the bootstrap servers", msg)
	}
	if err := condition(ns, "events", v1alpha1.ConnectClusterTopicsReady, metav1.ConditionFalse, v1alpha1.ReasonKafkaUnreachable)(); err != nil {
		t.Error(err)
	}
	// The workers stay: an outage is no reason to tear them down.
	if _, err := getDeployment(ns, "events"); err != nil {
		t.Errorf("the Deployment went away during the outage: %v", err)
	}
	// Meanwhile the operator keeps serving other clusters.
	other := newNamespace(t, "unaffected")
	create(t, newCluster(other, "fine", kafka.ListenAddrs()))
	eventually(t, "another cluster reconciled during the outage", condition(other, "fine", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, ""))

	// Kafka returns on the same address, empty: the topics are created again.
	port := addrs[0][strings.LastIndex(addrs[0], ":")+1:]
	var p int
	fmt.Sscan(port, &p)
	back, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(p))
	if err != nil {
		t.Fatalf("restarting kfake on port %d: %v", p, err)
	}
	defer back.Close()
	eventually(t, "Reconciled=True after Kafka returned", condition(ns, "events", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, ""))
	topics := describeTopics(t, back.ListenAddrs(), ns+".events-configs")
	if !topics[ns+".events-configs"].Exists {
		t.Error("the config topic was not recreated")
	}
	eventually(t, "TopicProblem and TopicsReady events", func() error {
		r, err := eventReasons(ns, "events")
		if err != nil || r[cc.EventTopicProblem] != 1 || r[cc.EventTopicsReady] != 1 {
			return fmt.Errorf("events %v, %v", r, err)
		}
		return nil
	})
	_ = ctx
}

func TestTopicInvalid(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "badtopic")
	statusTopic := ns + ".ledger-status"
	// Someone created the status topic by hand, not compacted.
	adm := newAdmin(t)
	if _, err := adm.CreateTopic(ctx, 2, 3, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, statusTopic); err != nil {
		t.Fatal(err)
	}
	create(t, newCluster(ns, "ledger", kafka.ListenAddrs()))
	eventually(t, "Reconciled=False TopicInvalid", condition(ns, "ledger", v1alpha1.ConnectClusterReconciled, metav1.ConditionFalse, v1alpha1.ReasonTopicInvalid))
	c := getCluster(t, ns, "ledger")
	msg := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConnectClusterTopicsReady).Message
	if !strings.Contains(msg, statusTopic) || !strings.Contains(msg, `cleanup.policy is "delete"`) {
		t.Errorf("message %q does not name the topic and its problem", msg)
	}
	if _, err := getDeployment(ns, "ledger"); !apierrors.IsNotFound(err) {
		t.Errorf("workers were created on a wrong internal topic (err %v)", err)
	}
	// The user fixes the topic: the cluster proceeds.
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, statusTopic); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment after the fix", func() error { _, err := getDeployment(ns, "ledger"); return err })
	eventually(t, "Reconciled=True", condition(ns, "ledger", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, ""))
}

func newAdmin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "scale")
	cluster := newCluster(ns, "sinks", kafka.ListenAddrs())
	cluster.Spec.Replicas = ptr[int32](1)
	create(t, cluster)
	eventually(t, "the Deployment", func() error { _, err := getDeployment(ns, "sinks"); return err })
	markDeploymentReady(t, ns, "sinks")
	eventually(t, "Ready", condition(ns, "sinks", v1alpha1.ConnectClusterReady, metav1.ConditionTrue, ""))

	// kubectl scale connectcluster/sinks --replicas=3
	scale := &autoscalingv1.Scale{}
	c := getCluster(t, ns, "sinks")
	if err := k8s.SubResource("scale").Get(ctx, c, scale); err != nil {
		t.Fatalf("reading the scale subresource: %v", err)
	}
	if scale.Status.Selector != "app.kubernetes.io/name=conveyor-worker,connect.conveyor.dev/cluster=sinks" || scale.Status.Replicas != 1 {
		t.Errorf("scale status %+v", scale.Status)
	}
	scale.Spec.Replicas = 3
	if err := k8s.SubResource("scale").Update(ctx, c, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling through the subresource: %v", err)
	}
	eventually(t, "3 replicas on the Deployment", func() error {
		d, err := getDeployment(ns, "sinks")
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	eventually(t, "Ready=False while the new workers start", condition(ns, "sinks", v1alpha1.ConnectClusterReady, metav1.ConditionFalse, v1alpha1.ReasonWorkersNotReady))
	markDeploymentReady(t, ns, "sinks")
	eventually(t, "3 ready replicas in status", func() error {
		c := getCluster(t, ns, "sinks")
		if c.Status.ReadyReplicas != 3 || c.Status.Replicas != 3 {
			return fmt.Errorf("status replicas %d ready %d", c.Status.Replicas, c.Status.ReadyReplicas)
		}
		return condition(ns, "sinks", v1alpha1.ConnectClusterReady, metav1.ConditionTrue, "")()
	})
	eventually(t, "a WorkersScaled event", func() error {
		r, err := eventReasons(ns, "sinks")
		if err != nil || r[cc.EventWorkersScaled] != 1 {
			return fmt.Errorf("events %v, %v", r, err)
		}
		return nil
	})
}

func TestCapacityFloorFromConnectorTotals(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "capacity")
	cluster := newCluster(ns, "etl", kafka.ListenAddrs())
	cluster.Spec.Replicas = ptr[int32](1)
	cluster.Spec.MaxTasksPerWorker = ptr[int32](2)
	create(t, cluster)
	eventually(t, "the Deployment", func() error { _, err := getDeployment(ns, "etl"); return err })

	// Two connectors report 3 and 2 effective tasks: ceil(5/2) = 3 workers.
	for i, tasks := range []int32{3, 2} {
		kc := &v1alpha1.KafkaConnector{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", i)},
			Spec:       v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: "etl"}, Class: "FileSink", TasksMax: ptr[int32](10)},
		}
		create(t, kc)
		// The KafkaConnector reconciler writes this status too (its workers
		// are unreachable here): retry on its concurrent writes.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(kc), kc); err != nil {
				return err
			}
			kc.Status.EffectiveTasks = tasks
			return k8s.Status().Update(ctx, kc)
		}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "3 replicas from the task floor", func() error {
		d, err := getDeployment(ns, "etl")
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return condition(ns, "etl", v1alpha1.ConnectClusterCapacityRaised, metav1.ConditionTrue, v1alpha1.ReasonTaskFloor)()
	})
	c := getCluster(t, ns, "etl")
	if *c.Spec.Replicas != 1 {
		t.Errorf("spec.replicas became %d: the operator must never write the spec", *c.Spec.Replicas)
	}
	if c.Status.Connectors != 2 || c.Status.Tasks != 5 || c.Status.DesiredReplicas != 3 {
		t.Errorf("status connectors %d tasks %d desired %d, want 2, 5, 3", c.Status.Connectors, c.Status.Tasks, c.Status.DesiredReplicas)
	}
	// Raising spec.replicas above the floor wins, and the condition clears.
	updateCluster(t, ns, "etl", func(c *v1alpha1.ConnectCluster) { c.Spec.Replicas = ptr[int32](4) })
	eventually(t, "4 replicas and CapacityRaised=False", func() error {
		d, err := getDeployment(ns, "etl")
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 4 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return condition(ns, "etl", v1alpha1.ConnectClusterCapacityRaised, metav1.ConditionFalse, v1alpha1.ReasonWithinRequested)()
	})
}

func TestWatchNamespaces(t *testing.T) {
	ctx := context.Background()
	ignored := newNamespace(t, "not-watched")
	watched := newNamespace(t, "scoped")
	create(t, newCluster(ignored, "outside", kafka.ListenAddrs()))
	create(t, newCluster(watched, "inside", kafka.ListenAddrs()))
	eventually(t, "the watched cluster reconciled", condition(watched, "inside", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, ""))
	eventually(t, "the watched cluster's Deployment", func() error { _, err := getDeployment(watched, "inside"); return err })

	// The operator's cache does not even hold the other namespace.
	var c v1alpha1.ConnectCluster
	if err := mgrCache.Get(ctx, types.NamespacedName{Namespace: ignored, Name: "outside"}, &c); err == nil {
		t.Fatal("the operator's cache serves a namespace outside --watch-namespaces")
	}
	outside := getCluster(t, ignored, "outside")
	if len(outside.Status.Conditions) != 0 || outside.Status.ObservedGeneration != 0 {
		t.Errorf("a cluster outside the watched namespaces got a status: %+v", outside.Status)
	}
	if _, err := getDeployment(ignored, "outside"); !apierrors.IsNotFound(err) {
		t.Errorf("a cluster outside the watched namespaces got a Deployment (err %v)", err)
	}
}

func TestRefusesToTakeOverForeignObjects(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "foreign")
	// A Service of the user's that happens to have the name the operator wants.
	mine := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-connect", Labels: map[string]string{"owner": "me"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	create(t, mine)
	create(t, newCluster(ns, "taken", kafka.ListenAddrs()))
	eventually(t, "Reconciled=False naming the Service", func() error {
		if err := condition(ns, "taken", v1alpha1.ConnectClusterReconciled, metav1.ConditionFalse, v1alpha1.ReasonReconcileFailed)(); err != nil {
			return err
		}
		msg := meta.FindStatusCondition(getCluster(t, ns, "taken").Status.Conditions, v1alpha1.ConnectClusterReconciled).Message
		if !strings.Contains(msg, "Service taken-connect already exists and is not managed by this ConnectCluster") {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	})
	var svc corev1.Service
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mine), &svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.OwnerReferences) != 0 || svc.Spec.Ports[0].Port != 80 {
		t.Errorf("the user's Service was changed: owners %v ports %v", svc.OwnerReferences, svc.Spec.Ports)
	}
}

func TestSASLCredentialsFromSecrets(t *testing.T) {
	ctx := context.Background()
	const user, pass = "conveyor", "s3cret-not-in-configmaps"
	secured, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, pass))
	if err != nil {
		t.Fatal(err)
	}
	defer secured.Close()
	ns := newNamespace(t, "sasl")
	cluster := newCluster(ns, "secure", secured.ListenAddrs())
	cluster.Spec.Storage.ReplicationFactor = ptr[int32](1)
	cluster.Spec.Kafka.SASL = &v1alpha1.KafkaSASL{
		Mechanism: v1alpha1.SASLMechanismScramSHA512,
		Username:  v1alpha1.SecretKeyRef{Name: "kafka-user", Key: "username"},
		Password:  v1alpha1.SecretKeyRef{Name: "kafka-user", Key: "password"},
	}
	create(t, cluster)

	// The Secret is missing: a clear condition, no workers.
	eventually(t, "Reconciled=False SecretNotFound", func() error {
		if err := condition(ns, "secure", v1alpha1.ConnectClusterReconciled, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound)(); err != nil {
			return err
		}
		msg := meta.FindStatusCondition(getCluster(t, ns, "secure").Status.Conditions, v1alpha1.ConnectClusterReconciled).Message
		if !strings.Contains(msg, "spec.kafka.sasl.username") || !strings.Contains(msg, `"kafka-user"`) {
			return fmt.Errorf("message %q does not name the field and the Secret", msg)
		}
		return nil
	})
	if _, err := getDeployment(ns, "secure"); !apierrors.IsNotFound(err) {
		t.Errorf("workers exist without their Kafka credentials (err %v)", err)
	}

	// The Secret appears: the operator authenticates with it and creates the topics.
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kafka-user"},
		StringData: map[string]string{"username": user, "password": pass},
	})
	eventually(t, "Reconciled=True with SASL", condition(ns, "secure", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, ""))
	cl, err := kgo.NewClient(kgo.SeedBrokers(secured.ListenAddrs()...), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, ns+".secure-configs")
	if err != nil || details[ns+".secure-configs"].Err != nil {
		t.Fatalf("config topic on the SASL Kafka: %v %v", err, details)
	}

	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "secure-connect-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	props := cm.Data[cc.ConfigFileName]
	for _, want := range []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-512", "sasl.username=" + user, "sasl.password.file=/etc/conveyor/kafka-sasl/password"} {
		if !strings.Contains(props, want) {
			t.Errorf("worker.properties lacks %q", want)
		}
	}
	if strings.Contains(props, pass) {
		t.Error("the SASL password leaked into the worker ConfigMap")
	}
	c := getCluster(t, ns, "secure")
	for _, cond := range c.Status.Conditions {
		if strings.Contains(cond.Message, pass) {
			t.Errorf("the SASL password leaked into condition %s", cond.Type)
		}
	}
}

func TestAutoscaledClusterLeavesReplicasToTheHPA(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "autoscaled")
	cluster := newCluster(ns, "elastic", kafka.ListenAddrs())
	cluster.Spec.Autoscaling = &v1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](6)}
	create(t, cluster)
	eventually(t, "Autoscaling=True from the autoscaler", condition(ns, "elastic", v1alpha1.ConnectClusterAutoscaling, metav1.ConditionTrue, v1alpha1.ReasonScaledObjectReady))
	d, err := getDeployment(ns, "elastic")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.ManagedFields {
		if f.Manager == clusterkit.FieldManager && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), `"f:replicas"`) {
			t.Fatalf("the operator owns spec.replicas of an autoscaled Deployment: %s", f.FieldsV1.Raw)
		}
	}

	// The HPA scales the Deployment; the operator does not fight it, and
	// reports the HPA's count as desired.
	scale := &autoscalingv1.Scale{}
	if err := k8s.SubResource("scale").Get(ctx, d, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if err := k8s.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	updateCluster(t, ns, "elastic", func(c *v1alpha1.ConnectCluster) {
		c.Spec.Config = map[string]string{"offset.flush.interval.ms": "3000"}
	})
	eventually(t, "desiredReplicas 5 at the new generation", func() error {
		c := getCluster(t, ns, "elastic")
		if c.Status.ObservedGeneration != c.Generation || c.Status.DesiredReplicas != 5 {
			return fmt.Errorf("observed generation %d of %d, desired %d", c.Status.ObservedGeneration, c.Generation, c.Status.DesiredReplicas)
		}
		return nil
	})
	d, err = getDeployment(ns, "elastic")
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Fatalf("the Deployment runs %d replicas after a reconcile, want the HPA's 5", *d.Spec.Replicas)
	}
}

func TestTurningAutoscalingOnKeepsTheReplicaCount(t *testing.T) {
	ns := newNamespace(t, "handoff")
	cluster := newCluster(ns, "growing", kafka.ListenAddrs())
	cluster.Spec.Replicas = ptr[int32](3)
	create(t, cluster)
	eventually(t, "3 replicas owned by the operator", func() error {
		d, err := getDeployment(ns, "growing")
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 3 || !ownsReplicas(d, clusterkit.FieldManager) {
			return fmt.Errorf("replicas %d, operator owns them: %v", *d.Spec.Replicas, ownsReplicas(d, clusterkit.FieldManager))
		}
		return nil
	})

	// Autoscaling goes on: the operator lets go of spec.replicas without the
	// Deployment falling back to 1 replica before the HPA acts.
	updateCluster(t, ns, "growing", func(c *v1alpha1.ConnectCluster) {
		c.Spec.Autoscaling = &v1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: ptr[int32](2), MaxReplicas: ptr[int32](8)}
	})
	eventually(t, "the operator no longer owns spec.replicas", func() error {
		d, err := getDeployment(ns, "growing")
		if err != nil {
			return err
		}
		if ownsReplicas(d, clusterkit.FieldManager) {
			return fmt.Errorf("the operator still owns spec.replicas")
		}
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d after the hand-over, want 3 kept", *d.Spec.Replicas)
		}
		return nil
	})
	eventually(t, "Reconciled at the new generation", condition(ns, "growing", v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, ""))
	d, err := getDeployment(ns, "growing")
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 {
		t.Fatalf("replicas %d, want 3", *d.Spec.Replicas)
	}
}

func ownsReplicas(d *appsv1.Deployment, manager string) bool {
	for _, f := range d.ManagedFields {
		if f.Manager == manager && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), `"f:replicas"`) {
			return true
		}
	}
	return false
}
