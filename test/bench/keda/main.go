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

// Command keda measures what the derived ScaledObject costs real KEDA
// (localcluster.KEDAVersion: its operator and its metrics API server, run
// as pods of a local cluster in a network namespace of its own, with the
// HPA controller of kube-controller-manager reading the metric) as it grows
// from 1 to 100 to 500 sink triggers (-sizes), and prints the curves
// (benchkit.Curve: the series, the fitted cost per trigger, the bend, a PNG
// in the bench's output folder):
//
//   - keda_rss_mb_per_trigger: VmRSS of the KEDA operator plus its metrics
//     server, with the triggers as the operator derives them
//     (fullMetadata: "false");
//   - keda_rss_mb_per_trigger_fullmetadata: the same ScaledObject with KEDA's
//     default fullMetadata "true" (every trigger's Kafka client holds the
//     metadata of every topic on the brokers);
//   - keda_metric_latency_s_per_trigger(_fullmetadata): how long the
//     composite metric takes to answer through the API server
//     (GET /apis/external.metrics.k8s.io/..., the HPA's read; the median of
//     5), KEDA's operator reading every trigger's lag for it;
//   - keda_first_metric_s_per_trigger(_fullmetadata): how long after the
//     ScaledObject's creation its metric first answers (KEDA builds a
//     scaler, with its Kafka client, for every trigger). A point whose
//     metric has not answered within -wait is not on the curves: its RSS
//     then is printed apart (keda_unanswered_*).
//
// The operator's and the metrics server's RSS are printed apart too
// (keda_operator_rss_mb_N, keda_adapter_rss_mb_N). Each point starts with
// freshly restarted KEDA pods (memory does not carry over), a ScaledObject
// of N sinks, each reading one topic of its own with a backlog of 10
// records (group connect-<sink>, nothing committed: the lag is the log end,
// offsetResetPolicy earliest), built by autoscaling.BuildScaledObject as
// the operator builds it, for a worker Deployment whose pods stay Pending
// (no image): KEDA and the HPA work on the Deployment's scale, not on its
// pods. RSS is read after two polling intervals at rest with the HPA
// reading the metric. Kafka is the local cluster's kfake process. Needs
// root (the local cluster). Run it with `make bench`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
	"github.com/conveyor-dev/conveyor/test/bench/benchkit"
	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

var (
	sizes        = flag.String("sizes", "1,100,500", "sink triggers in the ScaledObject, one point each")
	fullMetadata = flag.String("fullmetadata", "false,true", "the fullMetadata values measured: false (as derived), true (KEDA's default), or both")
	polling      = flag.Duration("polling", 10*time.Second, "the ScaledObject's pollingInterval (spec.autoscaling.pollingInterval)")
	wait         = flag.Duration("wait", 15*time.Minute, "how long a point waits for its ScaledObject's first metric; a point still unanswered then is reported apart, its RSS read as it stands")
	verbose      = flag.Bool("v", false, "log progress to stderr")
)

const namespace = "bench"

var began = time.Now()

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench keda: %5.1fs: "+format+"\n", append([]any{time.Since(began).Seconds()}, args...)...)
	}
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench keda: %v\n", err)
		os.Exit(1)
	}
}

// point is one measurement.
type point struct {
	operatorMB, adapterMB float64
	latency               time.Duration
	// first is how long the metric took to answer after the ScaledObject
	// was created (KEDA building every trigger's scaler).
	first time.Duration
	// unanswered: the metric did not answer within -wait; the RSS is what
	// KEDA held then, still building scalers (a lower bound), and latency
	// is not known.
	unanswered bool
}

