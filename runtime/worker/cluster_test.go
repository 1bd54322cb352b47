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

package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/assignor"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/group"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// Short group timings keep the cluster tests fast.
const (
	testSession   = time.Second
	testHeartbeat = 100 * time.Millisecond
	testLostDelay = time.Second
)

func newKafka(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func workerConfig(t *testing.T, kafka string, extra map[string]string) *workerconfig.Config {
	t.Helper()
	m := map[string]string{
		workerconfig.KeyBootstrapServers:               kafka,
		workerconfig.KeyGroupID:                        "cluster-a",
		workerconfig.KeyInternalTopicsCreate:           "true",
		workerconfig.KeyConfigStorageReplicationFactor: "1",
		workerconfig.KeyOffsetStorageReplicationFactor: "1",
		workerconfig.KeyStatusStorageReplicationFactor: "1",
		workerconfig.KeyOffsetStoragePartitions:        "3",
		workerconfig.KeyStatusStoragePartitions:        "3",
		workerconfig.KeyRestHostName:                   "127.0.0.1",
		workerconfig.KeyRestPort:                       "0",
		workerconfig.KeyRestAdvertisedHostName:         "127.0.0.1",
		workerconfig.KeyOffsetFlushInterval:            "200",
		workerconfig.KeyHeartbeatInterval:              fmt.Sprint(testHeartbeat.Milliseconds()),
		workerconfig.KeySessionTimeout:                 fmt.Sprint(testSession.Milliseconds()),
		workerconfig.KeyRebalanceTimeout:               "5000",
		workerconfig.KeyScheduledRebalanceMaxDelay:     fmt.Sprint(testLostDelay.Milliseconds()),
		// File connectors of the tests write under t.TempDir().
		workerconfig.KeyFileConnectorsAllowedPaths: os.TempDir(),
	}
	maps.Copy(m, extra)
	cfg, err := workerconfig.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type testWorker struct {
	*Worker
	id    string
	url   string
	token string // the REST bearer token, "" when auth is off
}

func startTestWorker(t *testing.T, kafka string, extra map[string]string) *testWorker {
	t.Helper()
	return startTestWorkerWith(t, Options{Config: workerConfig(t, kafka, extra)})
}

// startTestWorkerWith starts a worker with opts (a test logger when none).
func startTestWorkerWith(t *testing.T, opts Options) *testWorker {
	t.Helper()
	cfg := opts.Config
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		if testing.Verbose() {
			opts.Logger = slog.New(slog.NewTextHandler(&testLogWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
	}
	w, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	})
	if err := w.WaitJoined(ctx); err != nil {
		t.Fatal(err)
	}
	token, err := cfg.RestAuthToken()
	if err != nil {
		t.Fatal(err)
	}
	return &testWorker{Worker: w, id: cfg.EffectiveWorkerID(), url: "http://" + w.RESTAddr(), token: token}
}

type testLogWriter struct{ t *testing.T }

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func rangeConnector(name string, tasks int) map[string]string {
	return map[string]string{
		"name": name, "connector.class": "dev.conveyor.connect.range.RangeSourceConnector",
		"tasks.max": fmt.Sprint(tasks), "topic": name + "-out", "count": "1000000000", "rate": "50",
		"poll.interval.ms": "20",
	}
}

func doJSON(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	return doAuth(t, "", method, url, body)
}

func doAuth(t *testing.T, token, method, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func createConnector(t *testing.T, via *testWorker, cfg map[string]string) {
	t.Helper()
	// 409 while a rebalance is in progress: try again.
	testkit.Eventually(t, 20*time.Second, "connector "+cfg["name"]+" created via "+via.url, func() (bool, string) {
		code, body := doAuth(t, via.token, http.MethodPost, via.url+"/connectors", map[string]any{"name": cfg["name"], "config": cfg})
		if code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("creating connector %s via %s: %d %s", cfg["name"], via.url, code, body)
		}
		return code == http.StatusCreated, fmt.Sprintf("%d %s", code, body)
	})
}

// placement maps each task of connector to the worker id that runs it
// (status RUNNING, and that worker's assignment holds it).
func placement(ws []*testWorker, connector string, tasks int) (map[int]string, bool) {
	out := map[int]string{}
	byID := map[string]*testWorker{}
	for _, w := range ws {
		byID[w.id] = w
	}
	st, err := ws[0].Herder().ConnectorStatus(context.Background(), connector)
	if err != nil || len(st.Tasks) != tasks {
		return nil, false
	}
	for _, ts := range st.Tasks {
		w := byID[ts.WorkerID]
		if ts.State != connectapi.StateRunning || w == nil ||
			!slices.Contains(w.Herder().Assignment().Tasks, store.TaskID{Connector: connector, Task: ts.ID}) {
			return nil, false
		}
		out[ts.ID] = ts.WorkerID
	}
	// No task is assigned to two workers.
	seen := map[int]string{}
	for _, w := range ws {
		for _, id := range w.Herder().Assignment().Tasks {
			if id.Connector != connector {
				continue
			}
			if other, dup := seen[id.Task]; dup {
				panic(fmt.Sprintf("task %d assigned to %s and %s", id.Task, other, w.id))
			}
			seen[id.Task] = w.id
		}
	}
	return out, true
}

// waitPlacement waits until every task runs on one of ws and ok accepts the
// placement; it returns the placement and when it was first seen.
func waitPlacement(t *testing.T, ws []*testWorker, connector string, tasks int, timeout time.Duration, ok func(map[int]string) bool) (map[int]string, time.Time) {
	t.Helper()
	var last map[int]string
	testkit.Eventually(t, timeout, "the tasks of "+connector+" placed as wanted", func() (bool, string) {
		p, running := placement(ws, connector, tasks)
		if running {
			last = p
		}
		st, _ := ws[0].Herder().ConnectorStatus(context.Background(), connector)
		return running && ok(p), fmt.Sprintf("last running placement %v, status %+v", last, st.Tasks)
	})
	return last, time.Now()
}

// waitOneLeader waits until the workers agree on one generation with
// exactly one leader, whose URL every follower knows.
func waitOneLeader(t *testing.T, ws []*testWorker) *testWorker {
	t.Helper()
	var leader *testWorker
	testkit.EventuallyTrue(t, 10*time.Second, "the workers to settle on one leader", func() bool {
		leader = nil
		leaders, gens := 0, map[int32]bool{}
		for _, w := range ws {
			gens[w.member.Generation().ID] = true
			if w.Herder().IsLeader() {
				leaders++
				leader = w
			}
		}
		if leaders == 1 && len(gens) == 1 && !ws[0].Herder().Rebalancing() {
			agree := true
			for _, w := range ws {
				agree = agree && w.Herder().LeaderURL() == leader.url
			}
			return agree
		}
		return false
	})
	return leader
}

func perWorker(p map[int]string) map[string]int {
	n := map[string]int{}
	for _, w := range p {
		n[w]++
	}
	return n
}

func balanced(workers int) func(map[int]string) bool {
	return func(p map[int]string) bool {
		n := perWorker(p)
		if len(n) != workers {
			return false
		}
		lo, hi := len(p), 0
		for _, c := range n {
			lo, hi = min(lo, c), max(hi, c)
		}
		return hi-lo <= 1
	}
}

// starts sums every worker's start count of each task.
func starts(ws []*testWorker, connector string, tasks int) []int {
	out := make([]int, tasks)
	for _, w := range ws {
		for i := range tasks {
			out[i] += w.metrics.TaskStarts(connector, i)
		}
	}
	return out
}

func TestClusterSpreadsMovesAndFailsOver(t *testing.T) {
	kafka := newKafka(t)
	w1 := startTestWorker(t, kafka, nil)
	w2 := startTestWorker(t, kafka, nil)
	w3 := startTestWorker(t, kafka, nil)
	all := []*testWorker{w1, w2, w3}
	const tasks = 6
	createConnector(t, w3, rangeConnector("range", tasks))

	// Three workers, six tasks: two each.
	p, _ := waitPlacement(t, all, "range", tasks, 20*time.Second, func(p map[int]string) bool {
		n := perWorker(p)
		return len(n) == 3 && n[w1.id] == 2 && n[w2.id] == 2 && n[w3.id] == 2
	})
	t.Logf("3 workers: %v", perWorker(p))
	before := starts(all, "range", tasks)
	for i, n := range before {
		if n != 1 {
			t.Errorf("task %d started %d times before the fourth worker, want 1", i, n)
		}
	}

	// A fourth worker joins: one task moves to it, the others never stop.
	w4 := startTestWorker(t, kafka, nil)
	all = append(all, w4)
	p4, _ := waitPlacement(t, all, "range", tasks, 20*time.Second, balanced(4))
	after := starts(all, "range", tasks)
	moved := 0
	for i := range tasks {
		switch {
		case p4[i] != p[i]:
			moved++
			if after[i] != before[i]+1 {
				t.Errorf("moved task %d (%s -> %s) started %d times, want %d", i, p[i], p4[i], after[i], before[i]+1)
			}
		case after[i] != before[i]:
			t.Errorf("task %d kept its worker %s but was started %d times, want %d", i, p[i], after[i], before[i])
		}
	}
	// Six tasks on four workers are 2+2+1+1: the sticky assignor moves one.
	if moved != 1 || perWorker(p4)[w4.id] != 1 {
		t.Errorf("%d tasks moved, %d to the fourth worker; want 1 and 1 (placement %v -> %v)", moved, perWorker(p4)[w4.id], p, p4)
	}
	t.Logf("4 workers: %v, starts %v -> %v", perWorker(p4), before, after)

	// A graceful stop of the leader: its tasks move at once, and a new
	// leader takes over.
	var leaving *testWorker
	for _, w := range all {
		if w.Herder().IsLeader() {
			leaving = w
		}
	}
	if leaving == nil || perWorker(p4)[leaving.id] == 0 {
		t.Fatalf("no leader with tasks: leader %v, placement %v", leaving, perWorker(p4))
	}
	rest := slices.DeleteFunc(slices.Clone(all), func(w *testWorker) bool { return w == leaving })
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	if err := leaving.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	stopped := time.Since(start)
	p3, at := waitPlacement(t, rest, "range", tasks, 20*time.Second, balanced(3))
	handoff := at.Sub(start)
	waitOneLeader(t, rest)
	t.Logf("graceful handoff: %v from the shutdown call to every task running elsewhere (shutdown itself took %v); placement %v", handoff, stopped, perWorker(p3))
	// A crash cannot move tasks before session timeout + lost-worker delay;
	// a graceful leave must beat that (the figure itself, target <= 1s, is
	// measured by make bench, not asserted on this shared machine).
	if limit := testSession + testLostDelay; handoff >= limit {
		t.Errorf("graceful handoff took %v, want under session timeout + lost-worker delay (%v): a worker that leaves on purpose must not be handled as a crash", handoff, limit)
	}

	// A crash: no leave; the tasks move after the session timeout and the
	// lost-worker delay.
	var victim *testWorker
	for _, w := range rest {
		if perWorker(p3)[w.id] > 0 && !w.Herder().IsLeader() {
			victim = w
			break
		}
	}
	if victim == nil {
		t.Fatalf("no follower with tasks in %v", perWorker(p3))
	}
	survivors := slices.DeleteFunc(slices.Clone(rest), func(w *testWorker) bool { return w == victim })
	start = time.Now()
	victim.crash()
	p2, at := waitPlacement(t, survivors, "range", tasks, 30*time.Second, balanced(2))
	failover := at.Sub(start)
	t.Logf("crash failover: %v (session timeout %v, lost-worker delay %v); placement %v", failover, testSession, testLostDelay, perWorker(p2))
	// The leader notices the crash when the session expires, then holds
	// the tasks for the lost-worker delay in case the worker returns.
	if low := testSession + testLostDelay - 100*time.Millisecond; failover < low {
		t.Errorf("a crashed worker's tasks moved after %v, before session timeout + lost-worker delay (%v)", failover, low)
	}
	if limit := testSession + testLostDelay + 2*time.Second; failover > limit {
		t.Errorf("crash failover took %v, want <= session timeout + lost-worker delay + margin = %v", failover, limit)
	}

	// The leader crashes: the new leader got the old one's memory with
	// every assignment (LeaderState), so the lost leader's tasks are held
	// for the delay too, then move.
	leader := waitOneLeader(t, survivors)
	last := slices.DeleteFunc(slices.Clone(survivors), func(w *testWorker) bool { return w == leader })
	start = time.Now()
	leader.crash()
	_, at = waitPlacement(t, last, "range", tasks, 30*time.Second, balanced(1))
	failover = at.Sub(start)
	t.Logf("leader crash failover: %v", failover)
	if low := testSession + testLostDelay - 100*time.Millisecond; failover < low {
		t.Errorf("a crashed leader's tasks moved after %v, before session timeout + lost-worker delay (%v)", failover, low)
	}
}

func TestClusterFollowerForwardsWrites(t *testing.T) {
	kafka := newKafka(t)
	// REST authentication on: forwarded writes carry the caller's token,
	// task configs sent by a follower carry the cluster's.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{workerconfig.KeyRestAuthTokenFile: tokenFile}
	ws := []*testWorker{startTestWorker(t, kafka, auth), startTestWorker(t, kafka, auth), startTestWorker(t, kafka, auth)}
	var leader, follower *testWorker
	testkit.EventuallyTrue(t, 10*time.Second, "a leader and a follower that knows it", func() bool {
		leader, follower = nil, nil
		for _, w := range ws {
			if w.Herder().IsLeader() {
				leader = w
			} else if follower == nil && w.Herder().LeaderURL() != "" {
				follower = w
			}
		}
		return leader != nil && follower != nil
	})
	if got := follower.Herder().LeaderURL(); got != leader.url {
		t.Errorf("follower's leader URL = %s, want %s", got, leader.url)
	}
	// Three connectors on three workers: two of them run on followers,
	// whose task configs reach the leader through the internal endpoint.
	for i := range 3 {
		createConnector(t, follower, rangeConnector(fmt.Sprintf("c%d", i), 2))
	}
	for i := range 3 {
		name := fmt.Sprintf("c%d", i)
		waitPlacement(t, ws, name, 2, 20*time.Second, func(map[int]string) bool { return true })
		if _, ok := leader.configs.Connector(name); !ok {
			t.Errorf("connector %s created on a follower is not in the leader's config store", name)
		}
	}
	connectorsOn := map[string]int{}
	for _, w := range ws {
		connectorsOn[w.id] = len(w.Herder().Assignment().Connectors)
	}
	t.Logf("connectors per worker: %v", connectorsOn)
	// Each worker's metrics count what it was assigned, and name the leader.
	for _, w := range ws {
		testkit.Eventually(t, 10*time.Second, fmt.Sprintf("worker %s: connector_count %d", w.id, connectorsOn[w.id]), func() (bool, string) {
			got := gauge(t, w, "kafka_connect_connector_count", nil)
			return got == float64(connectorsOn[w.id]), fmt.Sprint(got)
		})
		if got := gauge(t, w, "kafka_connect_leader_name", map[string]string{"leader": leader.url}); got != 1 {
			t.Errorf("worker %s: leader_name{leader=%q} = %v, want 1", w.id, leader.url, got)
		}
	}

	// The internal task-config endpoint takes only requests signed with the
	// session key: a client with the REST token gets 403 (KIP-507), and the
	// task configs stay those the connectors made. The connectors on the
	// followers got their task configs to the leader above, signed.
	code, _ := doJSON(t, http.MethodPut, follower.url+"/connectors/c0/tasks", []map[string]string{{"task.ranges": "0-10", "topic": "c0-out"}})
	if code != http.StatusUnauthorized {
		t.Errorf("PUT tasks without the token: %d, want 401", code)
	}
	before := fmt.Sprint(leader.configs.TaskConfigs("c0"))
	code, body := doAuth(t, follower.token, http.MethodPut, follower.url+"/connectors/c0/tasks", []map[string]string{{"task.ranges": "0-10", "topic": "c0-out"}})
	if code != http.StatusForbidden {
		t.Fatalf("PUT /connectors/c0/tasks by a client: %d %s, want 403", code, body)
	}
	if after := fmt.Sprint(leader.configs.TaskConfigs("c0")); after != before {
		t.Fatalf("a client's task configs were stored: %s", after)
	}
	// A write by a client is forwarded by the follower, signed, and taken.
	code, body = doAuth(t, follower.token, http.MethodPut, follower.url+"/connectors/c0/pause", nil)
	if code != http.StatusAccepted {
		t.Errorf("PUT /connectors/c0/pause via a follower: %d %s, want 202", code, body)
	}
}

func TestClusterRefusesForeignConfigTopic(t *testing.T) {
	kafka := newKafka(t)
	startTestWorker(t, kafka, nil)
	cfg := workerConfig(t, kafka, map[string]string{workerconfig.KeyGroupID: "cluster-b"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := Start(ctx, Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		_ = w.Shutdown(ctx)
		t.Fatal("a worker of cluster-b started on cluster-a's config topic")
	}
	var fe *ForeignClusterError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a ForeignClusterError", err)
	}
	for _, want := range []string{`"cluster-a"`, `"cluster-b"`, "connect-configs", workerconfig.KeyConfigStorageTopic, workerconfig.KeyGroupID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %s", err, want)
		}
	}
}

// rawMember joins the workers' group with plain requests, as a worker that
// then stops talking would.
type rawMember struct {
	cl  *kgo.Client
	id  string
	gen int32
}

func (m *rawMember) join(ctx context.Context, workerID string, session time.Duration) error {
	md := assignor.EncodeMetadata(assignor.Metadata{Version: assignor.Version, WorkerID: workerID, URL: "http://127.0.0.1:1"})
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = "cluster-a"
		req.SessionTimeoutMillis = int32(session.Milliseconds())
		req.RebalanceTimeoutMillis = 10000
		req.MemberID = m.id
		req.ProtocolType = group.ProtocolType
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: assignor.ProtocolName, Metadata: md}}
		resp, err := req.RequestWith(ctx, m.cl)
		if err != nil {
			return err
		}
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			m.id = resp.MemberID
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		m.gen = resp.Generation
		return nil
	}
}

