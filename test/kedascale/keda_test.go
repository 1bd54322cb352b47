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

// Package kedascale evaluates the ScaledObjects that Conveyor's builder
// derives with KEDA v2.21.0's own code: the real kafka scaler (pkg/scalers,
// reading a kfake broker), KEDA's scale handler with its TriggerAuthentication
// resolver and scalingModifiers formula (pkg/scaling), and objects stored in a
// real kube-apiserver (envtest, with KEDA's CRDs). It is a module of its own
// so that the main module does not link every KEDA scaler.
//
// What is not KEDA's here: the HPA's replica rule (hpaDesired), written from
// the Kubernetes documentation because k8s.io/kubernetes cannot be linked as
// a module, and the few lines of KEDA's ScaledObject reconciler that turn the
// scalers' metric specs into the HPA's metrics (hpaMetrics).
package kedascale

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/authentication"
	"github.com/kedacore/keda/v2/pkg/scaling"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/certs"
)

var (
	k8s    client.Client
	scheme = runtime.NewScheme()
	// restConfig reaches the envtest API server (KEDA's reconciler runs in a
	// manager of its own in reconciler_test.go).
	restConfig *rest.Config
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Println("kedascale: KUBEBUILDER_ASSETS is not set (KUBEBUILDER_ASSETS=$(hack/build-test-binaries.sh all)); the tests need a kube-apiserver")
		os.Exit(1)
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kedav1alpha1.AddToScheme(scheme)
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{kedaCRDs()},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Println("kedascale: starting envtest:", err)
		os.Exit(1)
	}
	restConfig = cfg
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Println("kedascale:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// zapLevel is quiet unless KEDASCALE_VERBOSE is set (KEDA's scaler logs each
// lag computation at V(1)).
func zapLevel() zapcore.Level {
	if os.Getenv("KEDASCALE_VERBOSE") != "" {
		return -1
	}
	return 2
}

// kedaCRDs is KEDA's CRD folder in the module cache, of the KEDA version this
// module links.
func kedaCRDs() string {
	dir, err := moduleDir("github.com/kedacore/keda/v2")
	if err != nil {
		fmt.Println("kedascale:", err)
		os.Exit(1)
	}
	return filepath.Join(dir, "config", "crd", "bases")
}

// moduleDir is where the go command keeps module path, as this module
// requires it.
func moduleDir(path string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path).Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s: %w", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// broker is one kfake cluster with a client that writes records and commits
// offsets as a sink would.
type broker struct {
	// fake is the broker itself (its controls see every request).
	fake  *kfake.Cluster
	addrs []string
	// opts are the connection options (TLS, SASL) of every client.
	opts []kgo.Opt
	cl   *kgo.Client
	adm  *kadm.Client
	// auth, when set, is what the cluster's Kafka needs: TLS with this CA,
	// SASL/SCRAM-SHA-512 with these credentials.
	auth *brokerAuth
}

type brokerAuth struct {
	caPEM      []byte
	user, pass string
}

func newBroker(t *testing.T, secure bool) *broker { return newBrokerACLs(t, secure, nil) }

// newBrokerACLs is newBroker; with kedaACLs (secure only) the broker checks
// ACLs, the test's own clients are a superuser, and KEDA's user (the one the
// TriggerAuthentication names) may do only what kedaACLs allow.
func newBrokerACLs(t *testing.T, secure bool, kedaACLs []kfake.ACL) *broker {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0)}
	var auth *brokerAuth
	var clientOpts []kgo.Opt
	if secure {
		caPEM, serverCfg := selfSignedTLS(t)
		auth = &brokerAuth{caPEM: caPEM, user: "keda", pass: "s3cret-" + strconv.Itoa(int(time.Now().UnixNano()%1000))}
		opts = append(opts, kfake.TLS(serverCfg), kfake.EnableSASL())
		self := *auth
		if kedaACLs != nil {
			self.user = "admin"
			opts = append(opts, kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-512", self.user, self.pass), kfake.User("SCRAM-SHA-512", auth.user, auth.pass, kedaACLs...))
		} else {
			opts = append(opts, kfake.Superuser("SCRAM-SHA-512", auth.user, auth.pass))
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		clientOpts = append(clientOpts,
			kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
			kgo.SASL(scram.Auth{User: self.user, Pass: self.pass}.AsSha512Mechanism()))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	clientOpts = append(clientOpts, kgo.SeedBrokers(c.ListenAddrs()...))
	cl, err := kgo.NewClient(append(clientOpts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &broker{fake: c, addrs: c.ListenAddrs(), opts: clientOpts, cl: cl, adm: kadm.NewClient(cl), auth: auth}
}

// join starts a member of group that subscribes as a running sink does
// (topics, or topics.regex through plugin.TopicsRegex) and never commits,
// and waits until the group is Stable.
//
// kfake differs from Kafka here: it answers OffsetFetch for a group that does
// not exist with GROUP_ID_NOT_FOUND, where Kafka answers offset -1 for every
// partition, so KEDA's scaler fails on kfake for a group nobody has joined.
// A running sink's group always has members, which is what this models.
func (b *broker) join(t *testing.T, group string, topics []string, regex string) {
	t.Helper()
	opts := append([]kgo.Opt{}, b.opts...)
	opts = append(opts, kgo.ConsumerGroup(group), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if regex != "" {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(plugin.TopicsRegex(regex)))
	} else {
		opts = append(opts, kgo.ConsumeTopics(topics...))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	testkit.Eventually(t, 60*time.Second, "group "+group+" to be Stable", func() (bool, string) {
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel()
		gs, err := b.adm.DescribeGroups(wctx, group)
		if err != nil {
			return false, err.Error()
		}
		g := gs[group]
		return g.State == "Stable" && len(g.Members) > 0, fmt.Sprintf("state %q, %d members", g.State, len(g.Members))
	})
}

// topic creates a topic of partitions partitions and writes perPartition
// records to each.
func (b *broker) topic(t *testing.T, name string, partitions int32, perPartition int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := b.adm.CreateTopic(ctx, partitions, 1, nil, name); err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
	var recs []*kgo.Record
	for p := range partitions {
		for i := range perPartition {
			recs = append(recs, &kgo.Record{Topic: name, Partition: p, Value: []byte(strconv.Itoa(i))})
		}
	}
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("writing to %s: %v", name, err)
	}
}

// commit commits offset on every partition of topic for group, as a sink that
// consumed that far.
func (b *broker) commit(t *testing.T, group, topic string, partitions int32, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var os kadm.Offsets
	for p := range partitions {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: offset, LeaderEpoch: -1})
	}
	resp, err := b.adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("committing %s for %s: %v", topic, group, err)
	}
}

// cluster is the ConnectCluster the builder reads (as stored, defaults set).
func (b *broker) cluster(ns string, minR, maxR int32, lagThreshold int64) *v1alpha1.ConnectCluster {
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "conveyor", Namespace: ns},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka:             v1alpha1.KafkaConnection{BootstrapServers: joinAddrs(b.addrs)},
			MaxTasksPerWorker: ptr.To[int32](8),
			Autoscaling: &v1alpha1.AutoscalingSpec{
				Enabled:                true,
				MinReplicas:            ptr.To(minR),
				MaxReplicas:            ptr.To(maxR),
				LagThreshold:           ptr.To(lagThreshold),
				ActivationLagThreshold: ptr.To[int64](0),
				PollingInterval:        &metav1.Duration{Duration: 5 * time.Second},
				CooldownPeriod:         &metav1.Duration{Duration: 30 * time.Second},
			},
		},
	}
	if b.auth != nil {
		cc.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{CA: &v1alpha1.SecretKeyRef{Name: "kafka-ca", Key: "ca.crt"}}
		cc.Spec.Kafka.SASL = &v1alpha1.KafkaSASL{
			Mechanism: v1alpha1.SASLMechanismScramSHA512,
			Username:  v1alpha1.SecretKeyRef{Name: "kafka-sasl", Key: "username"},
			Password:  v1alpha1.SecretKeyRef{Name: "kafka-sasl", Key: "password"},
		}
	}
	return cc
}