func run() error {
	ns, err := benchkit.Sizes("-sizes", *sizes)
	if err != nil {
		return err
	}
	// Interrupted, the bench stops the local cluster before it exits.
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sig, 100*time.Minute)
	defer cancel()
	kedaDir, err := localcluster.BuildKEDA(ctx, os.Stderr)
	if err != nil {
		return err
	}
	opts := localcluster.Options{NetNS: true, KEDA: true, KEDADir: kedaDir}
	if *verbose {
		opts.Log = os.Stderr
	}
	logf("starting the local cluster with KEDA %s", localcluster.KEDAVersion)
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Stop()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kedav1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	k8s, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}

	// One topic per sink, each with a backlog.
	most := 0
	for _, n := range ns {
		most = max(most, n)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(c.KafkaAddr), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer kc.Close()
	topics := make([]string, most)
	for i := range topics {
		topics[i] = fmt.Sprintf("sink-%04d", i)
	}
	if _, err := kadm.NewClient(kc).CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		return fmt.Errorf("creating %d topics: %w", most, err)
	}
	var recs []*kgo.Record
	for _, t := range topics {
		for range 10 {
			recs = append(recs, &kgo.Record{Topic: t, Value: []byte("x")})
		}
	}
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing the backlogs: %w", err)
	}
	// Each sink's group exists, as a running sink's does, with offset 0
	// committed: a lag of 10. (An OffsetFetch of a group that does not exist
	// answers GROUP_ID_NOT_FOUND, in kfake as in Kafka 4's group
	// coordinator, and KEDA's kafka scaler then fails the trigger.)
	adm := kadm.NewClient(kc)
	for _, t := range topics {
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: t, Partition: 0, At: 0, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctx, "connect-"+t, offs); err != nil {
			return fmt.Errorf("committing the offsets of group connect-%s: %w", t, err)
		}
	}
	logf("%d topics with 10 records each, and their sinks' groups at offset 0", most)

	var variants []bool
	for v := range strings.SplitSeq(*fullMetadata, ",") {
		switch strings.TrimSpace(v) {
		case "false":
			variants = append(variants, false)
		case "true":
			variants = append(variants, true)
		default:
			return fmt.Errorf("-fullmetadata: %q is neither false nor true", v)
		}
	}
	results := map[bool]map[int]point{}
	var errs []error
	for _, full := range variants {
		results[full] = map[int]point{}
		for _, n := range ns {
			p, err := measure(ctx, c, k8s, n, full)
			if err != nil {
				// The curve is reported over the points that were measured.
				fmt.Fprintf(os.Stderr, "bench keda: %d triggers, fullMetadata %v: %v\n", n, full, err)
				errs = append(errs, fmt.Errorf("%d triggers, fullMetadata %v: %w", n, full, err))
				continue
			}
			suffix := ""
			if full {
				suffix = "_fullmetadata"
			}
			if p.unanswered {
				// Not a point of the curves: KEDA had not finished building
				// its scalers. What it held by then is reported apart, and
				// the first metric's time as at least -wait.
				benchkit.Figure(fmt.Sprintf("keda_unanswered_after_s_%d%s", n, suffix), p.first.Seconds())
				benchkit.Figure(fmt.Sprintf("keda_unanswered_operator_rss_mb_%d%s", n, suffix), p.operatorMB)
				benchkit.Figure(fmt.Sprintf("keda_unanswered_adapter_rss_mb_%d%s", n, suffix), p.adapterMB)
				continue
			}
			results[full][n] = p
			benchkit.Figure(fmt.Sprintf("keda_operator_rss_mb_%d%s", n, suffix), p.operatorMB)
			benchkit.Figure(fmt.Sprintf("keda_adapter_rss_mb_%d%s", n, suffix), p.adapterMB)
			benchkit.Figure(fmt.Sprintf("keda_first_metric_s_%d%s", n, suffix), p.first.Seconds())
		}
	}
	for _, full := range variants {
		suffix, label := "", `fullMetadata "false"`
		if full {
			suffix, label = "_fullmetadata", `fullMetadata "true" (KEDA's default)`
		}
		rss := benchkit.Curve{Name: "keda_rss_mb_per_trigger" + suffix, X: "sink triggers in the ScaledObject", Y: "KEDA operator + metrics server RSS (MiB), " + label, Per: 1}
		lat := benchkit.Curve{Name: "keda_metric_latency_s_per_trigger" + suffix, X: "sink triggers in the ScaledObject", Y: "composite metric latency (s), " + label, Per: 1}
		first := benchkit.Curve{Name: "keda_first_metric_s_per_trigger" + suffix, X: "sink triggers in the ScaledObject", Y: "first metric after the ScaledObject's creation (s), " + label, Per: 1}
		for _, n := range ns {
			p, ok := results[full][n]
			if !ok {
				continue
			}
			rss.Add(float64(n), p.operatorMB+p.adapterMB)
			lat.Add(float64(n), p.latency.Seconds())
			first.Add(float64(n), p.first.Seconds())
		}
		errs = append(errs, rss.Report(), lat.Report(), first.Report())
	}
	return errors.Join(errs...)
}

