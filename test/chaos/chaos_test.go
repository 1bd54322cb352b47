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
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const (
	ns          = "chaos"
	clusterName = "chaos"
	workers     = 3
	records     = 300_000
	// rate is the source's records per second (the whole connector): the
	// stream lasts about 12s, long enough for the faults to land in it.
	rate            = 25_000
	lostWorkerDelay = 5 * time.Second
	flushInterval   = time.Second
	partitions      = 6
	// The mariadb scenario's source table gets myRecords rows at myRate
	// per second (a feeder inserting batches every 20ms), read by the
	// table source in incrementing mode.
	myRecords = 150_000
	myRate    = 12_500
)

var setupOnce sync.Once

// setup creates the namespace and the ConnectCluster once for all scenarios.
func setup(t *testing.T) {
	t.Helper()
	var err error
	setupOnce.Do(func() {
		ctx := t.Context()
		if _, err = cluster.RunKubectl(ctx, "", "create", "namespace", ns); err != nil {
			return
		}
		if _, err = cluster.RunKubectl(ctx, localcluster.StreamCluster{Name: clusterName, Replicas: workers, Kafka: cluster.KafkaAddr,
			FlushInterval: flushInterval, LostWorkerDelay: lostWorkerDelay}.Manifest(), "apply", "-n", ns, "-f", "-"); err != nil {
			return
		}
		_, err = cv.WaitWorkersReady(ctx, ns, clusterName, workers, 3*time.Minute)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// scenario is one kind of fault, injected a bounded number of times.
type scenario struct {
	name string
	// inject runs the faults and returns how many it injected and how many
	// of them could replay uncommitted work (worker crashes).
	inject func(t *testing.T, ctx context.Context) (faults, crashes int)
	// mariadb runs the MySQL pipeline (localcluster.MySqlPipeline) on the
	// MariaDB server instead of the RangeSource → PostgreSQL one.
	mariadb bool
}

// TestChaos runs one scenario per fault on the same cluster.
func TestChaos(t *testing.T) {
	setup(t)
	scenarios := []scenario{
		{"worker-sigkill", sigkillWorkers, false},
		{"mariadb-sigkill", sigkillWorkers, true},
		{"heavy-storm", heavyStorm, false},
		{"pod-delete", deletePods, false},
		{"operator-sigkill", sigkillOperator, false},
		{"kafka-restart", killKafka, false},
		{"apiserver-restart", restartAPIServer, false},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { run(t, sc) })
	}
}

func chaosf(name, key string, v any) { fmt.Printf("conveyor-chaos: %s_%s=%v\n", name, key, v) }

func run(t *testing.T, sc scenario) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	topic := "chaos-" + sc.name
	total, srcRate := records, rate
	var manifest string
	var counter *rowCounter
	if sc.mariadb {
		total, srcRate = myRecords, myRate
		manifest, counter, topic = mysqlPipeline(t, ctx, sc.name)
	}
	adm, cl := kafkaAdmin(t)
	defer cl.Close()
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
	if !sc.mariadb {
		db, err := pg.NewDatabase(ctx, "chaos_"+sc.name)
		if err != nil {
			t.Fatal(err)
		}
		manifest = localcluster.Pipeline{Name: sc.name, Cluster: clusterName, Topic: topic, Records: records, Rate: rate,
			SinkTasks: partitions, DatabaseURL: pg.URL(db), Table: "records"}.Manifest()
		counter = newRowCounter(pgCount(pg.URL(db)))
	}
	if _, err := cluster.RunKubectl(ctx, manifest, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	conns := []string{"src-" + sc.name, "sink-" + sc.name}
	if err := testkit.Until(ctx, 2*time.Minute, "10% of the records in the sink's table", func(ctx context.Context) (bool, error) {
		rows, _, err := counter.count(ctx)
		return rows >= int64(total)/10, err
	}); err != nil {
		t.Fatal(err)
	}

	faults, crashes := sc.inject(t, ctx)
	faultsEnd := time.Now()
	// The bound runs from the last fault or, when the kubelet's
	// CrashLoopBackOff holds a killed worker down longer, from its
	// restart: how long the kubelet waits is not the workers' doing.
	bound := 30*time.Second + lostWorkerDelay
	err := testkit.Until(ctx, bound+time.Minute, "every worker Ready and every task RUNNING", func(ctx context.Context) (bool, error) {
		return allRunning(ctx, conns...)
	})
	converged := time.Now()
	var held time.Duration
	if s := lastWorkerStart(ctx); s.After(faultsEnd) {
		held, faultsEnd = s.Sub(faultsEnd), s
	}
	converge := converged.Sub(faultsEnd)
	if err == nil && converge > bound {
		err = fmt.Errorf("converged %.1fs after the last fault", converge.Seconds())
	}
	if err != nil {
		t.Errorf("%s: not converged within %s after the faults: %v", sc.name, bound, err)
	}

	// The last count read stands (a count cut short by the deadline
	// reads nothing).
	var rows, distinct int64
	if err := testkit.Until(ctx, 90*time.Second, "every record in the sink's table", func(ctx context.Context) (bool, error) {
		r, d, err := counter.count(ctx)
		if err == nil {
			rows, distinct = r, d
		}
		return distinct >= int64(total), err
	}); err != nil {
		t.Logf("%s: %v", sc.name, err)
	}
	missing := int64(total) - distinct
	duplicates := rows - distinct
	// The uncommitted window: a crashed worker's tasks replay what they
	// did since their last offset commit, at most one flush interval (plus
	// the commit's own time, 1s) of the source's rate and of the sink's
	// fastest observed rate, per crash.
	window := flushInterval + time.Second
	dupBound := int64(float64(crashes) * (float64(srcRate) + counter.peakRate()) * window.Seconds())
	chaosf(sc.name, "faults", faults)
	chaosf(sc.name, "restart_held_s", fmt.Sprintf("%.1f", held.Seconds()))
	chaosf(sc.name, "converge_s", fmt.Sprintf("%.1f", converge.Seconds()))
	chaosf(sc.name, "missing", missing)
	chaosf(sc.name, "duplicates", duplicates)
	chaosf(sc.name, "duplicate_bound", dupBound)
	if missing != 0 {
		t.Errorf("%s: %d of %d records missing in the sink's table", sc.name, missing, total)
	}
	if duplicates > dupBound {
		t.Errorf("%s: %d duplicates, more than the uncommitted window allows (%d)", sc.name, duplicates, dupBound)
	}
	// Free the cluster for the next scenario.
	for _, c := range conns {
		_, _ = cluster.RunKubectl(ctx, "", "delete", "kafkaconnector", "-n", ns, c, "--wait=true", "--timeout=60s")
	}
}

func kafkaAdmin(t *testing.T) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl), cl
}

