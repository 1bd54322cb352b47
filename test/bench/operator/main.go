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

// Command operator measures the operator at scale and prints one figure
// per line, "conveyor-bench: NAME=VALUE", and its cost curves
// (benchkit.Curve: the series, the fitted cost per 1000 KafkaConnectors, the
// bend, and a PNG in the bench's output folder).
//
// Each size of -sizes (default 250, 1000 and 4000 KafkaConnectors, spread
// evenly over -clusters ConnectClusters, default 10) is measured in a fresh
// process of this program (so that memory does not carry over from one size
// to the next):
//
//   - ready: the KafkaConnectors (RangeSources of one task that write one
//     record and idle) are created 16 at a time, as kubectl apply of a
//     folder would, until every one is Ready=True;
//   - rss: VmRSS of the measuring process once everything is Ready and the
//     operator sat idle for -idle: the operator (manager, informer caches,
//     both reconcilers) and this program's own API client. The Kafka broker
//     (kfake) runs in a process of its own and is not counted; its RSS is
//     reported beside (operator_broker_rss_mb), and operator_rss_with_broker_mb
//     adds it, the figure the first wave measured with the broker in process;
//   - at rest, over -idle (default 60s, two connector resyncs; logged minute
//     by minute) with nothing
//     changing: the operator's API requests (reads, watches and writes, by
//     verb and resource), its API writes (every request that is not a GET,
//     LIST or WATCH: creates, updates, patches, status patches, events, Lease
//     renewals) and its REST calls to the workers (reads included), per
//     minute;
//   - one edit: one KafkaConnector's config edited among the others, until
//     its worker runs a task with the new config.
//
// At 1000 KafkaConnectors the first wave's figures are printed under their
// names: operator_1000_ready_s, operator_rss_mb (now without the broker),
// operator_idle_writes_per_min (API writes plus REST calls),
// operator_idle_api_writes_per_min, operator_idle_rest_calls_per_min,
// operator_one_edit_latency_s. The curves: operator_ready_s_per_1000,
// operator_rss_mb_per_1000, operator_idle_api_requests_per_min_per_1000,
// operator_idle_writes_per_min_per_1000.
//
// The API server is envtest's (etcd and kube-apiserver, the repository's
// CRDs); the operator runs in the measuring process as the conveyor binary
// sets it up (controllers.Setup, Secrets uncached, leader election on as the
// Helm chart has it, the production connector resync of 30s) but for the
// worker resolver, which maps each ConnectCluster to its worker (envtest has
// no kubelet, so there are no worker pods). Each ConnectCluster has one real
// conveyor-worker process. Heap and CPU profiles of each size are written
// into the output folder (operator_heap_N.pprof at rest,
// operator_cpu_N.pprof while the connectors are created). Run it with
// `make bench` (KUBEBUILDER_ASSETS set by hack/build-test-binaries.sh). A
// missed target does not fail the run.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/test/bench/benchkit"
	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

var (
	sizes     = flag.String("sizes", "250,1000,4000", "KafkaConnector counts measured, each in a fresh process")
	size      = flag.Int("size", 0, "measure this one size in this process (what the curve's run starts per size)")
	clusters  = flag.Int("clusters", 10, "ConnectClusters (one worker process each)")
	idle      = flag.Duration("idle", 60*time.Second, "how long requests at rest are counted")
	settle    = flag.Duration("settle", 5*time.Second, "how long after all are Ready the count at rest begins")
	resync    = flag.Duration("connector-resync", 0, "the operator's --connector-resync (0: the default, 30s)")
	workerCPU = flag.Bool("worker-cpuprofile", false, "write a CPU profile of the first ConnectCluster's worker (worker_cpu_N.pprof in the output folder, the whole run)")
	verbose   = flag.Bool("v", false, "log progress to stderr")
)

const namespace = "bench"

var began = time.Now()

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench operator: %5.1fs: "+format+"\n", append([]any{time.Since(began).Seconds()}, args...)...)
	}
}