// measure restarts KEDA, derives the ScaledObject of n sinks, waits until
// its metric answers, and reads the latency and the RSS.
func measure(ctx context.Context, c *localcluster.Cluster, k8s client.Client, n int, full bool) (point, error) {
	if err := restartKEDA(ctx, c); err != nil {
		return point{}, err
	}
	name := fmt.Sprintf("workers-%d", n)
	if full {
		name += "-full"
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				// No image of the local cluster: the pods stay Pending.
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "bench.invalid/worker:none"}}},
			},
		},
	}
	if err := k8s.Create(ctx, dep); err != nil {
		return point{}, err
	}
	defer k8s.Delete(context.Background(), dep) //nolint:errcheck // the cluster goes with the bench
	so := scaledObject(c.KafkaAddr, name, n, full)
	if err := k8s.Create(ctx, so); err != nil {
		return point{}, fmt.Errorf("creating the ScaledObject: %w", err)
	}
	defer k8s.Delete(context.Background(), so) //nolint:errcheck // the cluster goes with the bench
	start := time.Now()
	// The HPA reads the one composite metric (scalingModifiers); KEDA's
	// metrics server computes it from every trigger.
	metric := kedav1alpha1.CompositeMetricName
	var seen string // what the wait saw last, for its error
	if err := testkit.Until(ctx, *wait, fmt.Sprintf("ScaledObject %s Ready with its metric answering", name), func(ctx context.Context) (bool, error) {
		var got kedav1alpha1.ScaledObject
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(so), &got); err != nil {
			return false, err
		}
		ready := autoscaling.ScaledObjectReadyCondition(&got)
		if ready == nil || ready.Status != metav1.ConditionTrue {
			seen = fmt.Sprintf("Ready condition %+v", ready)
			return false, nil
		}
		if _, err := readMetric(ctx, c, name, metric); err != nil {
			seen = fmt.Sprintf("reading %s: %v", metric, err)
			return false, nil
		}
		return true, nil
	}); err != nil {
		if ctx.Err() != nil {
			return point{}, fmt.Errorf("%w (last seen: %s)", err, seen)
		}
		p := point{first: time.Since(start), unanswered: true}
		if p.operatorMB, err = rssOf("keda-operator"); err != nil {
			return point{}, err
		}
		if p.adapterMB, err = rssOf("keda-adapter"); err != nil {
			return point{}, err
		}
		logf("%d triggers (fullMetadata %v): no metric after %s (last seen: %s); operator %.1f MiB, metrics server %.1f MiB then", n, full, p.first.Round(time.Second), seen, p.operatorMB, p.adapterMB)
		return p, nil
	}
	first := time.Since(start)
	logf("%d triggers (fullMetadata %v): metric %s answers %.1fs after the ScaledObject's creation", n, full, metric, first.Seconds())
	var lats []time.Duration
	for range 5 {
		d, err := readMetric(ctx, c, name, metric)
		if err != nil {
			return point{}, err
		}
		lats = append(lats, d)
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	// At rest: KEDA polls every pollingInterval, the HPA reads the metric
	// every 15s.
	select {
	case <-ctx.Done():
		return point{}, ctx.Err()
	case <-time.After(2**polling + 15*time.Second):
	}
	p := point{latency: lats[len(lats)/2], first: first}
	var err error
	if p.operatorMB, err = rssOf("keda-operator"); err != nil {
		return point{}, err
	}
	if p.adapterMB, err = rssOf("keda-adapter"); err != nil {
		return point{}, err
	}
	logf("%d triggers (fullMetadata %v): operator %.1f MiB, metrics server %.1f MiB, metric latency %s (of %v)", n, full, p.operatorMB, p.adapterMB, p.latency, lats)
	return p, nil
}