func (m *rawMember) sync(ctx context.Context) error {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = "cluster-a"
	req.Generation = m.gen
	req.MemberID = m.id
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

func TestClusterAnswers409WhileRebalancing(t *testing.T) {
	kafka := newKafka(t)
	w := startTestWorker(t, kafka, nil)
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafka))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A member joins and then falls silent: the next rebalance waits for
	// it until its session expires.
	const silentSession = 5 * time.Second
	silent := &rawMember{cl: newClient()}
	if err := silent.join(ctx, "silent", silentSession); err != nil {
		t.Fatal(err)
	}
	if err := silent.sync(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 5*time.Second, fmt.Sprintf("the worker to settle in the silent member's generation %d", silent.gen), func() bool {
		return w.member.Generation().ID == silent.gen && !w.Herder().Rebalancing()
	})
	// Another member joins: a rebalance starts and is held.
	joiner := &rawMember{cl: newClient()}
	joined := make(chan error, 1)
	go func() {
		err := joiner.join(ctx, "joiner", 10*time.Second)
		if err == nil {
			err = joiner.sync(ctx)
		}
		joined <- err
	}()
	testkit.EventuallyTrue(t, 5*time.Second, "the worker to see the rebalance", w.Herder().Rebalancing)
	// Reads are served; writes wait, then get Kafka's 409.
	if code, body := doJSON(t, http.MethodGet, w.url+"/connectors", nil); code != http.StatusOK {
		t.Errorf("GET /connectors during a rebalance: %d %s", code, body)
	}
	cfg := rangeConnector("during", 1)
	code, body := doJSON(t, http.MethodPost, w.url+"/connectors", map[string]any{"name": "during", "config": cfg})
	if code != http.StatusConflict {
		t.Fatalf("POST /connectors during a held rebalance: %d %s, want 409", code, body)
	}
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.ErrorCode != 409 || e.Message != connectapi.MessageRebalance {
		t.Errorf("409 body = %s, want Kafka's error shape with %q", body, connectapi.MessageRebalance)
	}
	// Once the silent member expired the rebalance completes and the same
	// write goes through.
	if err := <-joined; err != nil {
		t.Fatalf("the joining member: %v", err)
	}
	createConnector(t, w, cfg)
}