// secrets are the Secrets the cluster's Kafka settings name.
func (b *broker) secrets(ns string) []client.Object {
	if b.auth == nil {
		return nil
	}
	return []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kafka-ca", Namespace: ns}, Data: map[string][]byte{"ca.crt": b.auth.caPEM}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kafka-sasl", Namespace: ns}, Data: map[string][]byte{"username": []byte(b.auth.user), "password": []byte(b.auth.pass)}},
	}
}

func joinAddrs(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

// sink is a running sink KafkaConnector as the operator stores it: topics or
// topics.regex, the effective task count and the topics its workers report.
func sink(ns, name string, effective int32, config map[string]string, activeTopics ...string) v1alpha1.KafkaConnector {
	return v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.KafkaConnectorSpec{
			ClusterRef: v1alpha1.ClusterReference{Name: "conveyor"},
			Class:      "FileSink", TasksMax: ptr.To(effective), Config: config,
			State: v1alpha1.ConnectorTargetRunning,
		},
		Status: v1alpha1.KafkaConnectorStatus{State: v1alpha1.ConnectorStateRunning, TasksMax: effective, EffectiveTasks: effective, Topics: activeTopics},
	}
}

// evaluation is what KEDA and the HPA make of a derived ScaledObject.
type evaluation struct {
	// metrics are the HPA's metrics: name → value read through KEDA.
	metrics map[string]float64
	// desired is the HPA's replica count, within the ScaledObject's bounds.
	desired int32
}

