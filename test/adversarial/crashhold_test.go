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

package adversarial

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const (
	holdNS      = "crashhold"
	holdCluster = "hold"
	holdWorkers = 2
)

// TestCrashingConnectorHeldFailed: a tenant's connector whose code ends
// the worker process with a panic no recover catches (CrashSource of
// test/attackconnector, compiled into this tier's image: its task starts a
// goroutine of its own that panics) crashes the worker it runs on once.
// The restarted worker reads the runtime's crash report and writes a crash
// record, and from then on every worker reports the connector FAILED with
// the reason and none runs it again: the worker containers stop
// restarting, and a healthy connector beside it keeps streaming.
func TestCrashingConnectorHeldFailed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	kubectl(t, "", "create", "namespace", holdNS)
	kubectl(t, fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: %s
spec:
  replicas: %d
  kafka:
    bootstrapServers: %s
  storage:
    replicationFactor: 1
    offsetPartitions: 1
    statusPartitions: 1
  config:
    offset.flush.interval.ms: "1000"
    session.timeout.ms: "6000"
    heartbeat.interval.ms: "1000"
  maxTasksPerWorker: 4
  rebalance:
    lostWorkerDelay: 5s
`, holdCluster, holdWorkers, cluster.KafkaAddr), "apply", "-n", holdNS, "-f", "-")
	if _, err := cv.WaitWorkersReady(ctx, holdNS, holdCluster, holdWorkers, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	kubectl(t, `apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: steady
spec:
  clusterRef: {name: hold}
  class: RangeSource
  tasksMax: 2
  config:
    topic: hold-steady
    count: "100000000"
    rate: "200"
`, "apply", "-n", holdNS, "-f", "-")
	// The connectors stop when the test ends: the canary reads every topic
	// until nothing new comes.
	t.Cleanup(func() {
		_, _ = cluster.RunKubectl(context.Background(), "", "delete", "kafkaconnector", "--all", "-n", holdNS, "--wait=true", "--timeout=60s")
	})
	if err := testkit.Until(ctx, 2*time.Minute, "the healthy connector RUNNING", func(ctx context.Context) (bool, error) {
		st, err := holdStatus(ctx, "steady", "")
		if s := st.notRunning(); err != nil || s != "" {
			return false, fmt.Errorf("%s (%v)", s, err)
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}

	kubectl(t, `apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: crasher
spec:
  clusterRef: {name: hold}
  class: CrashSource
  tasksMax: 1
  config:
    crash.after.ms: "2000"
`, "apply", "-n", holdNS, "-f", "-")
	attackAt := time.Now()

	// Every worker reports the connector FAILED with the reason.
	const reason = "CrashSource: crashing the worker"
	var trace string
	if err := testkit.Until(ctx, 4*time.Minute, "CrashSource held FAILED on every worker", func(ctx context.Context) (bool, error) {
		pods, _, err := cv.WorkerPods(ctx, holdNS, holdCluster)
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods {
			if !localcluster.PodReady(&p) {
				continue
			}
			ready++
			st, err := holdStatus(ctx, "crasher", p.Status.PodIP)
			if err != nil {
				return false, fmt.Errorf("worker %s: %w", p.Name, err)
			}
			if len(st.Tasks) == 0 || st.Tasks[0].State != "FAILED" || !strings.Contains(st.Tasks[0].Trace, "Held FAILED") || !strings.Contains(st.Tasks[0].Trace, reason) {
				return false, fmt.Errorf("worker %s reports %+v", p.Name, st)
			}
			trace = st.Tasks[0].Trace
		}
		return ready == holdWorkers, fmt.Errorf("%d of %d workers Ready", ready, holdWorkers)
	}); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(trace, "\n")
	t.Logf("crasher held FAILED %.1f s after it was created: %s", time.Since(attackAt).Seconds(), head)

	// The hold holds: no worker container restarts from now on, and the
	// healthy connector keeps RUNNING and producing.
	restarts := func() int32 {
		pods, _, err := cv.WorkerPods(ctx, holdNS, holdCluster)
		if err != nil {
			t.Fatal(err)
		}
		n := int32(0)
		for _, p := range pods {
			n += containerRestarts(&p)
		}
		return n
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	produced := func() int64 {
		ends, err := adm.ListEndOffsets(ctx, "hold-steady")
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	restartsAtHold, producedAtHold := restarts(), produced()
	watch := time.Now()
	_ = testkit.Until(ctx, 30*time.Second, "30 s of watching the hold", func(context.Context) (bool, error) {
		if n := restarts(); n != restartsAtHold {
			t.Fatalf("worker containers restarted %d times after the hold (had %d): the held connector crashed another worker", n, restartsAtHold)
		}
		return time.Since(watch) > 25*time.Second, nil
	})
	st, err := holdStatus(ctx, "steady", "")
	if s := st.notRunning(); err != nil || s != "" {
		t.Errorf("the healthy connector after the crash: %s (%v)", s, err)
	}
	producedAfter := produced()
	ready, _ := cluster.RunKubectl(ctx, "", "get", "kafkaconnector", "crasher", "-n", holdNS, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
	head, _, _ = strings.Cut(ready, "\n")
	t.Logf("KafkaConnector crasher Ready: %s", head)
	fmt.Printf("conveyor-adversarial: hold_worker_restarts=%d\n", restartsAtHold)
	fmt.Printf("conveyor-adversarial: hold_restarts_after_hold=%d\n", restarts()-restartsAtHold)
	fmt.Printf("conveyor-adversarial: hold_healthy_records_during_watch=%d\n", producedAfter-producedAtHold)
	if restartsAtHold < 1 {
		t.Errorf("no worker container restarted: CrashSource did not crash a worker, so the hold was not exercised")
	}
	if producedAfter <= producedAtHold {
		t.Errorf("the healthy connector produced nothing in the 30 s after the hold (%d records before, %d after)", producedAtHold, producedAfter)
	}
}

// holdStatus reads a connector's status from the worker at podIP, or
// from any Ready worker when podIP is "".
func holdStatus(ctx context.Context, name, podIP string) (blastState, error) {
	return connectorStatus(ctx, holdNS, holdCluster, name, podIP)
}
