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
// per line, "conveyor-bench: NAME=VALUE":
//
//   - operator_1000_ready_s: -connectors KafkaConnectors (default 1000,
//     RangeSources of one task that write one record and idle) spread
//     evenly over 5 ConnectClusters are created (16 at a time, as kubectl
//     apply of a folder would) until every one is Ready=True;
//   - operator_rss_mb: VmRSS of this process once everything is Ready and
//     a garbage collection ran: the operator (manager, informer caches,
//     both reconcilers) plus the in-process kfake broker and this
//     program's own API client, so an upper bound of the operator's own;
//   - operator_idle_writes_per_min: over -idle (default 60s, two
//     connector resyncs) with nothing changing, the operator's API writes
//     (every request of its manager's client that is not a GET, LIST or
//     WATCH: creates, updates, patches, status patches, events) plus every
//     REST call it makes to the workers (reads included), per minute;
//     operator_idle_api_writes_per_min and operator_idle_rest_calls_per_min
//     give the two parts;
//   - operator_one_edit_latency_s: one KafkaConnector's config edited
//     among the 1000, until its worker runs a task with the new config
//     (GET /connectors/{c}/tasks shows it).
//
// The API server is envtest's (etcd and kube-apiserver, the repository's
// CRDs); the operator runs in this process as the conveyor binary sets it
// up (controllers.Setup, Secrets uncached, the production connector
// resync of 30s) but for the worker resolver, which maps each
// ConnectCluster to its worker (envtest has no kubelet, so there are no
// worker pods). Each ConnectCluster has one real conveyor-worker process
// (separate processes, so that this process's RSS is the operator's);
// Kafka is kfake in this process. Run it with `make bench`
// (KUBEBUILDER_ASSETS set by hack/build-test-binaries.sh). A missed target
// does not fail the run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/bench/benchkit"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

var (
	connectors = flag.Int("connectors", 1000, "KafkaConnectors in all")
	clusters   = flag.Int("clusters", 5, "ConnectClusters (one worker process each)")
	idle       = flag.Duration("idle", 60*time.Second, "how long idle writes are counted")
	resync     = flag.Duration("connector-resync", 0, "the operator's --connector-resync (0: the default, 30s)")
	verbose    = flag.Bool("v", false, "log progress to stderr")
)

const namespace = "bench"

var began = time.Now()

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench operator: %5.1fs: "+format+"\n", append([]any{time.Since(began).Seconds()}, args...)...)
	}
}

func report(name string, value float64) {
	fmt.Printf("conveyor-bench: %s=%s\n", name, strconv.FormatFloat(value, 'f', 3, 64))
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench operator: %v\n", err)
		os.Exit(1)
	}
}

// counter counts requests by a key.
type counter struct {
	next  http.RoundTripper
	key   func(*http.Request) string
	mu    sync.Mutex
	n     map[string]int
	total atomic.Int64
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
		c.total.Add(1)
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

// apiWrite keys the API requests that change something by method and
// resource ("PATCH kafkaconnectors/status").
func apiWrite(req *http.Request) string {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return ""
	}
	p := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	res := ""
	for i := range p {
		if p[i] == "namespaces" && i+2 < len(p) {
			res = strings.Join(p[i+2:], "/")
			// kafkaconnectors/<name>/status -> kafkaconnectors/status
			if parts := strings.Split(res, "/"); len(parts) >= 2 {
				res = parts[0]
				if len(parts) == 3 {
					res += "/" + parts[2]
				}
			}
		}
	}
	if res == "" && len(p) > 0 {
		res = p[len(p)-1]
	}
	return req.Method + " " + res
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

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "conveyor-bench-operator-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logf("building conveyor-worker")
	bin, err := harness.BuildWorker(ctx, dir)
	if err != nil {
		return err
	}
	broker, err := harness.StartBroker()
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
		c, err := harness.NewCluster(harness.Options{Binary: bin, Dir: filepath.Join(dir, name), Bootstrap: broker.Addr, GroupID: group,
			Extra: []string{"config.storage.topic=" + group + v1alpha1.ConfigTopicSuffix, "offset.storage.topic=" + group + v1alpha1.OffsetTopicSuffix,
				"status.storage.topic=" + group + v1alpha1.StatusTopicSuffix}})
		if err != nil {
			return err
		}
		defer c.Close()
		w, err := c.Start(ctx, "w1")
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
		for _, o := range objs {
			if err := k8s.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
			}
		}
	}
	logf("%d worker processes up", *clusters)

	// The operator, as main.go sets it up, with counted API writes and
	// REST calls.
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS = -1 // as ctrl.GetConfig sets it in production: no client-side rate limit (the API server has fair queuing)
	// The manager builds several transports (cache, client, events): all
	// count into one counter.
	writes := newCounter(nil, apiWrite)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &counted{next: rt, c: writes}
	}
	calls := newCounter(nil, restCall)
	_, err = e.StartManager(cfg, ctrl.Options{
		Cache:  controllers.CacheOptions(nil),
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}, func(mgr ctrl.Manager) error {
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

	// 1000 KafkaConnectors, 16 creates at a time.
	names := make([]string, *connectors)
	start, cpu0 := time.Now(), cpuSeconds()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range *connectors {
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
	logf("%d KafkaConnectors created in %s", *connectors, time.Since(start))
	if err := waitReady(ctx, k8s, *connectors, 10*time.Minute); err != nil {
		return err
	}
	ready := time.Since(start)
	logf("all Ready in %s, %.1f CPU s in this process (operator and broker); API writes %v; REST calls %v", ready, cpuSeconds()-cpu0, writes.snapshot(), calls.snapshot())
	report("operator_1000_ready_s", ready.Seconds())

	// At rest: let the creation's work drain, then count.
	time.Sleep(5 * time.Second)
	writes.snapshot()
	calls.snapshot()
	runtime.GC()
	idleStart := time.Now()
	time.Sleep(*idle)
	w, c := writes.snapshot(), calls.snapshot()
	perMin := func(m map[string]int) float64 {
		n := 0
		for _, v := range m {
			n += v
		}
		return float64(n) / time.Since(idleStart).Minutes()
	}
	logf("idle %s: API writes %v, REST calls %v", *idle, w, c)
	rss, err := benchkit.VmRSSMB(os.Getpid())
	if err != nil {
		return err
	}
	report("operator_rss_mb", rss)
	report("operator_idle_writes_per_min", perMin(w)+perMin(c))
	report("operator_idle_api_writes_per_min", perMin(w))
	report("operator_idle_rest_calls_per_min", perMin(c))

	// One edit among the 1000.
	edited := names[len(names)/2]
	cc := fmt.Sprintf("cc%d", (len(names)/2)%*clusters)
	lat, err := oneEdit(ctx, k8s, edited, urls[cc], tokenOf(ctx, k8s, cc))
	if err != nil {
		return err
	}
	report("operator_one_edit_latency_s", lat.Seconds())
	return nil
}

func tokenOf(ctx context.Context, k8s client.Client, cc string) string {
	var s corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cc + "-rest"}, &s); err != nil {
		return ""
	}
	return string(s.Data["token"])
}

// waitReady waits until n KafkaConnectors are Ready=True.
func waitReady(ctx context.Context, k8s client.Client, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := -1
	for {
		var list v1alpha1.KafkaConnectorList
		if err := k8s.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return err
		}
		ready := 0
		reasons := map[string]int{}
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
		if ready != last {
			logf("%d of %d Ready (others: %v)", ready, n, reasons)
			last = ready
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d KafkaConnectors Ready after %s (others: %v)", ready, n, timeout, reasons)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
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