func main() {
	flag.Parse()
	run := curves
	if *size > 0 {
		run = measure
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench operator: %v\n", err)
		os.Exit(1)
	}
}

// curves measures every size in a process of its own and reports the curves.
func curves() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ns, err := benchkit.Sizes("-sizes", *sizes)
	if err != nil {
		return err
	}
	figures := map[int]map[string]float64{}
	for _, n := range ns {
		args := []string{"-size", strconv.Itoa(n), "-clusters", strconv.Itoa(*clusters), "-idle", idle.String(), "-settle", settle.String(), "-connector-resync", resync.String(),
			"-worker-cpuprofile=" + strconv.FormatBool(*workerCPU)}
		if *verbose {
			args = append(args, "-v")
		}
		cmd := exec.Command(self, args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		figures[n] = map[string]float64{}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "conveyor-bench: "), "=")
			if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
				figures[n][name] = v
			}
		}
		if err := cmd.Wait(); err != nil {
			// The curve is reported over the sizes that were measured.
			fmt.Fprintf(os.Stderr, "bench operator: measuring %d KafkaConnectors: %v\n", n, err)
			delete(figures, n)
		}
	}
	measured := ns[:0]
	for _, n := range ns {
		if figures[n] != nil {
			measured = append(measured, n)
		}
	}
	if ns = measured; len(ns) == 0 {
		return errors.New("no size was measured")
	}
	if f, ok := figures[1000]; ok {
		for _, name := range []string{"ready_s", "rss_mb", "heap_mb", "broker_rss_mb", "rss_with_broker_mb", "idle_writes_per_min",
			"idle_api_writes_per_min", "idle_rest_calls_per_min", "idle_api_requests_per_min", "idle_lease_writes_per_min", "one_edit_latency_s"} {
			full := "operator_" + name
			if name == "ready_s" {
				full = "operator_1000_ready_s"
			}
			benchkit.Figure(full, f[name])
		}
	}
	var errs []error
	for _, c := range []struct{ name, y, figure string }{
		{"operator_ready_s_per_1000", "seconds until every KafkaConnector is Ready", "ready_s"},
		{"operator_rss_mb_per_1000", "operator RSS (MiB, broker not counted)", "rss_mb"},
		{"operator_idle_api_requests_per_min_per_1000", "API requests per minute at rest", "idle_api_requests_per_min"},
		{"operator_idle_writes_per_min_per_1000", "API writes + worker REST calls per minute at rest", "idle_writes_per_min"},
	} {
		cv := benchkit.Curve{Name: c.name, X: "KafkaConnectors", Y: c.y, Per: 1000}
		for _, n := range ns {
			cv.Add(float64(n), figures[n][c.figure])
		}
		errs = append(errs, cv.Report())
	}
	return errors.Join(errs...)
}

// counter counts requests by a key.
type counter struct {
	next http.RoundTripper
	key  func(*http.Request) string
	mu   sync.Mutex
	n    map[string]int
}

func (c *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.count(req)
	return c.next.RoundTrip(req)
}

// counted counts into c and sends on through next.
type counted struct {
	next http.RoundTripper
	c    *counter
}

func (t *counted) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.count(req)
	return t.next.RoundTrip(req)
}

func (c *counter) count(req *http.Request) {
	if k := c.key(req); k != "" {
		c.mu.Lock()
		c.n[k]++
		c.mu.Unlock()
	}
}

// snapshot returns the counts so far and resets them.
func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

func newCounter(next http.RoundTripper, key func(*http.Request) string) *counter {
	if next == nil {
		next = http.DefaultTransport
	}
	return &counter{next: next, key: key, n: map[string]int{}}
}