// evaluate stores the derived objects in the API server (a fresh namespace)
// and asks KEDA's scale handler for each metric the HPA would have, as KEDA's
// metrics adapter does, then applies the HPA's rule from the minimum.
func evaluate(t *testing.T, ns string, so *kedav1alpha1.ScaledObject, ta *kedav1alpha1.TriggerAuthentication, extra []client.Object) evaluation {
	t.Helper()
	ev, err := newEvaluator(t, ns, so, ta, extra).read()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// evaluator asks KEDA's scale handler for a stored ScaledObject's metrics,
// as often as a test wants (KEDA counts a trigger's failed reads across
// them, as its metrics adapter does across the HPA's queries).
type evaluator struct {
	t      *testing.T
	so     *kedav1alpha1.ScaledObject
	h      scaling.ScaleHandler
	specs  []string
	target map[string]float64
}

// newEvaluator stores the derived objects and builds KEDA's scalers for so.
func newEvaluator(t *testing.T, ns string, so *kedav1alpha1.ScaledObject, ta *kedav1alpha1.TriggerAuthentication, extra []client.Object) *evaluator {
	t.Helper()
	return newEvaluatorWith(t, ns, so, ta, extra, k8s)
}

// newEvaluatorWith is newEvaluator with the client KEDA's scale handler
// (and its scalers) read the API server through.
func newEvaluatorWith(t *testing.T, ns string, so *kedav1alpha1.ScaledObject, ta *kedav1alpha1.TriggerAuthentication, extra []client.Object, kedaClient client.Client) *evaluator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	objs := append([]client.Object{}, extra...)
	objs = append(objs, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: so.Spec.ScaleTargetRef.Name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: so.Spec.MinReplicaCount,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "worker"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "worker"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "conveyor"}}},
			},
		},
	})
	if ta != nil {
		objs = append(objs, ta)
	}
	objs = append(objs, so)
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	// What KEDA's ScaledObject reconciler records before the HPA exists, stored as it
	// stores it: KEDA rebuilds its scalers from the stored object after a trigger fails
	// or when the object changed (KEDA writes each trigger's health into the status).
	so.Status.ScaleTargetGVKR = &kedav1alpha1.GroupVersionKindResource{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}

	h := scaling.NewScaleHandler(kedaClient, nil, scheme, 10*time.Second, 10*time.Second, events.NewFakeRecorder(100), &authentication.AuthClientSet{})
	t.Cleanup(func() { _ = h.DeleteScalableObject(context.Background(), so) })
	cache, err := h.GetScalersCache(ctx, so)
	if err != nil {
		t.Fatalf("KEDA refuses the ScaledObject: %v", err)
	}
	specs, target := hpaMetrics(t, so, cache.GetMetricSpecForScaling(ctx))
	if err := k8s.Status().Update(ctx, so); err != nil {
		t.Fatalf("recording the ScaledObject's status as KEDA's reconciler does: %v", err)
	}
	return &evaluator{t: t, so: so, h: h, specs: specs, target: target}
}

