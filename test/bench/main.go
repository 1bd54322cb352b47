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

// Command bench measures the worker against bare franz-go clients in the
// same run and prints one figure per line, "conveyor-bench: NAME=VALUE":
//
//   - sink_vs_raw_ratio: records/s of a FileSink (one task, in a
//     conveyor-worker process) draining 1M x 200 B records from 12
//     partitions, divided by records/s of a bare franz-go consumer draining
//     the same topic in its own consumer group (both timed from start,
//     group join included);
//   - source_vs_raw_ratio: records/s of a RangeSource (one task) writing 1M
//     records of about 200 B (JSON without schema), divided by records/s of
//     a bare franz-go producer writing 1M x 200 B records (idempotent,
//     acks=all, as the source runner);
//   - sink_steady_vs_raw_ratio and source_steady_vs_raw_ratio: the same
//     pairs in a long run, -steady-records (default 5M) records of 200 B on
//     the same 12 partitions, timed from the first 10ms poll at or past 20%
//     of the records to the poll that saw them all (records counted between
//     those polls over the time between them), so group joins, start-up and
//     the first fetches drop out. The sink's records are counted as lines in
//     its file, the bare consumer's as PollFetches returns them; the
//     source's as the topic's end offsets, the bare producer's as
//     acknowledged produce promises. The steady sink runs on a worker of
//     its own that commits offsets at the worker's default interval (each
//     file sink commit is an fsync; see steady). -v logs the CPU per 1M
//     records of each side. Each run must end within two minutes; the median of
//     -steady-rounds (default 3) rounds counts;
//   - source_eos_vs_atleastonce_ratio: the RangeSource exactly-once
//     against the same source at-least-once, method in eos.go;
//   - worker_idle_rss_mb: VmRSS of an idle conveyor-worker process with its
//     REST server and Kafka clients up.
//
// Each ratio is the median of -rounds rounds (default 3); a round pairs a
// baseline with the worker on fresh topics, one right after the other, so
// both meet about the same load of a shared machine. -v logs every round,
// -only runs one measurement, -cpuprofile-dir writes CPU profiles of the
// worker and of this program (go tool pprof).
//
// The broker is kfake running inside this program; the worker is a separate
// process built from ./runtime/cmd/conveyor-worker. Run it with `make bench`
// (go run ./test/bench). A missed target does not fail the run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/bench/benchkit"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/test/testkit/proc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	records    = flag.Int("records", 1_000_000, "records per measurement")
	recordSize = flag.Int("record-size", 200, "record value size in bytes")
	partitions = flag.Int("partitions", 12, "partitions of the benchmark topics")
	verbose    = flag.Bool("v", false, "log progress to stderr")
	sinkTasks  = flag.Int("sink-tasks", 1, "tasks.max of the file sink")
	srcTasks   = flag.Int("source-tasks", 1, "tasks.max of the range source")
	profileDir = flag.String("cpuprofile-dir", "", "write CPU profiles of the worker (worker.pprof) and of this program, broker and baselines included (bench.pprof), to this folder")
	only       = flag.String("only", "", "run only the sink, the source or the exactly-once source measurement (sink, source, eos; default all)")
	workerBin  = flag.String("worker", "", "a conveyor-worker binary to measure instead of building ./runtime/cmd/conveyor-worker (to compare builds)")
	gcPercent  = flag.Int("gogc", 0, "this program's GOGC (the broker's and the bare clients'; 0: the Go default or $GOGC); the worker keeps its own")
	rounds     = flag.Int("rounds", 3, "rounds of each measurement (fresh topics, connector and baseline each); the median ratio is reported")
)

var began = time.Now()

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench: %5.1fs: "+format+"\n", append([]any{time.Since(began).Seconds()}, args...)...)
	}
}