// apiRequest keys an API request by verb and resource ("PATCH
// kafkaconnectors/status", "LIST kafkaconnectors", "WATCH secrets").
func apiRequest(req *http.Request) string {
	p := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	res, named := "", false
	for i := range p {
		if p[i] == "namespaces" && i+2 < len(p) {
			// kafkaconnectors/<name>/status -> kafkaconnectors/status
			parts := p[i+2:]
			res, named = parts[0], len(parts) >= 2
			if len(parts) == 3 {
				res += "/" + parts[2]
			}
		}
	}
	if res == "" && len(p) > 0 {
		res = p[len(p)-1]
	}
	verb := req.Method
	if verb == http.MethodGet {
		switch {
		case req.URL.Query().Get("watch") == "true":
			verb = "WATCH"
		case !named:
			verb = "LIST"
		}
	}
	return verb + " " + res
}

// isWrite says whether a key of apiRequest is a write.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "GET", "LIST", "WATCH", http.MethodHead:
		return false
	}
	return true
}

// restCall keys every REST call by method and path shape.
func restCall(req *http.Request) string {
	p := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(p) >= 2 && p[0] == "connectors" {
		p[1] = "{c}"
	}
	k := req.Method + " /" + strings.Join(p, "/")
	if req.URL.Query().Has("expand") {
		k += "?expand" // the kafkaconnector reconciler's whole-cluster read
	}
	return k
}

// report prints one figure of a size, for the curve's run to read.
func report(name string, value float64) { benchkit.Figure(name, value) }