// gauge reads one gauge of a worker's registry (-1 when absent).
func gauge(t *testing.T, w *testWorker, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := w.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metrics
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

func TestLeaderAsksMembersAheadOfItToCatchUp(t *testing.T) {
	kafka := newKafka(t)
	w := startTestWorker(t, kafka, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	own := w.configs.Offset()
	md := func(id string, off int64) group.JoinedMember {
		return group.JoinedMember{ID: id, Metadata: assignor.EncodeMetadata(assignor.Metadata{Version: assignor.Version, WorkerID: id, ConfigOffset: off})}
	}
	gen := group.Generation{ID: 99, MemberID: "m1", LeaderID: "m1"}
	out, err := w.cluster.Assign(ctx, gen, []group.JoinedMember{md("m1", own), md("m2", own+1000)})
	if err != nil {
		t.Fatal(err)
	}
	for id, b := range out {
		sa, err := assignor.DecodeAssignment(b)
		if err != nil {
			t.Fatal(err)
		}
		if sa.Error != assignor.ErrorConfigMismatch || sa.ConfigOffset != own+1000 || !sa.Assigned.IsEmpty() {
			t.Errorf("member %s got %+v, want a config mismatch at offset %d and nothing assigned", id, sa, own+1000)
		}
	}
	// The member reads to the end and rejoins after a pause, running nothing new.
	before := w.Herder().Assignment()
	next, err := w.cluster.Assigned(ctx, gen, out["m1"])
	if err != nil {
		t.Fatal(err)
	}
	if !next.Rejoin || next.After != configMismatchPause {
		t.Errorf("after a mismatch: %+v, want a rejoin after %v", next, configMismatchPause)
	}
	if after := w.Herder().Assignment(); after.Generation != before.Generation {
		t.Errorf("a mismatch changed the assignment: %+v -> %+v", before, after)
	}
	// Members at or behind the leader's offset get real assignments.
	out, err = w.cluster.Assign(ctx, gen, []group.JoinedMember{md("m1", own), md("m2", 0)})
	if err != nil {
		t.Fatal(err)
	}
	for id, b := range out {
		if sa, _ := assignor.DecodeAssignment(b); sa.Error != assignor.ErrorNone || sa.LeaderID != "m1" || sa.LeaderURL != w.url {
			t.Errorf("member %s got %+v, want no error from leader m1 at %s", id, sa, w.url)
		}
	}
}
