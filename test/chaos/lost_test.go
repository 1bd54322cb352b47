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

package chaos

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/localcluster/kafkafault"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// The lost-worker scenario runs on a ConnectCluster of its own: its lost-worker
// delay must outlast the group's notice of the death (the session timeout and a
// rebalance) by enough to see the tasks UNASSIGNED, which the other scenarios'
// 5s does not.
const (
	lostNS          = "chaos-lost"
	lostCluster     = "lost"
	lostWorkers     = 3
	lostTasks       = 6
	lostSession     = 6 * time.Second
	lostDelay       = 20 * time.Second
	lostStallAfter  = 3 * time.Second
	lostStuckTopic  = "lost-stuck"
	lostIdleRate    = 60 // records per second, the whole connector
	lostStuckRate   = 500
	lostTestTimeout = 4 * time.Minute
)

func lostManifest() string {
	return fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: %[1]s
spec:
  replicas: %[2]d
  kafka:
    bootstrapServers: %[3]s
  storage:
    replicationFactor: 1
    offsetPartitions: 3
    statusPartitions: 1
  config:
    session.timeout.ms: "%[4]d"
    heartbeat.interval.ms: "1000"
    rebalance.timeout.ms: "20000"
    task.stall.timeout.ms: "%[5]d"
  maxTasksPerWorker: 8
  rebalance:
    lostWorkerDelay: %[6]s
---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: idle
spec:
  clusterRef: {name: %[1]s}
  class: RangeSource
  tasksMax: %[7]d
  config:
    topic: lost-idle
    count: "1000000000"
    rate: "%[8]d"
    record.size: "16"
---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: stuck
spec:
  clusterRef: {name: %[1]s}
  class: RangeSource
  tasksMax: 1
  config:
    topic: %[9]s
    count: "1000000000"
    rate: "%[10]d"
    record.size: "16"
`, lostCluster, lostWorkers, cluster.KafkaAddr, lostSession.Milliseconds(), lostStallAfter.Milliseconds(), lostDelay,
		lostTasks, lostIdleRate, lostStuckTopic, lostStuckRate)
}

func lostf(key string, v any) { fmt.Printf("conveyor-chaos: lost_worker_%s=%v\n", key, v) }

// TestLostWorkerStatusInKafkaConnector: a worker SIGKILLed and not restarted
// (the kubelet holds its container down; the pod stays, not Ready) leaves its
// tasks' last status records reading RUNNING on it. The live operator must
// report them UNASSIGNED on that worker in the KafkaConnector's status, as the
// workers' REST API does, once the group rebalanced without it and before
// lostWorkerDelay moves them; then RUNNING on the workers left. Meanwhile the
// broker refuses the produce requests of the "stuck" connector's topic (a
// kafkafault: the records stay in flight, none is acknowledged), so its task,
// which was making progress, stops: the KafkaConnector's TasksStalled condition
// turns True naming it, and False again once the broker takes its records.
//
// Found by it and fixed: the operator read a connector's status again only at
// the resync (30s), so the KafkaConnector read the lost tasks RUNNING on the
// dead worker for 29.9s and never UNASSIGNED before lostWorkerDelay moved
// them; a pass that finds work live on a worker that is not Ready now looks
// again within 2s (LookAgainWithin in controllers/kafkaconnector).
func TestLostWorkerStatusInKafkaConnector(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), lostTestTimeout)
	defer cancel()
	adm, cl := kafkaAdmin(t)
	defer cl.Close()
	for _, topic := range []string{"lost-idle", lostStuckTopic} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("creating topic %s: %v", topic, err)
		}
	}
	if _, err := cluster.RunKubectl(ctx, "", "create", "namespace", lostNS); err != nil {
		t.Fatal(err)
	}
	var release func()
	t.Cleanup(func() {
		if release != nil {
			release()
		}
		_ = cluster.SetKafkaFaults(context.Background())
		_, _ = cluster.RunKubectl(context.Background(), "", "delete", "namespace", lostNS, "--wait=true", "--timeout=90s")
	})
	if _, err := cluster.RunKubectl(ctx, lostManifest(), "apply", "-n", lostNS, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if _, err := cv.WaitWorkersReady(ctx, lostNS, lostCluster, lostWorkers, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	// Both connectors RUNNING, the idle one's tasks on every worker, and
	// the stuck one's task making progress.
	var kc v1alpha1.KafkaConnector
	if err := testkit.Until(ctx, 2*time.Minute, "both connectors RUNNING, idle's tasks on every worker", func(ctx context.Context) (bool, error) {
		if _, err := cv.WaitConnectorsRunning(ctx, lostNS, time.Second, "idle", "stuck"); err != nil {
			return false, err
		}
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: lostNS, Name: "idle"}, &kc); err != nil {
			return false, err
		}
		on := map[string]bool{}
		for _, ts := range kc.Status.Tasks {
			on[ts.WorkerID] = true
		}
		return len(on) == lostWorkers, fmt.Errorf("idle's tasks on %d workers: %+v", len(on), kc.Status.Tasks)
	}); err != nil {
		t.Fatal(err)
	}
	running := time.Now()

	pods, cc, err := cv.WorkerPods(ctx, lostNS, lostCluster)
	if err != nil {
		t.Fatal(err)
	}
	token, err := cv.RestToken(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	var stuck connectapi.ConnectorStateInfo
	if err := cluster.RestGet(ctx, pods[0].Status.PodIP, token, "/connectors/stuck/status", &stuck); err != nil || len(stuck.Tasks) != 1 {
		t.Fatalf("stuck's status: %+v, %v", stuck, err)
	}
	// The victim: a worker running idle's tasks but not stuck's (its stall
	// is watched on a live worker).
	var victim corev1.Pod
	var victimID string
	var lost []int32
	for _, p := range pods {
		id := net.JoinHostPort(p.Status.PodIP, fmt.Sprint(v1alpha1.RestPort))
		if id == stuck.Tasks[0].WorkerID {
			continue
		}
		victim, victimID, lost = p, id, nil
		for _, ts := range kc.Status.Tasks {
			if ts.WorkerID == id {
				lost = append(lost, ts.ID)
			}
		}
		break
	}
	var live corev1.Pod
	for _, p := range pods {
		if p.Name != victim.Name {
			live = p
		}
	}
	restarts := containerRestarts(&victim)

	// The broker stops taking stuck's records, and the victim dies.
	if err := cluster.SetKafkaFaults(ctx, kafkafault.Fault{Request: "Produce", Topic: lostStuckTopic, Error: "NOT_ENOUGH_REPLICAS"}); err != nil {
		t.Fatal(err)
	}
	refused := time.Now()
	if release, err = cluster.KillPodAndHold(lostNS, victim.Name); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("SIGKILL %s (worker %s, idle's tasks %v), its restart held; the broker refuses %s's produce requests", victim.Name, victimID, lost, lostStuckTopic)

	// Every look at the KafkaConnector and at a live worker's REST answer
	// until the tasks moved: idle's lost tasks must read UNASSIGNED on the
	// victim in both before they run anywhere else.
	var kcUnassigned, restUnassigned, moved, lastStale time.Duration
	lostState := func(tasks []v1alpha1.TaskStatus) (unassigned, movedAll bool, states string) {
		unassigned, movedAll = true, true
		var s []string
		for _, ts := range tasks {
			if !slices.Contains(lost, ts.ID) {
				continue
			}
			s = append(s, fmt.Sprintf("%d=%s@%s", ts.ID, ts.State, ts.WorkerID))
			unassigned = unassigned && ts.State == v1alpha1.ConnectorStateUnassigned && ts.WorkerID == victimID
			movedAll = movedAll && ts.State == v1alpha1.ConnectorStateRunning && ts.WorkerID != victimID
			if ts.State == v1alpha1.ConnectorStateRunning && ts.WorkerID == victimID {
				lastStale = time.Since(killed)
			}
		}
		return unassigned, movedAll, strings.Join(s, " ")
	}
	err = testkit.Until(ctx, lostSession+lostDelay+time.Minute, "idle's lost tasks UNASSIGNED, then RUNNING on the workers left", func(ctx context.Context) (bool, error) {
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: lostNS, Name: "idle"}, &kc); err != nil {
			return false, err
		}
		un, mv, states := lostState(kc.Status.Tasks)
		if un && kcUnassigned == 0 {
			kcUnassigned = time.Since(killed)
			t.Logf("KafkaConnector idle after %.1fs: %s", kcUnassigned.Seconds(), states)
		}
		if mv {
			moved = time.Since(killed)
			t.Logf("KafkaConnector idle after %.1fs: %s", moved.Seconds(), states)
			return true, nil
		}
		if restUnassigned == 0 {
			var st connectapi.ConnectorStateInfo
			if err := cluster.RestGet(ctx, live.Status.PodIP, token, "/connectors/idle/status", &st); err != nil {
				return false, err
			}
			var tasks []v1alpha1.TaskStatus
			for _, ts := range st.Tasks {
				tasks = append(tasks, v1alpha1.TaskStatus{ID: int32(ts.ID), State: v1alpha1.ConnectorState(ts.State), WorkerID: ts.WorkerID})
			}
			if un, _, states := lostState(tasks); un {
				restUnassigned = time.Since(killed)
				t.Logf("REST of %s after %.1fs: %s", live.Name, restUnassigned.Seconds(), states)
			}
		}
		return false, fmt.Errorf("KafkaConnector: %s", states)
	})
	lostf("kc_unassigned_s", fmt.Sprintf("%.1f", kcUnassigned.Seconds()))
	lostf("rest_unassigned_s", fmt.Sprintf("%.1f", restUnassigned.Seconds()))
	lostf("kc_stale_running_s", fmt.Sprintf("%.1f", lastStale.Seconds()))
	lostf("moved_s", fmt.Sprintf("%.1f", moved.Seconds()))
	if err != nil {
		t.Fatal(err)
	}
	if kcUnassigned == 0 {
		t.Fatalf("the KafkaConnector's status never read idle's tasks %v UNASSIGNED on %s before they moved", lost, victimID)
	}
	// The bound: the KafkaConnector agrees with the workers within
	// the session timeout plus lostWorkerDelay.
	if bound := lostSession + lostDelay; lastStale > bound {
		t.Errorf("the KafkaConnector read idle's tasks RUNNING on the dead worker %s for %.1fs after the kill, past the session timeout plus lostWorkerDelay (%s)", victimID, lastStale.Seconds(), bound)
	}

	// The stall, as the KafkaConnector reports it (kubectl, as a user reads it).
	out, err := cluster.RunKubectl(ctx, "", "wait", "-n", lostNS, "kafkaconnector/stuck", "--for=condition=TasksStalled=True", "--timeout=60s")
	if err != nil {
		t.Fatalf("stuck's TasksStalled condition: %v", err)
	}
	stalled := time.Since(refused)
	if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: lostNS, Name: "stuck"}, &kc); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(kc.Status.Conditions, v1alpha1.KafkaConnectorTasksStalled)
	t.Logf("%s%.1fs after the broker refused: %s", out, stalled.Seconds(), c.Message)
	if c.Reason != v1alpha1.ReasonTasksStalled || !strings.Contains(c.Message, "task 0 on ") {
		t.Errorf("TasksStalled of stuck: %+v, want reason %s naming task 0", c, v1alpha1.ReasonTasksStalled)
	}
	// idle has no stall: its tasks make progress (the lost ones moved).
	if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: lostNS, Name: "idle"}, &kc); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(kc.Status.Conditions, v1alpha1.KafkaConnectorTasksStalled); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("TasksStalled of idle: %+v, want False", c)
	}
	if err := cluster.SetKafkaFaults(ctx); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	if _, err := cluster.RunKubectl(ctx, "", "wait", "-n", lostNS, "kafkaconnector/stuck", "--for=condition=TasksStalled=False", "--timeout=60s"); err != nil {
		t.Fatalf("stuck's TasksStalled condition once the broker takes its records again: %v", err)
	}
	cleared := time.Since(taken)
	lostf("stalled_s", fmt.Sprintf("%.1f", stalled.Seconds()))
	lostf("stall_cleared_s", fmt.Sprintf("%.1f", cleared.Seconds()))

	// The victim stayed down the whole time: not restarted.
	vp, err := cluster.Client.CoreV1().Pods(lostNS).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if localcluster.PodReady(vp) || containerRestarts(vp) != restarts {
		t.Errorf("the victim %s was restarted: Ready %v, restarts %d (had %d)", victim.Name, localcluster.PodReady(vp), containerRestarts(vp), restarts)
	}
	lostf("setup_s", fmt.Sprintf("%.1f", running.Sub(start).Seconds()))
	lostf("total_s", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
}

func containerRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