// measure measures -size KafkaConnectors.
func measure() error {
	n := *size
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute+time.Duration(n)*300*time.Millisecond)
	defer cancel()
	out, err := benchkit.OutDir()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "conveyor-bench-operator-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logf("%d KafkaConnectors: building conveyor-worker", n)
	bin, err := harness.BuildWorker(ctx, dir)
	if err != nil {
		return err
	}
	broker, err := harness.StartBrokerProcess(ctx, dir)
	if err != nil {
		return err
	}
	defer broker.Close()

	logf("starting envtest")
	e, err := envkit.Start(envkit.Options{})
	if err != nil {
		return err
	}
	defer e.Stop()
	k8s := e.Client
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}

	// One worker process per ConnectCluster, each its own Connect group.
	urls := map[string]string{}
	for i := range *clusters {
		name := fmt.Sprintf("cc%d", i)
		group := "bench-" + name
		var args func(string) []string
		if i == 0 && *workerCPU {
			// The worker writes its profile when it stops cleanly: it is
			// terminated, not killed, before the cluster closes.
			prof := filepath.Join(out, fmt.Sprintf("worker_cpu_%d.pprof", n))
			args = func(string) []string { return []string{"--cpuprofile", prof} }
		}
		c, err := harness.NewCluster(harness.Options{Binary: bin, Args: args, Dir: filepath.Join(dir, name), Bootstrap: broker.Addr, GroupID: group, AddressIDs: true,
			Extra: []string{"config.storage.topic=" + group + v1alpha1.ConfigTopicSuffix, "offset.storage.topic=" + group + v1alpha1.OffsetTopicSuffix,
				"status.storage.topic=" + group + v1alpha1.StatusTopicSuffix}})
		if err != nil {
			return err
		}
		defer c.Close()
		// The worker's group.instance.id is its pod's name, and a Pod of
		// that name stands for it (envtest runs no kubelet: it stays
		// Pending): the operator removes the group members of pods that
		// are gone, and without pods it removed every bench worker from
		// its group each departed check.
		podName := name + "-w1"
		w, err := c.Start(ctx, podName)
		if i == 0 && *workerCPU && err == nil {
			defer func() { _ = w.Terminate(); _ = w.Wait(30 * time.Second) }()
		}
		if err != nil {
			return err
		}
		urls[name] = w.URL
		objs := []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-rest", Namespace: namespace},
				Data: map[string][]byte{"token": []byte(c.Token())}},
			&v1alpha1.ConnectCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
				Spec: v1alpha1.ConnectClusterSpec{
					Kafka:   v1alpha1.KafkaConnection{BootstrapServers: broker.Addr},
					GroupID: ptr(group),
					Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1),
						OffsetPartitions: ptr[int32](5), StatusPartitions: ptr[int32](3)},
					RestAPI: v1alpha1.RestAPISpec{Authentication: v1alpha1.RestAuthentication{
						TokenSecret: &v1alpha1.SecretKeyRef{Name: name + "-rest", Key: "token"}}},
				},
			},
		}
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: namespace, Labels: clusterkit.SelectorLabels(objs[1].(*v1alpha1.ConnectCluster))},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "bench.invalid/worker:none"}}},
		})
		for _, o := range objs {
			if err := k8s.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
			}
		}
	}
	logf("%d worker processes up", *clusters)

	// The operator, as main.go sets it up, with counted API requests and
	// REST calls.
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS = -1 // as ctrl.GetConfig sets it in production: no client-side rate limit (the API server has fair queuing)
	// The manager builds several transports (cache, client, events, leader
	// election): all count into one counter.
	requests := newCounter(nil, apiRequest)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &counted{next: rt, c: requests}
	}
	calls := newCounter(nil, restCall)
	mgrOpts := ctrl.Options{
		Cache:  controllers.CacheOptions(nil),
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
	controllers.LeaderElection(&mgrOpts, true, namespace, controllers.DefaultLeaderTimings)
	_, err = e.StartManager(cfg, mgrOpts, func(mgr ctrl.Manager) error {
		opts := envkit.OperatorOptions()
		opts.ConnectorResync = *resync
		opts.WorkerResolver = workerclient.ResolverFunc(func(_ context.Context, cc *v1alpha1.ConnectCluster) ([]string, error) {
			if u, ok := urls[cc.Name]; ok {
				return []string{u}, nil
			}
			return nil, workerclient.ErrNoWorkers
		})
		opts.WorkerClient = workerclient.Options{HTTPClient: &http.Client{Transport: calls, Timeout: 30 * time.Second}, RequestTimeout: 30 * time.Second}
		return controllers.Setup(mgr, opts)
	})
	if err != nil {
		return err
	}

	// The KafkaConnectors, 16 creates at a time.
	cpuProf, err := os.Create(filepath.Join(out, fmt.Sprintf("operator_cpu_%d.pprof", n)))
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(cpuProf); err != nil {
		return err
	}
	names := make([]string, n)
	start, cpu0 := time.Now(), cpuSeconds()
	others0 := processCPU()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		names[i] = fmt.Sprintf("range-%04d", i)
		cc := fmt.Sprintf("cc%d", i%*clusters)
		kc := &v1alpha1.KafkaConnector{
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: namespace},
			Spec: v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: cc},
				Class: "dev.conveyor.connect.range.RangeSourceConnector", TasksMax: ptr[int32](1),
				Config: map[string]string{"topic": names[i], "count": "1", "record.size": "10", "poll.interval.ms": "1000"}},
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := k8s.Create(ctx, kc); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	logf("%d KafkaConnectors created in %s", n, time.Since(start))
	if err := waitReady(ctx, k8s, n, 10*time.Minute+time.Duration(n)*200*time.Millisecond); err != nil {
		return err
	}
	ready := time.Since(start)
	pprof.StopCPUProfile()
	cpuProf.Close()
	logf("all Ready in %s, %.1f CPU s in this process; API requests %v; REST calls %v", ready, cpuSeconds()-cpu0, requests.snapshot(), calls.snapshot())
	// Where the machine's CPU went while the connectors were created: a
	// curve that bends because the machine ran out of CPU shows here.
	apiserverFigures(ctx, e.Config, n)
	for comm, s := range processCPU() {
		logf("CPU while creating: %s %.1f s", comm, s-others0[comm])
		benchkit.Figure(fmt.Sprintf("operator_ready_cpu_s_%s_%d", strings.ReplaceAll(comm, "-", "_"), n), s-others0[comm])
	}
	report("ready_s", ready.Seconds())

	// At rest: let the creation's work drain, then count.
	time.Sleep(*settle)
	requests.snapshot()
	calls.snapshot()
	runtime.GC()
	idleStart := time.Now()
	// Minute by minute (logged), so that a window longer than a minute
	// shows when the cluster reads settle at their longest interval
	// (--connector-resync-max).
	r, c := map[string]int{}, map[string]int{}
	for left := *idle; left > 0; left -= time.Minute {
		time.Sleep(min(left, time.Minute))
		rm, cm := requests.snapshot(), calls.snapshot()
		writes, rest := 0, 0
		for k, v := range rm {
			r[k] += v
			if isWrite(k) {
				writes += v
			}
		}
		for k, v := range cm {
			c[k] += v
			rest += v
		}
		logf("at rest, minute %.0f: %d API writes, %d REST calls %s", time.Since(idleStart).Minutes(), writes, rest, sortedCounts(cm))
	}
	minutes := time.Since(idleStart).Minutes()
	var all, writes, lease, rest int
	for k, v := range r {
		all += v
		if isWrite(k) {
			writes += v
			if strings.HasSuffix(k, " leases") {
				lease += v
			}
		}
	}
	for _, v := range c {
		rest += v
	}
	logf("at rest for %s: API requests %s; REST calls %s", *idle, sortedCounts(r), sortedCounts(c))
	rss, err := benchkit.VmRSSMB(os.Getpid())
	if err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	brokerRSS, err := benchkit.VmRSSMB(broker.Pid())
	if err != nil {
		return err
	}
	heap, err := os.Create(filepath.Join(out, fmt.Sprintf("operator_heap_%d.pprof", n)))
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(heap, 0); err != nil {
		return err
	}
	heap.Close()
	debug.FreeOSMemory()
	floor, err := benchkit.VmRSSMB(os.Getpid())
	if err != nil {
		return err
	}
	logf("RSS %.1f MiB (%.1f MiB after returning free memory to the OS), heap in use %.1f MiB, broker %.1f MiB", rss, floor, float64(ms.HeapInuse)/(1<<20), brokerRSS)
	report("rss_mb", rss)
	report("heap_mb", float64(ms.HeapInuse)/(1<<20))
	report("broker_rss_mb", brokerRSS)
	report("rss_with_broker_mb", rss+brokerRSS)
	report("idle_writes_per_min", float64(writes+rest)/minutes)
	report("idle_api_writes_per_min", float64(writes)/minutes)
	report("idle_lease_writes_per_min", float64(lease)/minutes)
	report("idle_api_requests_per_min", float64(all)/minutes)
	report("idle_rest_calls_per_min", float64(rest)/minutes)

	// One edit among the others.
	edited := names[len(names)/2]
	cc := fmt.Sprintf("cc%d", (len(names)/2)%*clusters)
	lat, err := oneEdit(ctx, k8s, edited, urls[cc], tokenOf(ctx, k8s, cc))
	if err != nil {
		return err
	}
	report("one_edit_latency_s", lat.Seconds())
	return nil
}

