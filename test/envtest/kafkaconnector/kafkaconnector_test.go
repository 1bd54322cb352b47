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
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const (
	namespace   = "connectors"
	clusterName = "orders"
	sinkClass   = "dev.conveyor.connect.file.FileSinkConnector"
	// settle bounds waits on the operator; resync bounds waits on a
	// runtime-side change, which shows at the operator's next status re-read
	// (connectorResync here, 30s in production).
	settle          = 20 * time.Second
	connectorResync = 2 * time.Second
	resync          = settle + connectorResync
)

var clusterOnce sync.Once

// sharedCluster creates (once) the namespace, the REST token Secret and the
// ConnectCluster the worker belongs to, with autoscaling on.
func sharedCluster(t *testing.T) {
	t.Helper()
	var err error
	clusterOnce.Do(func() {
		ctx := context.Background()
		objs := []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-rest", Namespace: namespace},
				Data: map[string][]byte{"token": []byte(restToken)}},
			&v1alpha1.ConnectCluster{
				ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: namespace},
				Spec: v1alpha1.ConnectClusterSpec{
					Kafka:   v1alpha1.KafkaConnection{BootstrapServers: bootstrap},
					GroupID: ptr(groupID),
					Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1),
						OffsetPartitions: ptr(storagePartitions), StatusPartitions: ptr(storagePartitions)},
					RestAPI: v1alpha1.RestAPISpec{Authentication: v1alpha1.RestAuthentication{
						TokenSecret: &v1alpha1.SecretKeyRef{Name: "orders-rest", Key: "token"}}},
					Autoscaling: &v1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](10)},
				},
			},
		}
		for _, o := range objs {
			if err = k8s.Create(ctx, o); err != nil {
				err = fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runtimeClient is a REST client of the worker for the test's own checks
// (its requests are not counted as the operator's).
func runtimeClient(t *testing.T) *workerclient.Client {
	t.Helper()
	c, err := workerclient.New([]string{restURL}, workerclient.Options{Token: restToken, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	adm := admin(t)
	resp, err := adm.CreateTopic(context.Background(), partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
}

func admin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// sink creates a FileSink KafkaConnector; extra values override the config
// ("" removes a key).
func sink(t *testing.T, name string, tasksMax int32, topic string, extra map[string]string) *v1alpha1.KafkaConnector {
	t.Helper()
	kc := sinkSpec(t, name, tasksMax, topic, extra)
	if err := k8s.Create(context.Background(), kc); err != nil {
		t.Fatalf("creating KafkaConnector %s: %v", name, err)
	}
	return kc
}

func sinkSpec(t *testing.T, name string, tasksMax int32, topic string, extra map[string]string) *v1alpha1.KafkaConnector {
	t.Helper()
	cfg := map[string]string{"topics": topic, "file": filepath.Join(outDir, name+".out"), "partition.check.interval.ms": "500"}
	for k, v := range extra {
		if v == "" {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	kc := &v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.KafkaConnectorSpec{
			ClusterRef: v1alpha1.ClusterReference{Name: clusterName},
			Class:      sinkClass,
			TasksMax:   ptr(tasksMax),
			Config:     cfg,
		},
	}
	return kc
}

func getKC(t *testing.T, name string) *v1alpha1.KafkaConnector {
	t.Helper()
	kc := &v1alpha1.KafkaConnector{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, kc); err != nil {
		t.Fatalf("reading KafkaConnector %s: %v", name, err)
	}
	return kc
}

func condition(kc *v1alpha1.KafkaConnector, typ string) *metav1.Condition {
	return meta.FindStatusCondition(kc.Status.Conditions, typ)
}

func describe(kc *v1alpha1.KafkaConnector) string {
	var conds []string
	for _, c := range kc.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("state=%s tasksMax=%d effective=%d limit=%+v conditions=%v", kc.Status.State, kc.Status.TasksMax, kc.Status.EffectiveTasks, kc.Status.TaskLimit, conds)
}

func waitReady(t *testing.T, name string) time.Duration {
	t.Helper()
	return testkit.Eventually(t, settle, name+" Ready=True", func() (bool, string) {
		kc := getKC(t, name)
		c := condition(kc, v1alpha1.KafkaConnectorReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == kc.Generation, describe(kc)
	})
}

// scaledObject returns the cluster's one derived ScaledObject (nil: none).
func scaledObject(t *testing.T) *kedav1alpha1.ScaledObject {
	t.Helper()
	var list kedav1alpha1.ScaledObjectList
	if err := k8s.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatalf("listing ScaledObjects: %v", err)
	}
	if len(list.Items) != 1 {
		return nil
	}
	return &list.Items[0]
}

func triggersOf(so *kedav1alpha1.ScaledObject) []string {
	var out []string
	for _, tr := range so.Spec.Triggers {
		out = append(out, tr.Type+":"+tr.Metadata["consumerGroup"]+":"+tr.Metadata["topic"])
	}
	sort.Strings(out)
	return out
}

func soSummary(so *kedav1alpha1.ScaledObject) string {
	if so == nil {
		return "no ScaledObject"
	}
	max := int32(-1)
	if so.Spec.MaxReplicaCount != nil {
		max = *so.Spec.MaxReplicaCount
	}
	return fmt.Sprintf("max=%d triggers=%v", max, triggersOf(so))
}

// TestTasksLimitedByPartitions: tasksMax 10 on a 4-partition topic runs 4
// tasks, says why, and the ScaledObject follows; 6 partitions → 6.
func TestTasksLimitedByPartitions(t *testing.T) {
	sharedCluster(t)
	topic := testkit.Unique(t, "limits") // one topic per run (-count)
	createTopic(t, topic, 4)
	start := time.Now()
	sink(t, "limits", 10, topic, nil)

	took := testkit.Eventually(t, resync, "4 effective tasks limited by TopicPartitions", func() (bool, string) {
		kc := getKC(t, "limits")
		c := condition(kc, v1alpha1.KafkaConnectorTasksLimited)
		ok := kc.Status.TasksMax == 10 && kc.Status.EffectiveTasks == 4 &&
			kc.Status.TaskLimit != nil && kc.Status.TaskLimit.Reason == "TopicPartitions" && kc.Status.TaskLimit.Value == 4 &&
			c != nil && c.Status == metav1.ConditionTrue && c.Reason == "TopicPartitions"
		return ok, describe(kc)
	})
	t.Logf("4 effective tasks, TasksLimited=True/TopicPartitions %s after create", took.Round(time.Millisecond))
	waitReady(t, "limits")
	st, err := runtimeClient(t).Status(context.Background(), "limits")
	if err != nil || len(st.Tasks) != 4 {
		t.Fatalf("runtime status: %d tasks, err %v; want 4 tasks", len(st.Tasks), err)
	}
	wantTrigger := []string{"kafka:connect-limits:" + topic}
	took = testkit.Eventually(t, settle, "ScaledObject with the sink's trigger and max 4", func() (bool, string) {
		so := scaledObject(t)
		return so != nil && so.Spec.MaxReplicaCount != nil && *so.Spec.MaxReplicaCount == 4 &&
			fmt.Sprint(triggersOf(so)) == fmt.Sprint(wantTrigger), soSummary(so)
	})
	t.Logf("ScaledObject max=4 with trigger %v %s after create", wantTrigger, time.Since(start).Round(time.Millisecond))

	grow := time.Now()
	resp, err := admin(t).CreatePartitions(context.Background(), 2, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("growing topic %s to 6 partitions: %v", topic, err)
	}
	took = testkit.Eventually(t, resync, "6 effective tasks after growing the topic", func() (bool, string) {
		kc := getKC(t, "limits")
		return kc.Status.EffectiveTasks == 6 && kc.Status.TaskLimit != nil && kc.Status.TaskLimit.Value == 6, describe(kc)
	})
	t.Logf("6 effective tasks %s after growing the topic", took.Round(time.Millisecond))
	testkit.Eventually(t, settle, "ScaledObject max 6", func() (bool, string) {
		so := scaledObject(t)
		return so != nil && so.Spec.MaxReplicaCount != nil && *so.Spec.MaxReplicaCount == 6, soSummary(so)
	})
	t.Logf("ScaledObject max=6 %s after growing the topic", time.Since(grow).Round(time.Millisecond))
}

func patchKC(t *testing.T, name string, mutate func(kc *v1alpha1.KafkaConnector)) {
	t.Helper()
	kc := getKC(t, name)
	orig := kc.DeepCopy()
	mutate(kc)
	if err := k8s.Patch(context.Background(), kc, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patching KafkaConnector %s: %v", name, err)
	}
}

// waitRuntimeState waits until the worker's REST API reports the
// connector in state want.
func waitRuntimeState(t *testing.T, name, want string) time.Duration {
	t.Helper()
	rc := runtimeClient(t)
	return testkit.Eventually(t, settle, fmt.Sprintf("runtime state of %s = %s", name, want), func() (bool, string) {
		st, err := rc.Status(context.Background(), name)
		if err != nil {
			return false, err.Error()
		}
		return st.Connector.State == want, st.Connector.State
	})
}

// TestStateAndDeleteReachTheRuntime: pause, stop and resume a connector
// through spec.state and see the worker's REST status follow; deleting the
// KafkaConnector deletes the connector from the worker.
func TestStateAndDeleteReachTheRuntime(t *testing.T) {
	sharedCluster(t)
	topic := testkit.Unique(t, "lifecycle")
	createTopic(t, topic, 2)
	sink(t, "lifecycle", 2, topic, nil)
	t.Logf("Ready %s after create", waitReady(t, "lifecycle").Round(time.Millisecond))
	waitRuntimeState(t, "lifecycle", "RUNNING")

	for _, step := range []struct {
		state   v1alpha1.ConnectorTargetState
		runtime string
	}{
		{v1alpha1.ConnectorTargetPaused, "PAUSED"},
		{v1alpha1.ConnectorTargetStopped, "STOPPED"},
		{v1alpha1.ConnectorTargetRunning, "RUNNING"},
	} {
		patchKC(t, "lifecycle", func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = step.state })
		took := waitRuntimeState(t, "lifecycle", step.runtime)
		testkit.Eventually(t, settle, "status.state "+step.runtime, func() (bool, string) {
			kc := getKC(t, "lifecycle")
			return string(kc.Status.State) == step.runtime, describe(kc)
		})
		t.Logf("state %s reached the runtime (%s) in %s", step.state, step.runtime, took.Round(time.Millisecond))
	}

	kc := getKC(t, "lifecycle")
	if err := k8s.Delete(context.Background(), kc); err != nil {
		t.Fatal(err)
	}
	rc := runtimeClient(t)
	took := testkit.Eventually(t, settle, "connector lifecycle gone from the runtime", func() (bool, string) {
		_, err := rc.Status(context.Background(), "lifecycle")
		return workerclient.IsNotFound(err), fmt.Sprint(err)
	})
	t.Logf("deleted from the runtime %s after the delete", took.Round(time.Millisecond))
	testkit.Eventually(t, settle, "KafkaConnector lifecycle gone (finalizer removed)", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "lifecycle"}, &v1alpha1.KafkaConnector{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// reconcilePass forces a reconcile of a connector whose spec does not
// change (an annotation edit) and waits until the pass finished (a new read
// of its active topics, which comes after every write).
func reconcilePass(t *testing.T, name, value string) {
	t.Helper()
	before := writes.get(name + "/topics")
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) {
		if kc.Annotations == nil {
			kc.Annotations = map[string]string{}
		}
		kc.Annotations["test.conveyor.dev/poke"] = value
	})
	testkit.Eventually(t, settle, "a reconcile pass of "+name, func() (bool, string) {
		n := writes.get(name + "/topics")
		return n > before, fmt.Sprintf("%d topics reads", n)
	})
}

// TestIdleResyncReadsTheClusterOnce: at rest, the resync passes of a
// connector read it from the cluster's shared whole-cluster read (GET
// /connectors?expand=...), not with GETs of its own.
func TestIdleResyncReadsTheClusterOnce(t *testing.T) {
	sharedCluster(t)
	topic := testkit.Unique(t, "idle")
	createTopic(t, topic, 1)
	kc := sink(t, "idle-reads", 1, topic, nil)
	t.Cleanup(func() { // later tests count the cluster's sinks
		if err := k8s.Delete(context.Background(), kc); err != nil {
			t.Error(err)
		}
		testkit.Eventually(t, settle, "KafkaConnector idle-reads gone", func() (bool, string) {
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "idle-reads"}, &v1alpha1.KafkaConnector{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
	waitReady(t, "idle-reads")
	waitRuntimeState(t, "idle-reads", "RUNNING")
	// The passes right after Ready may read directly (their own status
	// write changed the object); then two resyncs pass without one.
	last, since := -1, time.Time{}
	testkit.Eventually(t, settle+2*connectorResync, "two resyncs without a per-connector read of idle-reads", func() (bool, string) {
		n := writes.get("idle-reads/reads")
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 2*connectorResync, fmt.Sprintf("%d per-connector reads, the last %s ago", n, time.Since(since).Round(time.Millisecond))
	})
	e0 := writes.get("expand")
	testkit.Consistently(t, 2*connectorResync, "no per-connector read of idle-reads at rest", func() (bool, string) {
		n := writes.get("idle-reads/reads")
		return n == last, fmt.Sprintf("%d per-connector reads (was %d)", n, last)
	})
	if n := writes.get("expand") - e0; n < 1 {
		t.Fatalf("no whole-cluster read in %s: the resync passes did not run", 2*connectorResync)
	}
	// The connector is still watched: a runtime change shows at a resync.
	rc := runtimeClient(t)
	if err := rc.Pause(context.Background(), "idle-reads"); err != nil {
		t.Fatal(err)
	}
	waitRuntimeState(t, "idle-reads", "PAUSED")
	testkit.Eventually(t, resync, "a pause done through REST seen by a resync pass (the connector resumed)", func() (bool, string) {
		st, err := rc.Status(context.Background(), "idle-reads")
		if err != nil {
			return false, err.Error()
		}
		return st.Connector.State == "RUNNING", st.Connector.State
	})
}

// TestConfigEditAppliedOnce: a no-op reconcile makes no REST write; a
// config edit is written exactly once and reaches the runtime.
func TestConfigEditAppliedOnce(t *testing.T) {
	sharedCluster(t)
	topic := testkit.Unique(t, "edits")
	createTopic(t, topic, 1)
	sink(t, "edits", 1, topic, nil)
	waitReady(t, "edits")
	waitRuntimeState(t, "edits", "RUNNING")

	w0 := writes.get("edits")
	reconcilePass(t, "edits", "1")
	if got := writes.get("edits"); got != w0 {
		t.Fatalf("a no-op reconcile made %d REST writes, want 0", got-w0)
	}

	patchKC(t, "edits", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["partition.check.interval.ms"] = "700" })
	rc := runtimeClient(t)
	took := testkit.Eventually(t, settle, "the edited config in the runtime", func() (bool, string) {
		cfg, err := rc.ConnectorConfig(context.Background(), "edits")
		if err != nil {
			return false, err.Error()
		}
		return cfg["partition.check.interval.ms"] == "700", fmt.Sprint(cfg)
	})
	t.Logf("config edit reached the runtime in %s", took.Round(time.Millisecond))
	waitReady(t, "edits")
	reconcilePass(t, "edits", "2")
	reconcilePass(t, "edits", "3")
	if got := writes.get("edits") - w0; got != 1 {
		t.Fatalf("the config edit took %d REST writes (including two no-op passes after it), want exactly 1", got)
	}
}

// TestBadInputIsolated: an unknown class, a missing required setting and
// an invalid value each give Ready=False with the runtime's message naming
// the class or field, are not created, and a good connector of the same
// cluster keeps running.
func TestBadInputIsolated(t *testing.T) {
	sharedCluster(t)
	topic := testkit.Unique(t, "good")
	createTopic(t, topic, 1)
	sink(t, "good", 1, topic, nil)
	waitReady(t, "good")

	unknown := sinkSpec(t, "unknown-class", 1, topic, nil)
	unknown.Spec.Class = "com.example.NoSuchConnector"
	if err := k8s.Create(context.Background(), unknown); err != nil {
		t.Fatal(err)
	}
	sink(t, "missing-file", 1, topic, map[string]string{"file": ""})
	sink(t, "bad-interval", 1, topic, map[string]string{"partition.check.interval.ms": "soon"})

	cases := []struct{ name, reason, mention string }{
		{"unknown-class", v1alpha1.ReasonPluginNotFound, "com.example.NoSuchConnector"},
		{"missing-file", v1alpha1.ReasonConfigInvalid, "file"},
		{"bad-interval", v1alpha1.ReasonConfigInvalid, "partition.check.interval.ms"},
	}
	rc := runtimeClient(t)
	for _, c := range cases {
		took := testkit.Eventually(t, settle, c.name+" Ready=False/"+c.reason+" naming "+c.mention, func() (bool, string) {
			kc := getKC(t, c.name)
			cond := condition(kc, v1alpha1.KafkaConnectorReady)
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == c.reason &&
				strings.Contains(cond.Message, c.mention), describe(kc)
		})
		cond := condition(getKC(t, c.name), v1alpha1.KafkaConnectorReady)
		t.Logf("%s: Ready=False/%s in %s: %q", c.name, c.reason, took.Round(time.Millisecond), cond.Message)
		if _, err := rc.Status(context.Background(), c.name); !workerclient.IsNotFound(err) {
			t.Fatalf("%s exists in the runtime (err %v): a refused connector must not be created", c.name, err)
		}
	}
	kc := getKC(t, "good")
	if c := condition(kc, v1alpha1.KafkaConnectorReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("good connector affected: %s", describe(kc))
	}
	waitRuntimeState(t, "good", "RUNNING")
}

// TestScaledObjectFollowsConnectors runs last: with the sinks the earlier
// tests left running (limits: 6 tasks, edits: 1, good: 1; the refused ones
// run nothing) the ScaledObject has one trigger per running sink and
// max = total effective tasks; pausing a sink drops its trigger, deleting
// one lowers max. At its end it deletes every connector of the cluster, so
// a next run (-count) starts from an empty cluster.
func TestScaledObjectFollowsConnectors(t *testing.T) {
	sharedCluster(t)
	t.Cleanup(func() { deleteAllConnectors(t) })
	// The earlier tests' topics of this run.
	limits, edits, good := testkit.Unique(t, "limits"), testkit.Unique(t, "edits"), testkit.Unique(t, "good")
	for _, n := range []string{"limits", "edits", "good"} {
		waitReady(t, n)
	}
	want := []string{"kafka:connect-edits:" + edits, "kafka:connect-good:" + good, "kafka:connect-limits:" + limits}
	took := testkit.Eventually(t, settle, fmt.Sprintf("ScaledObject max 8 with triggers %v", want), func() (bool, string) {
		so := scaledObject(t)
		return so != nil && so.Spec.MaxReplicaCount != nil && *so.Spec.MaxReplicaCount == 8 &&
			fmt.Sprint(triggersOf(so)) == fmt.Sprint(want), soSummary(so)
	})
	t.Logf("ScaledObject max=8, 3 triggers (%s)", took.Round(time.Millisecond))

	start := time.Now()
	patchKC(t, "good", func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetPaused })
	want = []string{"kafka:connect-edits:" + edits, "kafka:connect-limits:" + limits}
	testkit.Eventually(t, settle, fmt.Sprintf("triggers %v after pausing good", want), func() (bool, string) {
		so := scaledObject(t)
		return so != nil && fmt.Sprint(triggersOf(so)) == fmt.Sprint(want), soSummary(so)
	})
	t.Logf("pausing a sink dropped its trigger in %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := k8s.Delete(context.Background(), getKC(t, "limits")); err != nil {
		t.Fatal(err)
	}
	want = []string{"kafka:connect-edits:" + edits}
	testkit.Eventually(t, settle, fmt.Sprintf("max 2 and triggers %v after deleting limits", want), func() (bool, string) {
		so := scaledObject(t)
		return so != nil && so.Spec.MaxReplicaCount != nil && *so.Spec.MaxReplicaCount == 2 &&
			fmt.Sprint(triggersOf(so)) == fmt.Sprint(want), soSummary(so)
	})
	t.Logf("deleting the 6-task sink: max=2, its trigger gone in %s", time.Since(start).Round(time.Millisecond))

	// A sink moved to another topic (same task count) moves its trigger.
	moved := testkit.Unique(t, "edits-v2")
	createTopic(t, moved, 1)
	start = time.Now()
	patchKC(t, "edits", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["topics"] = moved })
	want = []string{"kafka:connect-edits:" + moved}
	testkit.Eventually(t, settle, fmt.Sprintf("triggers %v after moving edits to topic %s", want, moved), func() (bool, string) {
		so := scaledObject(t)
		return so != nil && fmt.Sprint(triggersOf(so)) == fmt.Sprint(want), soSummary(so)
	})
	t.Logf("moving a sink to another topic moved its trigger in %s", time.Since(start).Round(time.Millisecond))
}

// deleteAllConnectors deletes every KafkaConnector of the shared cluster
// and waits until they and their connectors in the worker are gone.
func deleteAllConnectors(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.DeleteAllOf(ctx, &v1alpha1.KafkaConnector{}, client.InNamespace(namespace)); err != nil {
		t.Fatalf("deleting the KafkaConnectors: %v", err)
	}
	rc := runtimeClient(t)
	testkit.Eventually(t, settle, "no KafkaConnector and no connector in the worker", func() (bool, string) {
		var list v1alpha1.KafkaConnectorList
		if err := k8s.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return false, err.Error()
		}
		names, err := rc.ListConnectors(ctx)
		return err == nil && len(list.Items) == 0 && len(names) == 0, fmt.Sprintf("%d KafkaConnectors, worker connectors %v (%v)", len(list.Items), names, err)
	})
}