// rowCounter counts the sink table's rows and distinct ids, and keeps the
// fastest rate at which rows arrived between two counts.
type rowCounter struct {
	countRows func(ctx context.Context) (rows, distinct int64, err error)
	mu        sync.Mutex
	last      int64
	lastAt    time.Time
	peak      float64
}

func newRowCounter(count func(ctx context.Context) (rows, distinct int64, err error)) *rowCounter {
	return &rowCounter{countRows: count}
}

// pgCount counts the PostgreSQL sink's table.
func pgCount(url string) func(ctx context.Context) (rows, distinct int64, err error) {
	return func(ctx context.Context) (rows, distinct int64, err error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return 0, 0, err
		}
		defer conn.Close(context.Background())
		err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM records`).Scan(&rows, &distinct)
		return rows, distinct, err
	}
}

func (c *rowCounter) count(ctx context.Context) (rows, distinct int64, err error) {
	if rows, distinct, err = c.countRows(ctx); err != nil {
		return 0, 0, err
	}
	c.mu.Lock()
	now := time.Now()
	if !c.lastAt.IsZero() && now.Sub(c.lastAt) > 100*time.Millisecond {
		c.peak = max(c.peak, float64(rows-c.last)/now.Sub(c.lastAt).Seconds())
	}
	c.last, c.lastAt = rows, now
	c.mu.Unlock()
	return rows, distinct, nil
}

func (c *rowCounter) peakRate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peak
}

// lastWorkerStart is when the latest worker container started (the
// kubelet's restarts included), to the second; zero if unknown.
func lastWorkerStart(ctx context.Context) time.Time {
	pods, _, err := cv.WorkerPods(ctx, ns, clusterName)
	if err != nil {
		return time.Time{}
	}
	var last time.Time
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if r := cs.State.Running; r != nil && r.StartedAt.After(last) {
				last = r.StartedAt.Time
			}
		}
	}
	return last
}

// allRunning reports whether every worker pod is Ready and every task of
// the connectors RUNNING, as a worker's REST API reports them.
func allRunning(ctx context.Context, conns ...string) (bool, error) {
	pods, cc, err := cv.WorkerPods(ctx, ns, clusterName)
	if err != nil {
		return false, err
	}
	ready := 0
	var ip string
	for _, p := range pods {
		if localcluster.PodReady(&p) {
			ready++
			ip = p.Status.PodIP
		}
	}
	if ready != workers || len(pods) != workers {
		return false, fmt.Errorf("%d of %d worker pods Ready (%d pods)", ready, workers, len(pods))
	}
	token, err := cv.RestToken(ctx, cc)
	if err != nil {
		return false, err
	}
	for _, c := range conns {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+ip+":8083/connectors/"+c+"/status", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		var st struct {
			Connector struct{ State string }   `json:"connector"`
			Tasks     []struct{ State string } `json:"tasks"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			return false, fmt.Errorf("status of %s: %w", c, err)
		}
		if st.Connector.State != "RUNNING" || len(st.Tasks) == 0 {
			return false, fmt.Errorf("%s is %s with %d tasks", c, st.Connector.State, len(st.Tasks))
		}
		for i, ts := range st.Tasks {
			if ts.State != "RUNNING" {
				return false, fmt.Errorf("%s task %d is %s", c, i, ts.State)
			}
		}
	}
	return true, nil
}