func main() {
	flag.Parse()
	if *gcPercent > 0 {
		debug.SetGCPercent(*gcPercent)
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func report(name string, value float64) {
	fmt.Printf("conveyor-bench: %s=%s\n", name, strconv.FormatFloat(value, 'f', 3, 64))
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "conveyor-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := *workerBin
	if bin == "" {
		bin = filepath.Join(dir, "conveyor-worker")
		logf("building conveyor-worker")
		if out, err := exec.Command("go", "build", "-o", bin, "./runtime/cmd/conveyor-worker").CombinedOutput(); err != nil {
			return fmt.Errorf("building the worker (run from the repository root): %v\n%s", err, out)
		}
	}

	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(*partitions))
	if err != nil {
		return fmt.Errorf("starting kfake: %w", err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	// The admin client polls end offsets of a topic the source creates
	// while it is measured: with franz-go's default minimum metadata age
	// (5s) it kept answering from the cached "unknown topic" metadata of
	// its first poll for five seconds, which counted against the source.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Idle memory first, on a fresh worker.
	w, err := startWorker(ctx, bin, dir, addr, "bench", flushOften)
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // let start-up garbage be collected; idle means idle
	rss, err := benchkit.VmRSSMB(w.proc.Pid())
	if err != nil {
		w.stop()
		return err
	}

	if *profileDir != "" {
		f, err := os.Create(filepath.Join(*profileDir, "bench.pprof"))
		if err != nil {
			w.stop()
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			w.stop()
			return err
		}
		defer pprof.StopCPUProfile()
	}
	eosW, err := startEOSWorker(ctx, bin, dir, addr)
	if err != nil {
		w.stop()
		return err
	}
	ratios, err := measure(ctx, w, eosW, dir, addr, adm)
	if err == nil {
		var st []figure
		st, err = steady(ctx, bin, w, dir, addr, adm)
		ratios = append(ratios, st...)
	}
	w.stop()
	if eosW != nil {
		eosW.stop()
	}
	if err != nil {
		return err
	}
	for _, r := range ratios {
		report(r.name, r.value)
	}
	report("worker_idle_rss_mb", rss)
	return nil
}

type figure struct {
	name  string
	value float64
}

// measure runs the sink and the source measurements (or the one -only
// names) against their baselines, -rounds times each, and returns the
// median ratios. Each round pairs a baseline with the worker on fresh
// topics right after it, so both meet about the same machine load (a
// shared machine varies a lot from one second to the next).
func measure(ctx context.Context, w, eosW *workerProc, dir, addr string, adm *kadm.Client) ([]figure, error) {
	var sinkRatios, sourceRatios, eosRatios []float64
	for round := 1; round <= max(*rounds, 1); round++ {
		if *only == "" || *only == "sink" {
			r, err := sinkRound(ctx, w, dir, addr, adm, round)
			if err != nil {
				return nil, err
			}
			sinkRatios = append(sinkRatios, r)
		}
		if *only == "" || *only == "source" {
			r, err := sourceRound(ctx, w, addr, adm, round)
			if err != nil {
				return nil, err
			}
			sourceRatios = append(sourceRatios, r)
		}
		if err := eosRound(ctx, w, eosW, round, &eosRatios); err != nil {
			return nil, err
		}
	}
	var out []figure
	if len(sinkRatios) > 0 {
		out = append(out, figure{"sink_vs_raw_ratio", median(sinkRatios)})
	}
	if len(sourceRatios) > 0 {
		out = append(out, figure{"source_vs_raw_ratio", median(sourceRatios)})
	}
	if len(eosRatios) > 0 {
		out = append(out, figure{"source_eos_vs_atleastonce_ratio", median(eosRatios)})
	}
	return out, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// sinkRound: a bare consumer and the FileSink drain the same topic.
func sinkRound(ctx context.Context, w *workerProc, dir, addr string, adm *kadm.Client, round int) (float64, error) {
	topic := fmt.Sprintf("bench-sink-%d", round)
	if _, err := adm.CreateTopic(ctx, int32(*partitions), 1, nil, topic); err != nil {
		return 0, fmt.Errorf("creating topic: %w", err)
	}
	defer deleteTopics(ctx, adm, topic)
	logf("round %d: producing %d records of %d B into %d partitions", round, *records, *recordSize, *partitions)
	if _, err := produceRaw(ctx, addr, topic, *records, *recordSize); err != nil {
		return 0, err
	}
	c0 := cpuNow(w)
	rawConsume, err := consumeRaw(ctx, addr, topic, *records, fmt.Sprintf("bench-raw-consumer-%d", round))
	if err != nil {
		return 0, err
	}
	c1 := cpuNow(w)
	sinkRate, err := sinkRun(ctx, w, dir, topic)
	if err != nil {
		return 0, err
	}
	c2 := cpuNow(w)
	// The task commits and leaves its group while it stops; deleting the
	// topic before that only makes it log failed commits.
	waitGroupEmpty(ctx, adm, connectnames.SinkGroup(topic))
	logf("round %d: bare consumer %.0f rec/s, file sink %.0f rec/s: sink_vs_raw_ratio %.3f; CPU: %s", round, rawConsume, sinkRate, sinkRate/rawConsume, cpuSummary(c0, c1, c2))
	return sinkRate / rawConsume, nil
}

// sourceRound: a bare producer and the RangeSource write the same amount.
func sourceRound(ctx context.Context, w *workerProc, addr string, adm *kadm.Client, round int) (float64, error) {
	raw, topic := fmt.Sprintf("bench-raw-src-%d", round), fmt.Sprintf("bench-src-%d", round)
	defer deleteTopics(ctx, adm, raw, topic)
	c0 := cpuNow(w)
	rawProduce, err := produceRaw(ctx, addr, raw, *records, *recordSize)
	if err != nil {
		return 0, err
	}
	c1 := cpuNow(w)
	sourceRate, err := sourceRun(ctx, w, adm, topic)
	if err != nil {
		return 0, err
	}
	c2 := cpuNow(w)
	logf("round %d: bare producer %.0f rec/s, range source %.0f rec/s: source_vs_raw_ratio %.3f; CPU: %s", round, rawProduce, sourceRate, sourceRate/rawProduce, cpuSummary(c0, c1, c2))
	return sourceRate / rawProduce, nil
}

// waitGroupEmpty waits (up to 30s) until a consumer group has no members.
func waitGroupEmpty(ctx context.Context, adm *kadm.Client, group string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		gs, err := adm.DescribeGroups(ctx, group)
		if err == nil && len(gs[group].Members) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	logf("group %s still has members after 30s", group)
}

// deleteTopics drops a round's topics, so the in-process broker does not
// hold every round's records.
func deleteTopics(ctx context.Context, adm *kadm.Client, topics ...string) {
	if _, err := adm.DeleteTopics(ctx, topics...); err != nil {
		logf("deleting topics %v: %v", topics, err)
	}
}

type workerProc struct {
	proc *proc.Process
	url  string
}

func (w *workerProc) stop() { _ = w.proc.Stop(syscall.SIGTERM, 30*time.Second) }

// flushOften is the offset commit interval of the workers of the cold
// runs and of the exactly-once measurement: at-least-once sources store
// their offsets this often, which eos.go times. (The file sink writes its
// lines at each Put; a commit is an fsync.)
const flushOften = "offset.flush.interval.ms=200"

// startWorker starts a worker of group name, with internal topics of
// its own and extra config lines.
func startWorker(ctx context.Context, bin, dir, addr, name string, extra ...string) (*workerProc, error) {
	cfg := filepath.Join(dir, name+".properties")
	props := strings.Join(append([]string{
		"bootstrap.servers=" + addr,
		"group.id=" + name,
		"config.storage.topic=" + name + "-configs",
		"offset.storage.topic=" + name + "-offsets",
		"status.storage.topic=" + name + "-status",
		"internal.topics.create=true",
		"offset.storage.partitions=5",
		"status.storage.partitions=3",
		"rest.host.name=127.0.0.1",
		"rest.port=0",
		"file.connectors.allowed.paths=" + os.TempDir(),
	}, extra...), "\n") + "\n"
	if err := os.WriteFile(cfg, []byte(props), 0o600); err != nil {
		return nil, err
	}
	args := []string{"--config", cfg}
	if *profileDir != "" {
		prof := "worker.pprof"
		if name != "bench" {
			prof = name + ".pprof"
		}
		args = append(args, "--cpuprofile", filepath.Join(*profileDir, prof))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	if *verbose {
		cmd.Stderr = os.Stderr
	} else {
		cmd.Stderr = &limitedBuffer{b: &stderr, max: 64 << 10}
	}
	p, err := proc.Start(cmd, nil)
	if err != nil {
		return nil, err
	}
	w := &workerProc{proc: p}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`REST API listening on (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	select {
	case w.url = <-urls:
		return w, nil
	case <-p.Done():
		return nil, fmt.Errorf("the worker exited at start:\n%s", stderr.String())
	case <-time.After(60 * time.Second):
		w.stop()
		return nil, errors.New("the worker did not start within 60s")
	}
}

type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len() < l.max {
		l.b.Write(p)
	}
	return len(p), nil
}

// cpuTimes are the CPU seconds (user+system) used so far by this program
// (broker and baselines) and by the worker, and this program's garbage
// collections so far and their CPU seconds (estimated by the Go runtime).
type cpuTimes struct {
	bench, worker float64
	gcCycles      uint64
	gcCPU         float64
}

func cpuNow(w *workerProc) cpuTimes {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t := cpuTimes{bench: float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9}
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(gc)
	if gc[0].Value.Kind() == metrics.KindUint64 && gc[1].Value.Kind() == metrics.KindFloat64 {
		t.gcCycles, t.gcCPU = gc[0].Value.Uint64(), gc[1].Value.Float64()
	}
	// /proc/PID/stat: utime and stime are fields 14 and 15, in clock ticks
	// (100 per second on Linux), after the ")" that ends the command name.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w.proc.Pid())); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				s, _ := strconv.ParseFloat(f[12], 64)
				t.worker = (u + s) / 100
			}
		}
	}
	return t
}

// cpuSummary says what the baseline (c0 to c1) and the worker's run (c1 to
// c2) cost in CPU: a figure that, unlike rates, does not depend on how
// busy the machine is. The broker runs in this program, so the baseline's
// figure includes the broker's work, and so does the worker run's.
func cpuSummary(c0, c1, c2 cpuTimes) string {
	return fmt.Sprintf("baseline %.2fs (client+broker), worker run %.2fs (worker %.2fs + broker %.2fs)",
		c1.bench-c0.bench, c2.worker-c1.worker+c2.bench-c1.bench, c2.worker-c1.worker, c2.bench-c1.bench)
}

func payload(size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

// produceRaw writes n records with a bare idempotent franz-go producer and
// returns records/s.
func produceRaw(ctx context.Context, addr, topic string, n, size int) (float64, error) {
	start := time.Now()
	if err := produceCounted(ctx, addr, topic, n, size, nil); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// consumeRaw drains n records with a bare franz-go consumer and returns
// records/s. Like the sink it consumes in a consumer group, so both pay for
// joining a group (about a second on kfake).
func consumeRaw(ctx context.Context, addr, topic string, n int, group string) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumerGroup(group))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start := time.Now()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		got += fs.NumRecords()
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func rest(ctx context.Context, method, url string, body any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return nil
}

// sinkRun creates a FileSink on the topic and measures the time until its
// file holds every record.
func sinkRun(ctx context.Context, w *workerProc, dir, topic string) (float64, error) {
	out := filepath.Join(dir, topic+".out")
	start := time.Now()
	err := rest(ctx, "POST", w.url+"/connectors", map[string]any{"name": topic, "config": map[string]string{
		"connector.class": "FileSink", "topics": topic, "file": out, "tasks.max": strconv.Itoa(*sinkTasks),
		"key.converter": "ByteArrayConverter", "value.converter": "ByteArrayConverter",
	}})
	if err != nil {
		return 0, err
	}
	want := int64(*records) * int64(*recordSize+1)
	for {
		if st, err := os.Stat(out); err == nil && st.Size() >= want {
			break
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for the file sink: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	rate := float64(*records) / time.Since(start).Seconds()
	if err := rest(ctx, "DELETE", w.url+"/connectors/"+topic, nil); err != nil {
		return 0, err
	}
	os.Remove(out)
	return rate, nil
}

// sourceRun creates a RangeSource and measures the time until the topic
// holds every record.
func sourceRun(ctx context.Context, w *workerProc, adm *kadm.Client, topic string) (float64, error) {
	// JSON without a schema: {"id":N,"payload":"..."} is about record-size bytes.
	start := time.Now()
	err := rest(ctx, "POST", w.url+"/connectors", map[string]any{"name": topic, "config": map[string]string{
		"connector.class": "RangeSource", "topic": topic, "count": strconv.Itoa(*records), "tasks.max": strconv.Itoa(*srcTasks),
		"record.size": strconv.Itoa(max(*recordSize-30, 0)), "batch.size": "2000",
		"value.converter": "JsonConverter", "value.converter.schemas.enable": "false", "key.converter": "StringConverter",
	}})
	if err != nil {
		return 0, err
	}
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			var total int64
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					total += o.Offset
				}
			})
			if total >= int64(*records) {
				break
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for the range source: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	rate := float64(*records) / time.Since(start).Seconds()
	if err := rest(ctx, "DELETE", w.url+"/connectors/"+topic, nil); err != nil {
		return 0, err
	}
	return rate, nil
}