// sortedCounts prints counts by key, in key order.
func sortedCounts(m map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "[%s: %d] ", k, m[k])
	}
	return b.String()
}

func tokenOf(ctx context.Context, k8s client.Client, cc string) string {
	var s corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cc + "-rest"}, &s); err != nil {
		return ""
	}
	return string(s.Data["token"])
}

// waitReady waits until n KafkaConnectors are Ready=True, listing them in
// pages of 500 every second plus a second per 1000 (the lists are the
// bench's own load on the API server, and the figure's resolution). A list
// that fails (an API server that is slow under load) is tried again.
func waitReady(ctx context.Context, k8s client.Client, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	interval := time.Second + time.Duration(n)*time.Millisecond
	last := -1
	for {
		ready := 0
		reasons := map[string]int{}
		var listErr error
		for cont := ""; ; {
			var list v1alpha1.KafkaConnectorList
			if listErr = k8s.List(ctx, &list, client.InNamespace(namespace), client.Limit(500), client.Continue(cont)); listErr != nil {
				break
			}
			for i := range list.Items {
				c := meta.FindStatusCondition(list.Items[i].Status.Conditions, v1alpha1.KafkaConnectorReady)
				switch {
				case c != nil && c.Status == metav1.ConditionTrue:
					ready++
				case c != nil:
					reasons[c.Reason]++
				default:
					reasons["none"]++
				}
			}
			if cont = list.Continue; cont == "" {
				break
			}
		}
		switch {
		case listErr != nil:
			logf("listing the KafkaConnectors (tried again): %v", listErr)
		case ready >= n:
			return nil
		case ready != last:
			logf("%d of %d Ready (others: %v)", ready, n, reasons)
			last = ready
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d KafkaConnectors Ready after %s (others: %v)", ready, n, timeout, reasons)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// oneEdit changes one connector's record.size and times until its
// worker's task config carries the new value.
func oneEdit(ctx context.Context, k8s client.Client, name, url, token string) (time.Duration, error) {
	var kc v1alpha1.KafkaConnector
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &kc); err != nil {
		return 0, err
	}
	patch := client.MergeFrom(kc.DeepCopy())
	kc.Spec.Config["record.size"] = "11"
	rc := harness.NewClient(url, token)
	start := time.Now()
	if err := k8s.Patch(ctx, &kc, patch); err != nil {
		return 0, err
	}
	for time.Since(start) < 2*time.Minute {
		var tasks []struct {
			Config map[string]string `json:"config"`
		}
		if code, err := rc.Do(ctx, "GET", "/connectors/"+name+"/tasks", nil, &tasks); err == nil && code == 200 {
			for _, t := range tasks {
				if t.Config["record.size"] == "11" {
					return time.Since(start), nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("connector %s's task did not get the new config in 2 minutes", name)
}

// cpuSeconds is this process's user+system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func ptr[T any](v T) *T { return &v }

// processCPU is the CPU time (user and system, seconds) of this bench's
// other processes by name: the API server, etcd, the workers and the
// broker.
func processCPU() map[string]float64 {
	out := map[string]float64{}
	for _, comm := range []string{"kube-apiserver", "etcd", "conveyor-worker", "kafka"} {
		pids, err := benchkit.DescendantsNamed(comm)
		if err != nil {
			continue
		}
		for _, pid := range pids {
			if s, err := benchkit.CPUSeconds(pid); err == nil {
				out[comm] += s
			}
		}
	}
	return out
}

// apiserverFigures reads the API server's own metrics after the creations
// and logs what tells where its CPU went: watchers it closed (a watcher
// that falls behind is closed and comes back), the watch events it sent,
// and the seconds its requests took, by verb and resource (the largest).
func apiserverFigures(ctx context.Context, cfg *rest.Config, n int) {
	rc, err := rest.RESTClientFor(withDefaults(cfg))
	if err != nil {
		logf("API server metrics: %v", err)
		return
	}
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("API server metrics: %v", err)
		return
	}
	terminated, events := 0.0, map[string]float64{}
	took := map[string]float64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		label := func(k string) string {
			_, after, ok := strings.Cut(labels, k+`="`)
			if !ok {
				return ""
			}
			val, _, _ := strings.Cut(after, `"`)
			return val
		}
		switch name {
		case "apiserver_terminated_watchers_total":
			terminated += v
		case "apiserver_watch_events_total":
			events[label("resource")] += v
		case "apiserver_request_duration_seconds_sum":
			took[label("verb")+" "+label("resource")] += v
		}
	}
	benchkit.Figure(fmt.Sprintf("operator_apiserver_terminated_watchers_%d", n), terminated)
	keys := slices.SortedFunc(maps.Keys(took), func(a, b string) int { return int(took[b]*1000 - took[a]*1000) })
	var top []string
	for _, k := range keys[:min(8, len(keys))] {
		top = append(top, fmt.Sprintf("%s %.1fs", k, took[k]))
	}
	logf("API server: %v watchers terminated, watch events %v; request seconds (largest) %s", terminated, events, strings.Join(top, ", "))
}

func withDefaults(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return c
}
