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

package autoscale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const (
	ns           = "autoscale"
	lagThreshold = 1000
	minWorkers   = 2
	// Sink a reads a1 and a2 with tasksMax 2, sink b reads b1 and b2 with tasksMax 4; every
	// topic has 2 partitions, so sink a runs 2 tasks (limited by tasksMax) and sink b 4:
	// 6 in all, which is also where the operator caps maxReplicas.
	tasksA, tasksB = 2, 4
	perTopicA      = 4000 // sink a: lag 8000; KEDA caps each topic at 2 partitions × 1000
	perTopicB      = 800  // sink b: lag 1600, below its cap of 4 tasks × 1000
	// The composite: min(2000 + 2000, 2 tasks × 1000) + min(800 + 800, 4000) = 3600 →
	// ceil(3.6) = 4 workers. Without the task cap it would be 5600 → 6 (maxReplicas); with
	// one trigger per topic the HPA's maximum over them would give 2.
	wantPeak = 4
	// Records written while the cluster scales down, 100 per topic.
	perTopicLate = 100
)

var topicsA, topicsB = []string{"a1", "a2"}, []string{"b1", "b2"}

// TestAutoscaleUpAndDown builds a backlog on two slow sink connectors, then checks with
// real KEDA and the real HPA that the workers scale up to the composite need (capped by
// each sink's tasks), that the new workers take tasks through the cooperative rebalance,
// that the lag drains once the sinks write at full speed, and that the cluster scales back
// down to minReplicas through planned handovers, with every record written exactly once or
// more (none lost). It prints the scale-up and scale-down times.
func TestAutoscaleUpAndDown(t *testing.T) {
	ctx := t.Context()
	// Round robin: every partition gets its share of the backlog, so every task has work.
	kc, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, append(slices.Clone(topicsA), topicsB...)...); err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	produce := func(topics []string, n int) {
		t.Helper()
		var recs []*kgo.Record
		for _, topic := range topics {
			for range n {
				recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":%d}`, next)})
				next++
			}
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(topicsA, perTopicA)
	produce(topicsB, perTopicB)

	if _, err := cluster.RunKubectl(ctx, "", "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.RunKubectl(ctx, manifest(cluster.KafkaAddr, sinkPath), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if _, err := cv.WaitConnectorsRunning(ctx, ns, 3*time.Minute, "sink-a", "sink-b"); err != nil {
		t.Fatal(err)
	}
	sinksRunning := time.Now()
	var cc v1alpha1.ConnectCluster
	testkit.EventuallyNoError(t, time.Minute, "ConnectCluster as to be Autoscaling=True", func() error {
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "as"}, &cc); err != nil {
			return err
		}
		for _, c := range cc.Status.Conditions {
			if c.Type == "Autoscaling" {
				if c.Status != metav1.ConditionTrue {
					return fmt.Errorf("Autoscaling=%s %s: %s", c.Status, c.Reason, c.Message)
				}
				return nil
			}
		}
		return fmt.Errorf("no Autoscaling condition in %v", cc.Status.Conditions)
	})

	// 1. Scale up to the composite need, capped by the sinks' tasks: exactly 4, and no more.
	peak := 0
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d Ready workers", wantPeak), func() error {
		all, _, err := cv.WorkerPods(ctx, ns, "as")
		if err != nil {
			return err
		}
		if peak = max(peak, len(all)); peak > wantPeak {
			t.Fatalf("the workers went up to %d, want %d (the composite need capped by tasks); HPA %s", peak, wantPeak, hpaState(ctx, ns))
		}
		pods, err := readyWorkers(ctx, ns, "as")
		if err != nil {
			return err
		}
		if len(pods) != wantPeak {
			return fmt.Errorf("%d Ready workers; HPA %s; %s", len(pods), hpaState(ctx, ns), scaledObjectState(ctx, ns))
		}
		return nil
	})
	scaleUp := time.Since(sinksRunning)
	t.Logf("%d workers %.1fs after the sinks ran; HPA %s", wantPeak, scaleUp.Seconds(), hpaState(ctx, ns))
	if peak > wantPeak {
		t.Fatalf("the workers went up to %d, want %d (the composite need capped by tasks)", peak, wantPeak)
	}
	// The HPA keeps asking for 4 over several of its syncs (2s) while the backlog lasts.
	testkit.Consistently(t, 8*time.Second, "the HPA to keep 4 workers", func() (bool, string) {
		hpa, err := theHPA(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		return hpa.Status.DesiredReplicas == wantPeak, fmt.Sprintf("HPA desires %d workers, want %d: %s", hpa.Status.DesiredReplicas, wantPeak, hpaState(ctx, ns))
	})

	// 2. The new workers take tasks through the cooperative rebalance: all four run some of
	// the 6 tasks.
	pods, err := readyWorkers(ctx, ns, "as")
	if err != nil {
		t.Fatal(err)
	}
	token, err := cv.RestToken(ctx, &cc)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNoError(t, 90*time.Second, fmt.Sprintf("the %d sink tasks to spread over the %d workers", tasksA+tasksB, wantPeak), func() error {
		per, err := tasksPerWorker(ctx, pods[0].Status.PodIP, token, "sink-a", "sink-b")
		if err != nil {
			return err
		}
		n := 0
		for _, c := range per {
			n += c
		}
		if n != tasksA+tasksB || len(per) != wantPeak {
			return fmt.Errorf("%d running tasks on %d workers: %v", n, len(per), per)
		}
		return nil
	})

	// 3. The sinks write at full speed: the lag drains.
	for _, s := range []string{"sink-a", "sink-b"} {
		if _, err := cluster.RunKubectl(ctx, "", "patch", "-n", ns, "kafkaconnector/"+s, "--type=merge", "-p", `{"spec":{"config":{"rate":"0"}}}`); err != nil {
			t.Fatal(err)
		}
	}
	waitDrained(t, adm, next)
	drained := time.Now()
	t.Logf("drained; HPA %s", hpaState(ctx, ns))
	if ids := fileIDs(t, "sink-a", "sink-b"); len(ids) != int(next) {
		t.Fatalf("the sinks wrote %d distinct records of %d", len(ids), next)
	}

	// 4. After the HPA's downscale stabilization, the cluster scales down to minReplicas;
	// records keep coming while it does.
	testkit.EventuallyNoError(t, 2*time.Minute, "the HPA to scale down", func() error {
		hpa, err := theHPA(ctx, ns)
		if err != nil {
			return err
		}
		if hpa.Status.DesiredReplicas >= wantPeak {
			return fmt.Errorf("HPA desires %d: %s", hpa.Status.DesiredReplicas, hpaState(ctx, ns))
		}
		return nil
	})
	t.Logf("scale-down began %.1fs after the drain; HPA %s", time.Since(drained).Seconds(), hpaState(ctx, ns))
	produce(append(slices.Clone(topicsA), topicsB...), perTopicLate)
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d Ready workers", minWorkers), func() error {
		all, _, err := cv.WorkerPods(ctx, ns, "as")
		if err != nil {
			return err
		}
		ready, err := readyWorkers(ctx, ns, "as")
		if err != nil {
			return err
		}
		if len(all) != minWorkers || len(ready) != minWorkers {
			return fmt.Errorf("%d workers, %d Ready; HPA %s", len(all), len(ready), hpaState(ctx, ns))
		}
		return nil
	})
	scaleDown := time.Since(drained)
	// Planned handovers: the tasks of the removed workers run again on the two left well
	// within lostWorkerDelay (60s), which the tasks of a crashed worker would wait out.
	atMin := time.Now()
	live, err := readyWorkers(ctx, ns, "as")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNoError(t, 30*time.Second, fmt.Sprintf("the %d sink tasks to run on the %d workers left", tasksA+tasksB, minWorkers), func() error {
		per, err := tasksPerWorker(ctx, live[0].Status.PodIP, token, "sink-a", "sink-b")
		if err != nil {
			return err
		}
		n := 0
		for w, c := range per {
			if !slices.ContainsFunc(live, func(p corev1.Pod) bool { return w == fmt.Sprintf("%s:%d", p.Status.PodIP, v1alpha1.RestPort) }) {
				return fmt.Errorf("%d tasks still on removed worker %s", c, w)
			}
			n += c
		}
		if n != tasksA+tasksB {
			return fmt.Errorf("%d running tasks: %v", n, per)
		}
		return nil
	})
	handedOver := time.Since(atMin)
	// A removed worker stops its tasks, then leaves; its tasks may run on
	// the others before its LeaveGroup is logged (the operator removes a
	// departed pod's static member from the group too).
	testkit.EventuallyNoError(t, 30*time.Second, "every removed worker to log leaving the group (a planned stop)", func() error {
		if left := leftGroupLogs(t, pods); left < wantPeak-minWorkers {
			return fmt.Errorf("%d of the %d removed workers logged leaving the group", left, wantPeak-minWorkers)
		}
		return nil
	})
	waitDrained(t, adm, next)
	ids := fileIDs(t, "sink-a", "sink-b")
	if len(ids) != int(next) {
		t.Fatalf("the sinks wrote %d distinct records of %d", len(ids), next)
	}
	for id := range ids {
		if id < 0 || id >= next {
			t.Fatalf("unexpected record id %d", id)
		}
	}
	lines := fileLines(t, "sink-a", "sink-b")
	fmt.Printf("conveyor-e2e: autoscale_peak_workers=%d\n", peak)
	fmt.Printf("conveyor-e2e: autoscale_scale_up_s=%.1f\n", scaleUp.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_scale_down_s=%.1f\n", scaleDown.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_handover_s=%.1f\n", handedOver.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_records=%d\n", next)
	fmt.Printf("conveyor-e2e: autoscale_missing=%d\n", int(next)-len(ids))
	fmt.Printf("conveyor-e2e: autoscale_duplicates=%d\n", lines-len(ids))
}

