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

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// These tests run conveyor-worker as a separate process (built once) against
// an in-process kfake broker, as a user would run it.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func workerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "conveyor-worker-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "conveyor-worker")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

type cluster struct {
	addr string
	adm  *kadm.Client
	opts []kgo.Opt
}

func newCluster(t *testing.T, seed ...kfake.Opt) *cluster {
	t.Helper()
	c, opts := kafkatest.Cluster(t, append([]kfake.Opt{kfake.AllowAutoTopicCreation()}, seed...)...)
	return &cluster{addr: c.ListenAddrs()[0], adm: kafkatest.Admin(t, opts), opts: opts}
}

// workerProc is a conveyor-worker process.
type workerProc struct {
	*proc.Process
	url  string
	logs *testkit.SyncBuffer
}

// startWorker runs conveyor-worker --config and waits for its REST URL.
func startWorker(t *testing.T, cfgPath string) *workerProc {
	t.Helper()
	cmd := exec.Command(workerBinary(t), "--config", cfgPath)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &workerProc{logs: &testkit.SyncBuffer{}}
	cmd.Stderr = p.logs
	if p.Process, err = proc.Start(cmd, nil); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	joined := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`REST API listening on (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
			if strings.Contains(sc.Text(), "conveyor-worker: joined group") {
				close(joined)
			}
		}
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("worker log (tail):\n%s", tail(p.logs.String(), 4000))
		}
	})
	select {
	case p.url = <-urls:
	case <-p.Done():
		t.Fatalf("worker exited before serving: %v\n%s", p.Err(), p.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("worker did not start within 30s\n%s", p.logs.String())
	}
	// The REST API serves before the worker joined its group; writes need
	// the leader.
	select {
	case <-joined:
	case <-p.Done():
		t.Fatalf("worker exited before joining its group: %v\n%s", p.Err(), p.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("worker did not join its group within 30s\n%s", p.logs.String())
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func workerConfig(t *testing.T, dir, bootstrap string, extra ...string) string {
	t.Helper()
	lines := append([]string{
		"bootstrap.servers=" + bootstrap,
		"group.id=test-cluster",
		"internal.topics.create=true",
		"offset.storage.partitions=5",
		"status.storage.partitions=3",
		"rest.host.name=127.0.0.1",
		"rest.port=0",
		"offset.flush.interval.ms=500",
		"task.shutdown.graceful.timeout.ms=10000",
		// A SIGKILLed worker's sink consumers leave the group only when
		// their session times out; keep that short (kfake's minimum is 6s).
		"consumer.session.timeout.ms=6000",
		// File connectors of the tests read and write under t.TempDir().
		"file.connectors.allowed.paths=" + os.TempDir(),
	}, extra...)
	p := filepath.Join(dir, "worker.properties")
	writeFile(t, p, strings.Join(lines, "\n")+"\n")
	return p
}

// call does a REST request and decodes the JSON answer into out (if not nil).
func call(t *testing.T, method, url, token string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, url, b, err)
		}
	}
	return resp.StatusCode
}

type status struct {
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

func runningTasks(s status) int {
	n := 0
	for _, t := range s.Tasks {
		if t.State == "RUNNING" {
			n++
		}
	}
	return n
}

// countLines counts the complete lines of a file that match want, and
// returns how often each appeared.
func readOutput(t *testing.T, path string) (counts map[string]int, total, torn int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return map[string]int{}, 0, 0
		}
		t.Fatal(err)
	}
	counts = map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, "line-") || len(l) != len("line-000000") {
			torn++
			continue
		}
		counts[l]++
		total++
	}
	return counts, total, torn
}

func fileLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

func sumOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) (end, committed int64) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	offs, err := adm.FetchOffsets(ctx, "connect-sink")
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At > 0 {
			committed += o.At
		}
	})
	return end, committed
}

// sourcePosition reads the file source's committed offset (bytes) from the
// offsets topic, as a restarted worker would.
func sourcePosition(t *testing.T, ctx context.Context, c *cluster, file string) int64 {
	t.Helper()
	open := func(ctx context.Context, topic kafkalog.Topic, apply func(kafkalog.Record)) (*kafkalog.Log, error) {
		return kafkalog.Open(ctx, kafkalog.Config{Topic: topic, ClientOpts: c.opts, Apply: apply})
	}
	s, err := store.OpenOffsetStore(ctx, open, kafkalog.Topic{Name: "connect-offsets"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	off := s.Offset("src", map[string]any{"file": file})
	pos, _ := off["position"].(float64)
	return int64(pos)
}

// TestPipelineSurvivesSIGKILL moves 100k records file → Kafka → file through
// a worker process, SIGKILLs it mid-way, restarts it and checks that
// nothing is lost and that duplicates stay within the uncommitted window
// (records past the committed source offset plus records past the sink's
// committed consumer offsets at the moment of the kill).
func TestPipelineSurvivesSIGKILL(t *testing.T) {
	const total = 100_000
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := newCluster(t, kfake.SeedTopics(4, "lines"))
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeFile(t, in, "")
	cfg := workerConfig(t, dir, c.addr)
	w := startWorker(t, cfg)

	conv := "org.apache.kafka.connect.storage.StringConverter"
	if code := call(t, "PUT", w.url+"/connectors/src/config", "", map[string]string{
		"connector.class": "FileSource", "file": in, "topic": "lines", "poll.interval.ms": "20",
		"value.converter": conv, "key.converter": conv,
	}, nil); code != 201 {
		t.Fatalf("creating source: %d", code)
	}
	if code := call(t, "PUT", w.url+"/connectors/sink/config", "", map[string]string{
		"connector.class": "FileSink", "file": out, "topics": "lines", "tasks.max": "2",
		"value.converter": conv, "key.converter": conv,
	}, nil); code != 201 {
		t.Fatalf("creating sink: %d", code)
	}

	// The input grows while the pipeline runs, so the kill lands mid-way.
	appendDone := make(chan struct{})
	go func() {
		defer close(appendDone)
		f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		var b bytes.Buffer
		for i := 0; i < total; i++ {
			fmt.Fprintf(&b, "line-%06d\n", i)
			if (i+1)%2000 == 0 {
				f.Write(b.Bytes())
				b.Reset()
				time.Sleep(60 * time.Millisecond)
			}
		}
		f.Write(b.Bytes())
	}()

	// Kill once a third went through and both sides committed something.
	testkit.EventuallyTrue(t, 40*time.Second, "a third of the records in the sink file, and commits", func() bool {
		if fileLines(out) < total/3 {
			return false
		}
		var so, ko struct {
			Offsets []json.RawMessage `json:"offsets"`
		}
		call(t, "GET", w.url+"/connectors/src/offsets", "", nil, &so)
		call(t, "GET", w.url+"/connectors/sink/offsets", "", nil, &ko)
		return len(so.Offsets) > 0 && len(ko.Offsets) > 0
	})
	for _, name := range []string{"src", "sink"} {
		var topics map[string]struct {
			Topics []string `json:"topics"`
		}
		call(t, "GET", w.url+"/connectors/"+name+"/topics", "", nil, &topics)
		if got := topics[name].Topics; len(got) != 1 || got[0] != "lines" {
			t.Errorf("active topics of %s = %v, want [lines]", name, got)
		}
	}
	if err := w.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.Done()

	// The uncommitted window at the moment of the kill.
	inBytes, _ := os.ReadFile(in)
	pos := sourcePosition(t, ctx, c, in)
	committedLines := int64(bytes.Count(inBytes[:min(pos, int64(len(inBytes)))], []byte("\n")))
	end, sinkCommitted := sumOffsets(t, ctx, c.adm, "lines")
	_, written, _ := readOutput(t, out)
	sourceWindow := end - committedLines
	sinkWindow := int64(written) - sinkCommitted
	t.Logf("at SIGKILL: %d lines in topic, %d committed by the source; %d lines in the sink file, %d committed by the sink",
		end, committedLines, written, sinkCommitted)

	<-appendDone
	w2 := startWorker(t, cfg)
	var counts map[string]int
	var got, torn int
	testkit.EventuallyTrue(t, 60*time.Second, "all records in the sink file after the restart", func() bool {
		counts, got, torn = readOutput(t, out)
		return len(counts) == total
	})
	// Graceful stop: everything consumed gets committed, within the bound.
	stopAt := time.Now()
	if err := w2.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w2.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("worker did not exit within 20s of SIGTERM")
	}
	if w2.Err() != nil {
		t.Fatalf("worker exit after SIGTERM: %v", w2.Err())
	}
	counts, got, torn = readOutput(t, out)
	missing := 0
	for i := 0; i < total; i++ {
		if counts[fmt.Sprintf("line-%06d", i)] == 0 {
			missing++
		}
	}
	dups := got - total
	t.Logf("records=%d missing=%d duplicates=%d torn_lines=%d uncommitted_window=%d (source %d + sink %d) graceful_stop=%s",
		total, missing, dups, torn, sourceWindow+sinkWindow, sourceWindow, sinkWindow, time.Since(stopAt).Round(time.Millisecond))
	if missing != 0 {
		t.Fatalf("%d records lost", missing)
	}
	if torn != 0 {
		t.Errorf("%d torn lines in the sink file", torn)
	}
	if int64(dups) > sourceWindow+sinkWindow {
		t.Errorf("%d duplicates exceed the uncommitted window of %d", dups, sourceWindow+sinkWindow)
	}
	end, sinkCommitted = sumOffsets(t, ctx, c.adm, "lines")
	if end != sinkCommitted {
		t.Errorf("after SIGTERM the sink committed %d of %d records: the graceful stop must flush and commit", sinkCommitted, end)
	}
	final, _ := os.ReadFile(in)
	if pos := sourcePosition(t, ctx, c, in); pos != int64(len(final)) {
		t.Errorf("after SIGTERM the source offset is %d, want the file size %d", pos, len(final))
	}
}

// TestSinkTasksFollowPartitions: tasks.max=10 on a 4-partition topic runs 4
// tasks (limit TopicPartitions); growing the topic to 6 partitions gives 6
// tasks without restarting the worker.
func TestSinkTasksFollowPartitions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newCluster(t, kfake.SeedTopics(4, "events"))
	dir := t.TempDir()
	w := startWorker(t, workerConfig(t, dir, c.addr, "task.limits.check.interval.ms=300"))
	pid := w.Pid()
	if code := call(t, "POST", w.url+"/connectors", "", map[string]any{"name": "wide", "config": map[string]string{
		"connector.class": "FileSink", "file": filepath.Join(dir, "out.txt"), "topics": "events", "tasks.max": "10",
		// The connector's own partition watcher is off: the worker's re-check does it.
		"partition.check.interval.ms": "0",
	}}, nil); code != 201 {
		t.Fatalf("creating connector: %d", code)
	}
	var st status
	testkit.EventuallyTrue(t, 30*time.Second, "4 running tasks", func() bool {
		call(t, "GET", w.url+"/connectors/wide/status", "", nil, &st)
		return len(st.Tasks) == 4 && runningTasks(st) == 4
	})
	var lim struct {
		TasksMax       int    `json:"tasks_max"`
		NaturalLimit   *int   `json:"natural_limit"`
		EffectiveTasks int    `json:"effective_tasks"`
		Reason         string `json:"reason"`
	}
	call(t, "GET", w.url+"/connectors/wide/limits", "", nil, &lim)
	if lim.TasksMax != 10 || lim.NaturalLimit == nil || *lim.NaturalLimit != 4 || lim.EffectiveTasks != 4 || lim.Reason != "TopicPartitions" {
		t.Fatalf("limits = %+v", lim)
	}
	if _, err := c.adm.UpdatePartitions(ctx, 6, "events"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "6 running tasks after growing the topic", func() bool {
		call(t, "GET", w.url+"/connectors/wide/status", "", nil, &st)
		return len(st.Tasks) == 6 && runningTasks(st) == 6
	})
	call(t, "GET", w.url+"/connectors/wide/limits", "", nil, &lim)
	if *lim.NaturalLimit != 6 || lim.EffectiveTasks != 6 {
		t.Fatalf("limits after growth = %+v", lim)
	}
	select {
	case <-w.Done():
		t.Fatal("the worker exited")
	default:
	}
	if w.Pid() != pid {
		t.Fatal("the worker process changed")
	}
}

// TestRESTAuth: with a token file, requests without the token get 401 in
// Kafka's error shape; probes stay open.
func TestRESTAuth(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	writeFile(t, tok, "s3cret-token\n")
	w := startWorker(t, workerConfig(t, dir, c.addr, "rest.auth.token.file="+tok))
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if code := call(t, "GET", w.url+"/connectors", "", nil, &e); code != 401 || e.ErrorCode != 401 || e.Message == "" {
		t.Fatalf("without token: %d %+v, want 401 with an error body", code, e)
	}
	if code := call(t, "GET", w.url+"/connectors", "wrong", nil, nil); code != 401 {
		t.Fatalf("wrong token: %d, want 401", code)
	}
	var names []string
	if code := call(t, "GET", w.url+"/connectors", "s3cret-token", nil, &names); code != 200 {
		t.Fatalf("with token: %d", code)
	}
	if code := call(t, "GET", w.url+"/health", "", nil, nil); code != 200 {
		t.Fatalf("/health without token: %d, want 200", code)
	}
	if strings.Contains(w.logs.String(), "s3cret-token") {
		t.Fatal("the token appears in the worker log")
	}
}

// TestRefusesForeignConfigTopic: a worker of another group refuses a config
// topic that belongs to an existing cluster, and one that is not compacted.
func TestRefusesForeignConfigTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newCluster(t)
	dir := t.TempDir()
	w := startWorker(t, workerConfig(t, dir, c.addr))
	w.Signal(syscall.SIGTERM)
	<-w.Done()

	other := filepath.Join(t.TempDir(), "other.properties")
	b, _ := os.ReadFile(filepath.Join(dir, "worker.properties"))
	writeFile(t, other, strings.Replace(string(b), "group.id=test-cluster", "group.id=intruder", 1))
	out, err := exec.CommandContext(ctx, workerBinary(t), "--config", other).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `belongs to the cluster with group.id="test-cluster"`) {
		t.Fatalf("a worker of another group started on the topic, or said so unclearly: %v\n%s", err, out)
	}

	if _, err := c.adm.CreateTopic(ctx, 1, 1, nil, "plain-configs"); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.properties")
	writeFile(t, bad, strings.Replace(string(b), "internal.topics.create=true", "config.storage.topic=plain-configs", 1))
	out, err = exec.CommandContext(ctx, workerBinary(t), "--config", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `"plain-configs"`) || !strings.Contains(string(out), "cleanup.policy") {
		t.Fatalf("a worker started on a non-compacted config topic, or said so unclearly: %v\n%s", err, out)
	}
}