// sigkillWorkers SIGKILLs worker processes, 1-2s apart, a random Running
// worker pod each time; the kubelet restarts each in its pod.
func sigkillWorkers(t *testing.T, ctx context.Context) (int, int) {
	const kills = 6
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	n := 0
	for range kills {
		pods, _, err := cv.WorkerPods(ctx, ns, clusterName)
		if err != nil {
			t.Fatal(err)
		}
		p := pods[rng.IntN(len(pods))]
		if _, err := cluster.KillPod(ns, p.Name); err == nil {
			n++
			t.Logf("SIGKILL %s", p.Name)
		}
		time.Sleep(time.Second + time.Duration(rng.IntN(1000))*time.Millisecond) // the fault schedule
	}
	return n, n
}

// heavyStorm is issue 32's storm: 16 worker SIGKILLs 2s apart, the eighth
// of which takes a pod for good: its process is SIGKILLed (no LeaveGroup)
// and the pod deleted at once, so the Deployment replaces it under a new
// name. The operator removes the deleted pod's static group members; the
// others come back in their pods (the kubelet's restart).
func heavyStorm(t *testing.T, ctx context.Context) (int, int) {
	const kills = 16
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 32))
	n := 0
	for i := range kills {
		pods, _, err := cv.WorkerPods(ctx, ns, clusterName)
		if err != nil {
			t.Fatal(err)
		}
		p := pods[rng.IntN(len(pods))]
		if _, err := cluster.KillPod(ns, p.Name); err == nil {
			n++
			t.Logf("SIGKILL %s", p.Name)
		}
		if i == kills/2 {
			if err := cluster.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
				t.Fatal(err)
			}
			t.Logf("deleted pod %s for good", p.Name)
		}
		if i < kills-1 {
			time.Sleep(2 * time.Second) // the fault schedule
		}
	}
	return n, n
}

func ptr[T any](v T) *T { return &v }

// deletePods deletes two worker pods, 5s apart; the Deployment replaces
// them under new names (a SIGTERM first: a planned departure).
func deletePods(t *testing.T, ctx context.Context) (int, int) {
	n := 0
	for range 2 {
		pods, _, err := cv.WorkerPods(ctx, ns, clusterName)
		if err != nil {
			t.Fatal(err)
		}
		name := pods[0].Name
		if err := cluster.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("deleted pod %s", name)
		n++
		time.Sleep(5 * time.Second) // the fault schedule
	}
	return n, 0
}

// sigkillOperator SIGKILLs the operator twice, 5s apart.
func sigkillOperator(t *testing.T, ctx context.Context) (int, int) {
	n := 0
	for range 2 {
		op, err := cv.OperatorPod(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.KillPod(op.Namespace, op.Name); err != nil {
			t.Fatal(err)
		}
		t.Logf("SIGKILL operator %s", op.Name)
		n++
		time.Sleep(5 * time.Second) // the fault schedule
	}
	return n, 0
}

// killKafka SIGKILLs the broker once and starts it again on its data folder.
func killKafka(t *testing.T, ctx context.Context) (int, int) {
	if err := cluster.KillKafka(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Kafka killed and restarted on its data folder")
	// Every task replays what it had not committed when the broker
	// went away: count it as a crash of each worker.
	return 1, workers
}

// restartAPIServer restarts kube-apiserver once.
func restartAPIServer(t *testing.T, ctx context.Context) (int, int) {
	if err := cluster.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted")
	return 1, 0
}