func manifest(kafka, dir string) string {
	return clusterManifest("as", minWorkers, kafka, lagThreshold) +
		sinkManifest("sink-a", "as", topicsA, tasksA, dir) + sinkManifest("sink-b", "as", topicsB, tasksB, dir)
}

// clusterManifest is an autoscaling ConnectCluster of at least minReplicas workers.
func clusterManifest(name string, minReplicas int, kafka string, threshold int) string {
	return fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: %s
spec:
  replicas: %d
  kafka:
    bootstrapServers: %s
  storage:
    replicationFactor: 1
    offsetPartitions: 3
    statusPartitions: 1
  config:
    key.converter: org.apache.kafka.connect.storage.StringConverter
    value.converter: org.apache.kafka.connect.json.JsonConverter
    value.converter.schemas.enable: "false"
    offset.flush.interval.ms: "1000"
  rebalance:
    lostWorkerDelay: 60s
  connectorAccess:
    fileConnectors: [{path: %s}]
  autoscaling:
    enabled: true
    minReplicas: %d
    maxReplicas: 10
    lagThreshold: %d
    pollingInterval: 1s
    cooldownPeriod: 15s
`, name, minReplicas, kafka, sinkPath, minReplicas, threshold)
}

// sinkPath is where the workers see the folder granted to file connectors (sinkDir on the host).
const sinkPath = "/data"

// sinkManifest is a slow FileSink (1 record a second per task) of cluster writing to
// dir/<name>.jsonl.
func sinkManifest(name, cluster string, topics []string, tasksMax int, dir string) string {
	return fmt.Sprintf(`---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: %s
spec:
  clusterRef: {name: %s}
  class: FileSink
  tasksMax: %d
  config:
    topics: %s
    file: %s/%s.jsonl
    rate: "1"
`, name, cluster, tasksMax, strings.Join(topics, ","), dir, name)
}

// tasksPerWorker counts the RUNNING tasks of the named connectors per worker id, as the
// worker at podIP reports them.
func tasksPerWorker(ctx context.Context, podIP, token string, connectors ...string) (map[string]int, error) {
	per := map[string]int{}
	for _, name := range connectors {
		var st struct {
			Tasks []struct {
				State    string `json:"state"`
				WorkerID string `json:"worker_id"`
			} `json:"tasks"`
		}
		if err := cluster.RestGet(ctx, podIP, token, "/connectors/"+name+"/status", &st); err != nil {
			return nil, err
		}
		for _, task := range st.Tasks {
			if task.State == "RUNNING" {
				per[task.WorkerID]++
			}
		}
	}
	return per, nil
}

// readyWorkers returns the Ready worker pods of ConnectCluster ns/name.
func readyWorkers(ctx context.Context, ns, name string) ([]corev1.Pod, error) {
	all, _, err := cv.WorkerPods(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range all {
		if localcluster.PodReady(&p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// theHPA is the HPA that KEDA made for the ScaledObject in ns.
func theHPA(ctx context.Context, ns string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	list, err := cluster.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("%d HPAs in %s, want the one KEDA makes", len(list.Items), ns)
	}
	return &list.Items[0], nil
}

// hpaState describes the HPA for failure messages: replicas, metrics and conditions.
func hpaState(ctx context.Context, ns string) string {
	hpa, err := theHPA(ctx, ns)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "current %d desired %d", hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas)
	for _, m := range hpa.Status.CurrentMetrics {
		if m.External != nil {
			fmt.Fprintf(&b, ", metric %s=%v", m.External.Metric.Name, m.External.Current.AverageValue)
		}
	}
	for _, c := range hpa.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s", c.Type, c.Status, c.Reason)
	}
	return b.String()
}

// scaledObjectState describes the derived ScaledObject for failure messages:
// its generation, formula and the metric names KEDA recorded.
func scaledObjectState(ctx context.Context, ns string) string {
	out, err := cluster.RunKubectl(ctx, "", "get", "scaledobject", "-n", ns, "-o",
		`jsonpath={range .items[*]}ScaledObject generation {.metadata.generation}, formula "{.spec.advanced.scalingModifiers.formula}", KEDA's metric names {.status.externalMetricNames}{end}`)
	if err != nil {
		return err.Error()
	}
	return out
}