// read asks for every metric once; an error is KEDA's answer to the HPA
// (the HPA then keeps the current worker count).
func (e *evaluator) read() (evaluation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ev := evaluation{metrics: map[string]float64{}}
	desired := int32(0)
	for _, name := range e.specs {
		list, err := e.h.GetScaledObjectMetrics(ctx, e.so.Name, e.so.Namespace, name)
		if err != nil {
			return ev, fmt.Errorf("KEDA's metric %s: %w", name, err)
		}
		if len(list.Items) != 1 {
			return ev, fmt.Errorf("KEDA's metric %s has %d values: %+v", name, len(list.Items), list.Items)
		}
		v := list.Items[0].Value.AsApproximateFloat64()
		ev.metrics[name] = v
		desired = max(desired, hpaDesired(v, e.target[name], *e.so.Spec.MinReplicaCount))
	}
	ev.desired = min(max(desired, *e.so.Spec.MinReplicaCount), *e.so.Spec.MaxReplicaCount)
	return ev, nil
}

// hpaMetrics are the external metrics of the HPA that KEDA's ScaledObject
// reconciler makes (controllers/keda/hpa.go, getScaledObjectMetricSpecs): one
// per trigger, or, with scalingModifiers, the one composite metric. It
// records the trigger metric names in the status as that reconciler does,
// which the scale handler reads. It returns the metric names and their
// AverageValue targets.
func hpaMetrics(t *testing.T, so *kedav1alpha1.ScaledObject, specs []autoscalingv2.MetricSpec) ([]string, map[string]float64) {
	t.Helper()
	targets := map[string]float64{}
	var names []string
	for _, s := range specs {
		if s.External == nil {
			continue
		}
		so.Status.ExternalMetricNames = append(so.Status.ExternalMetricNames, s.External.Metric.Name)
		if s.External.Target.Type != autoscalingv2.AverageValueMetricType {
			t.Fatalf("metric %s targets %s, want AverageValue", s.External.Metric.Name, s.External.Target.Type)
		}
		names = append(names, s.External.Metric.Name)
		targets[s.External.Metric.Name] = s.External.Target.AverageValue.AsApproximateFloat64()
	}
	if so.IsUsingModifiers() {
		target, err := strconv.ParseFloat(so.Spec.Advanced.ScalingModifiers.Target, 64)
		if err != nil {
			t.Fatal(err)
		}
		return []string{kedav1alpha1.CompositeMetricName}, map[string]float64{kedav1alpha1.CompositeMetricName: target}
	}
	return names, targets
}

// hpaTolerance is the HPA's default tolerance (--horizontal-pod-autoscaler-tolerance).
const hpaTolerance = 0.1

// hpaDesired is the HPA's rule for an external metric with an AverageValue
// target (Kubernetes docs, "Algorithm details"; replica_calculator.go's
// GetExternalPerPodMetricReplicas): ceil(value / target), unless the usage
// ratio value / (target × current) is within the tolerance of 1, in which
// case the count stays. The HPA then takes the largest over its metrics.
func hpaDesired(value, target float64, current int32) int32 {
	if target <= 0 {
		return current
	}
	ratio := value / (target * float64(current))
	if math.Abs(ratio-1) <= hpaTolerance {
		return current
	}
	return int32(math.Ceil(value / target))
}

// selfSignedTLS returns a CA certificate (PEM) and a server config whose
// certificate that CA signed, for 127.0.0.1.
func selfSignedTLS(t *testing.T) ([]byte, *tls.Config) {
	t.Helper()
	ca, err := certs.NewCA("kedascale-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.TLS("kfake", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return ca.PEM, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

// namespace creates a fresh namespace.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kedascale-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// derive is what the operator derives for the cluster and its connectors.
func derive(cc *v1alpha1.ConnectCluster, kcs []v1alpha1.KafkaConnector) (*kedav1alpha1.ScaledObject, *kedav1alpha1.TriggerAuthentication, []autoscaling.Connector) {
	conns := autoscaling.ConnectorsFrom(kcs)
	tgt := autoscaling.Target{DeploymentName: cc.Name + "-connect", ServiceName: cc.Name + "-connect"}
	so, _ := autoscaling.BuildScaledObject(cc, conns, autoscaling.Totals{EffectiveTasks: autoscaling.TotalEffectiveTasks(conns)}, tgt)
	return so, autoscaling.BuildTriggerAuthentication(cc, tgt), conns
}