// scaledObject is the ScaledObject the operator derives for n running sinks
// of one task, each reading its own topic; with full, every trigger has
// KEDA's default fullMetadata "true" instead of the derived "false".
func scaledObject(kafka, name string, n int, full bool) *kedav1alpha1.ScaledObject {
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka: v1alpha1.KafkaConnection{BootstrapServers: kafka},
			Autoscaling: &v1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](10),
				PollingInterval: &metav1.Duration{Duration: *polling}},
		},
	}
	cs := make([]autoscaling.Connector, n)
	for i := range cs {
		cs[i] = autoscaling.Connector{Name: fmt.Sprintf("sink-%04d", i), Sink: true, Running: true, Topics: []string{fmt.Sprintf("sink-%04d", i)}, EffectiveTasks: 1}
	}
	so, _ := autoscaling.BuildScaledObject(cc, cs, autoscaling.Totals{EffectiveTasks: int32(n)}, autoscaling.Target{DeploymentName: name})
	if full {
		for i := range so.Spec.Triggers {
			so.Spec.Triggers[i].Metadata["fullMetadata"] = "true"
		}
	}
	return so
}

// readMetric reads the ScaledObject's external metric as the HPA does,
// through the API server's aggregation layer, and times it.
func readMetric(ctx context.Context, c *localcluster.Cluster, so, metric string) (time.Duration, error) {
	start := time.Now()
	_, err := c.Client.Discovery().RESTClient().Get().
		AbsPath("/apis/external.metrics.k8s.io/v1beta1/namespaces", namespace, metric).
		Param("labelSelector", "scaledobject.keda.sh/name="+so).DoRaw(ctx)
	return time.Since(start), err
}

// restartKEDA restarts KEDA's operator and metrics server, so that a point's
// memory is its own, and waits until both serve again. They are scaled to 0
// and back rather than rolled: the local cluster's pods share one network
// namespace, so a new pod cannot listen beside the old one.
func restartKEDA(ctx context.Context, c *localcluster.Cluster) error {
	deployments := []string{"deployment/keda-operator", "deployment/keda-metrics-apiserver"}
	kubectl := func(args ...string) error {
		if out, err := c.RunKubectl(ctx, "", args...); err != nil {
			return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	count := func() (int, error) {
		op, err := benchkit.DescendantsNamed("keda-operator")
		if err != nil {
			return 0, err
		}
		ad, err := benchkit.DescendantsNamed("keda-adapter")
		return len(op) + len(ad), err
	}
	if err := kubectl(append([]string{"-n", "keda", "scale", "--replicas=0"}, deployments...)...); err != nil {
		return err
	}
	if err := testkit.Until(ctx, 90*time.Second, "KEDA's processes gone", func(context.Context) (bool, error) {
		n, err := count()
		return n == 0, err
	}); err != nil {
		return err
	}
	if err := kubectl(append([]string{"-n", "keda", "scale", "--replicas=1"}, deployments...)...); err != nil {
		return err
	}
	for _, d := range deployments {
		if err := kubectl("-n", "keda", "rollout", "status", "--timeout=180s", d); err != nil {
			return err
		}
	}
	if err := kubectl("wait", "--for=condition=Available", "--timeout=180s", "apiservice/v1beta1.external.metrics.k8s.io"); err != nil {
		return err
	}
	return testkit.Until(ctx, 60*time.Second, "one KEDA operator and one metrics server process", func(context.Context) (bool, error) {
		n, err := count()
		return n == 2, err
	})
}

// rssOf is the VmRSS of the one process of this bench named comm.
func rssOf(comm string) (float64, error) {
	pids, err := benchkit.DescendantsNamed(comm)
	if err != nil {
		return 0, err
	}
	if len(pids) != 1 {
		return 0, fmt.Errorf("%d processes named %s under this bench, want 1", len(pids), comm)
	}
	return benchkit.VmRSSMB(pids[0])
}

func ptr[T any](v T) *T { return &v }