// waitDrained waits until both sinks' groups committed the end of every topic, which holds
// total records.
func waitDrained(t *testing.T, adm *kadm.Client, total int64) {
	t.Helper()
	testkit.EventuallyNoError(t, 2*time.Minute, "both sinks' groups to commit the end of their topics", func() error {
		var committed int64
		for _, g := range []string{"connect-sink-a", "connect-sink-b"} {
			lags, err := adm.Lag(t.Context(), g)
			if err != nil {
				return err
			}
			l := lags[g]
			if l.Error() != nil {
				return l.Error()
			}
			if l.Lag.Total() != 0 {
				return fmt.Errorf("group %s lags %d", g, l.Lag.Total())
			}
			for _, ps := range l.Lag {
				for _, pl := range ps {
					committed += max(pl.Commit.At, 0) // -1: nothing committed
				}
			}
		}
		if committed != total {
			return fmt.Errorf("committed %d of %d", committed, total)
		}
		return nil
	})
}

// fileIDs reads the named file sinks' files and returns the distinct record ids.
func fileIDs(t *testing.T, sinks ...string) map[int64]bool {
	t.Helper()
	ids := map[int64]bool{}
	scanFiles(t, sinks, func(line []byte) {
		var rec struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ids[rec.ID] = true
	})
	return ids
}

