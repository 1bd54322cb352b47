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

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"

	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

// Class 5 of issue 25, one connector crashes every worker: a tenant adds,
// beside healthy pipelines that stream into PostgreSQL on 3 workers,
//   - a RedisSink whose redis.url points at a server the tenant runs,
//     which answers a write with a bulk string 2^62 bytes long: go-redis
//     allocates it on the sink's writer goroutine, and the makeslice panic
//     ended the worker process (and, as the task moved on or came back
//     with the restarted container, the next one);
//   - a RangeSource with ranges=2000000000: the connector's TaskConfigs
//     made 2·10^9 sub-ranges at once (32 GB), a fatal "out of memory" no
//     recover catches.
//
// The healthy connectors must stay RUNNING and lose no record, no worker
// container may restart, and the bad connectors must be FAILED with the
// panic as the trace or refused naming the key.
const (
	blastNS        = "blast"
	blastCluster   = "blast"
	blastWorkers   = 3
	blastRecords   = 40_000 // per healthy pipeline
	blastRate      = 2_000  // records/s per healthy source: the stream lasts ~20 s
	blastPipelines = 2
)

// blastAttackers are the two bad connectors, as a tenant would write them.
func blastAttackers(redisAddr string) string {
	return fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: panics
spec:
  clusterRef: {name: %[1]s}
  class: RedisSink
  tasksMax: 1
  config:
    topics: blast-redis
    redis.url: "redis://%[2]s"
    key.converter: StringConverter
    value.converter: StringConverter
---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: exhausts
spec:
  clusterRef: {name: %[1]s}
  class: RangeSource
  tasksMax: 1
  config:
    topic: blast-ranges
    count: "1000000000000"
    ranges: "2000000000"
`, blastCluster, redisAddr)
}

func TestBlastRadius(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if _, err := cluster.RunKubectl(ctx, "", "create", "namespace", blastNS); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.RunKubectl(ctx, localcluster.StreamCluster{Name: blastCluster, Replicas: blastWorkers, Kafka: cluster.KafkaAddr,
		FlushInterval: time.Second, LostWorkerDelay: 5 * time.Second}.Manifest(), "apply", "-n", blastNS, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	pods, err := cv.WaitWorkersReady(ctx, blastNS, blastCluster, blastWorkers, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	podsBefore := map[string]bool{}
	for _, p := range pods {
		podsBefore[p.Name] = true
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	db, err := pg.NewDatabase(ctx, "blast")
	if err != nil {
		t.Fatal(err)
	}
	var healthy []string
	for i := range blastPipelines {
		name := fmt.Sprintf("healthy%d", i)
		topic := "blast-" + name
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatalf("creating topic %s: %v", topic, err)
		}
		if _, err := cluster.RunKubectl(ctx, localcluster.Pipeline{Name: name, Cluster: blastCluster, Topic: topic, Records: blastRecords, Rate: blastRate,
			SinkTasks: 3, DatabaseURL: pg.URL(db), Table: name}.Manifest(), "apply", "-n", blastNS, "-f", "-"); err != nil {
			t.Fatal(err)
		}
		healthy = append(healthy, name)
	}
	counts := func(ctx context.Context) (map[string]int64, error) {
		conn, err := pgx.Connect(ctx, pg.URL(db))
		if err != nil {
			return nil, err
		}
		defer conn.Close(context.Background())
		out := map[string]int64{}
		for _, name := range healthy {
			var n int64
			if err := conn.QueryRow(ctx, `SELECT count(DISTINCT id) FROM `+name).Scan(&n); err != nil {
				return nil, err
			}
			out[name] = n
		}
		return out, nil
	}
	if err := testkit.Until(ctx, 3*time.Minute, "the healthy pipelines streaming into PostgreSQL", func(ctx context.Context) (bool, error) {
		c, err := counts(ctx)
		if err != nil {
			return false, err
		}
		for _, n := range c {
			if n < blastRecords/10 {
				return false, fmt.Errorf("rows so far: %v", c)
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}

	// The attack, while the healthy pipelines stream.
	redis, err := servers.StartHostileRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Close()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "blast-redis"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r := &kgo.Record{Topic: "blast-redis", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte("v")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cluster.RunKubectl(ctx, blastAttackers(redis.Addr), "apply", "-n", blastNS, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	attackAt := time.Now()

	// The connector whose goroutine panicked is FAILED with the panic.
	var trace string
	if err := testkit.Until(ctx, 2*time.Minute, "the RedisSink's task FAILED with the panic", func(ctx context.Context) (bool, error) {
		st, err := blastStatus(ctx, "panics")
		if err != nil {
			return false, err
		}
		for _, ts := range st.Tasks {
			if ts.State == "FAILED" && strings.Contains(ts.Trace, "makeslice: len out of range") {
				trace = ts.Trace
				return true, nil
			}
		}
		return false, fmt.Errorf("status %+v; the hostile server saw %d writes", st, redis.Writes())
	}); err != nil {
		t.Error(err)
	}
	if trace != "" {
		head, _, _ := strings.Cut(trace, "\n")
		t.Logf("panics: FAILED, trace begins %q", head)
	}

	// The connector whose config would exhaust memory is refused, naming
	// the key and its bound.
	var msg string
	if err := testkit.Until(ctx, 2*time.Minute, "the RangeSource refused naming ranges", func(ctx context.Context) (bool, error) {
		out, err := cluster.RunKubectl(ctx, "", "get", "kafkaconnector", "-n", blastNS, "exhausts", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}")
		if err != nil {
			return false, err
		}
		msg = out
		return strings.Contains(msg, "ranges") && strings.Contains(msg, "at most 10000"), fmt.Errorf("Ready message %q", msg)
	}); err != nil {
		t.Error(err)
	}
	t.Logf("exhausts: refused: %s", msg)

	// The healthy pipelines finish: every record in PostgreSQL, every
	// task RUNNING, no worker container restarted, no pod replaced.
	var got map[string]int64
	_ = testkit.Until(ctx, 3*time.Minute, "every healthy record in PostgreSQL", func(ctx context.Context) (bool, error) {
		var err error
		got, err = counts(ctx)
		for _, n := range got {
			if n < blastRecords {
				return false, err
			}
		}
		return err == nil, err
	})
	missing := int64(0)
	for _, name := range healthy {
		missing += blastRecords - got[name]
	}
	var notRunning string
	if err := testkit.Until(ctx, 30*time.Second, "the healthy connectors RUNNING", func(ctx context.Context) (bool, error) {
		for _, name := range healthy {
			for _, c := range []string{"src-" + name, "sink-" + name} {
				st, err := blastStatus(ctx, c)
				if err != nil {
					return false, err
				}
				if s := st.notRunning(); s != "" {
					notRunning = c + ": " + s
					return false, fmt.Errorf("%s", notRunning)
				}
			}
		}
		notRunning = ""
		return true, nil
	}); err != nil {
		t.Error(err)
	}
	pods, _, err = cv.WorkerPods(ctx, blastNS, blastCluster)
	if err != nil {
		t.Fatal(err)
	}
	restarts, replaced := int32(0), 0
	for _, p := range pods {
		restarts += containerRestarts(&p)
		if !podsBefore[p.Name] {
			replaced++
		}
	}
	fmt.Printf("conveyor-adversarial: blast_healthy_records=%d\n", blastRecords*blastPipelines)
	fmt.Printf("conveyor-adversarial: blast_missing=%d\n", missing)
	fmt.Printf("conveyor-adversarial: blast_worker_restarts=%d\n", restarts)
	fmt.Printf("conveyor-adversarial: blast_pods_replaced=%d\n", replaced)
	fmt.Printf("conveyor-adversarial: blast_hostile_redis_writes=%d\n", redis.Writes())
	fmt.Printf("conveyor-adversarial: blast_attack_to_end_s=%.1f\n", time.Since(attackAt).Seconds())
	if missing != 0 {
		t.Errorf("%d of %d healthy records missing in PostgreSQL (%v)", missing, blastRecords*blastPipelines, got)
	}
	if restarts != 0 || replaced != 0 {
		t.Errorf("worker containers restarted %d times and %d pods were replaced: a connector crashed a worker", restarts, replaced)
	}
	if redis.Writes() == 0 {
		t.Errorf("the RedisSink never wrote to the hostile server: the panic path was not exercised")
	}
}

func containerRestarts(p *corev1.Pod) int32 {
	n := int32(0)
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// blastState is a connector's status as a worker's REST API reports it.
type blastState struct {
	Connector struct{ State, Trace string } `json:"connector"`
	Tasks     []struct {
		ID    int `json:"id"`
		State string
		Trace string
	} `json:"tasks"`
}

func (s blastState) notRunning() string {
	if s.Connector.State != "RUNNING" || len(s.Tasks) == 0 {
		return fmt.Sprintf("connector %s with %d tasks", s.Connector.State, len(s.Tasks))
	}
	for _, ts := range s.Tasks {
		if ts.State != "RUNNING" {
			return fmt.Sprintf("task %d %s", ts.ID, ts.State)
		}
	}
	return ""
}

// blastStatus reads a connector's status from a Ready worker.
func blastStatus(ctx context.Context, name string) (blastState, error) {
	return connectorStatus(ctx, blastNS, blastCluster, name, "")
}

// connectorStatus reads a connector's status from the worker of cluster
// ns/cc at podIP, or from any Ready worker when podIP is "".
func connectorStatus(ctx context.Context, ns, cc, name, podIP string) (blastState, error) {
	var st blastState
	pods, c, err := cv.WorkerPods(ctx, ns, cc)
	if err != nil {
		return st, err
	}
	token, err := cv.RestToken(ctx, c)
	if err != nil {
		return st, err
	}
	for _, p := range pods {
		if (podIP == "" && localcluster.PodReady(&p)) || (podIP != "" && p.Status.PodIP == podIP) {
			return st, cluster.RestGet(ctx, p.Status.PodIP, token, "/connectors/"+name+"/status", &st)
		}
	}
	return st, fmt.Errorf("no worker pod Ready")
}