func fileLines(t *testing.T, sinks ...string) int {
	n := 0
	scanFiles(t, sinks, func([]byte) { n++ })
	return n
}

// scanFiles calls fn with each line the named file sinks wrote (sinkDir/<name>.jsonl).
func scanFiles(t *testing.T, sinks []string, fn func([]byte)) {
	t.Helper()
	for _, name := range sinks {
		f, err := os.Open(filepath.Join(sinkDir, name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Split(completeLines)
		for sc.Scan() {
			fn(sc.Bytes())
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// completeLines splits at newlines and leaves out a last line without one: the
// sink may be writing it while a poll reads the file (a poll once read
// `{"id":5812` and failed on it). A sink that never ends its last line shows
// as a record missing in the final count.
func completeLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	return 0, nil, nil
}

// leftGroupLogs counts the workers among pods that are gone and whose log says they left
// the group, which a worker does only when it stops on purpose.
func leftGroupLogs(t *testing.T, pods []corev1.Pod) int {
	t.Helper()
	live, _, err := cv.WorkerPods(t.Context(), ns, "as")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods {
		if slices.ContainsFunc(live, func(l corev1.Pod) bool { return l.Name == p.Name }) {
			continue
		}
		logs, _ := filepath.Glob(filepath.Join(cluster.Dir, "logs", ns+"_"+p.Name+"_*.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && strings.Contains(string(b), "left the group") {
				n++
				break
			}
		}
	}
	return n
}
