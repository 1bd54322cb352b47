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

package kafkaconnector

// The reconciler runs here against the real worker REST layer (runtime/rest)
// and the real workerclient, over HTTP with bearer authentication. Behind
// the REST layer sits memHerder, a test double of the worker's herder that
// keeps connectors in memory and counts the writes it receives; the real
// herder with in-process workers on kfake comes in the envtest suite. The
// Kubernetes side is controller-runtime's fake client (with the status
// subresource and the clusterRef field index), not an API server.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/rest"
)

const restToken = "s3cr3t-rest-token"

type memConnector struct {
	config   map[string]string
	state    string // connector state reported
	tasksMax int
	failed   bool
}

// memHerder is a herder double: connectors in a map, sinks limited to 4
// "partitions", every write counted by kind.
type memHerder struct {
	connectapi.Herder // methods the reconciler never calls panic (the REST layer answers 500)

	mu         sync.Mutex
	connectors map[string]*memConnector
	writes     map[string]int
}

func newMemHerder() *memHerder {
	return &memHerder{connectors: map[string]*memConnector{}, writes: map[string]int{}}
}

func (h *memHerder) write(kind string) { h.writes[kind]++ }

func (h *memHerder) totalWrites() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, v := range h.writes {
		n += v
	}
	return n
}

func (h *memHerder) count(kind string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writes[kind]
}

func (h *memHerder) Ready(context.Context) error { return nil }
func (h *memHerder) IsLeader() bool              { return true }
func (h *memHerder) LeaderURL() string           { return "" }

func (h *memHerder) get(name string) (*memConnector, error) {
	c, ok := h.connectors[name]
	if !ok {
		return nil, connectapi.NotFoundf("Connector %s not found", name)
	}
	return c, nil
}

func (h *memHerder) effective(c *memConnector) int {
	if c.state == connectapi.StateStopped {
		return 0
	}
	if _, sink := c.config["topics"]; sink {
		return min(c.tasksMax, 4)
	}
	return c.tasksMax
}

func (h *memHerder) ConnectorStatus(_ context.Context, name string) (connectapi.ConnectorStateInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.ConnectorStateInfo{}, err
	}
	st := connectapi.ConnectorStateInfo{Name: name, Type: connectapi.TypeSink, Connector: connectapi.ConnectorState{State: c.state, WorkerID: "127.0.0.1:8083"}}
	if c.failed {
		st.Connector.State, st.Connector.Trace = connectapi.StateFailed, "java.lang.Boom: it broke\n\tat somewhere"
	}
	if c.state != connectapi.StateStopped {
		for i := 0; i < h.effective(c); i++ {
			st.Tasks = append(st.Tasks, connectapi.TaskState{ID: i, State: c.state, WorkerID: "127.0.0.1:8083"})
		}
	}
	return st, nil
}

func (h *memHerder) ConnectorConfig(_ context.Context, name string) (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range c.config {
		out[k] = v
	}
	return out, nil
}

func (h *memHerder) put(name string, cfg map[string]string, state string) {
	tm := 1
	fmt.Sscan(cfg["tasks.max"], &tm)
	c := h.connectors[name]
	if c == nil {
		c = &memConnector{state: state}
		h.connectors[name] = c
	}
	c.config, c.tasksMax = cfg, tm
}

func (h *memHerder) CreateConnector(_ context.Context, req connectapi.CreateConnectorRequest) (connectapi.ConnectorInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.connectors[req.Name]; ok {
		return connectapi.ConnectorInfo{}, connectapi.AlreadyExistsf("Connector %s already exists", req.Name)
	}
	h.write("create")
	state := string(req.InitialState)
	if state == "" {
		state = connectapi.StateRunning
	}
	h.put(req.Name, req.Config, state)
	return connectapi.ConnectorInfo{Name: req.Name, Config: req.Config, Type: connectapi.TypeSink}, nil
}

func (h *memHerder) PutConnectorConfig(_ context.Context, name string, cfg map[string]string) (connectapi.ConnectorInfo, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.write("put")
	_, existed := h.connectors[name]
	h.put(name, cfg, connectapi.StateRunning)
	return connectapi.ConnectorInfo{Name: name, Config: cfg, Type: connectapi.TypeSink}, !existed, nil
}

func (h *memHerder) DeleteConnector(_ context.Context, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.get(name); err != nil {
		return err
	}
	h.write("delete")
	delete(h.connectors, name)
	return nil
}

func (h *memHerder) setState(name, kind, state string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return err
	}
	h.write(kind)
	c.state, c.failed = state, false
	return nil
}

func (h *memHerder) Pause(_ context.Context, name string) error {
	return h.setState(name, "pause", connectapi.StatePaused)
}
func (h *memHerder) Resume(_ context.Context, name string) error {
	return h.setState(name, "resume", connectapi.StateRunning)
}
func (h *memHerder) Stop(_ context.Context, name string) error {
	return h.setState(name, "stop", connectapi.StateStopped)
}

func (h *memHerder) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*connectapi.ConnectorStateInfo, error) {
	h.mu.Lock()
	c, err := h.get(name)
	if err != nil {
		h.mu.Unlock()
		return nil, err
	}
	h.write("restart")
	h.write(fmt.Sprintf("restart %s includeTasks=%v onlyFailed=%v", name, includeTasks, onlyFailed))
	c.failed = false
	h.mu.Unlock()
	if !includeTasks && !onlyFailed {
		return nil, nil
	}
	st, err := h.ConnectorStatus(ctx, name)
	return &st, err
}

func (h *memHerder) ValidateConfig(_ context.Context, plugin string, cfg map[string]string) (connectapi.ConfigInfos, error) {
	if plugin != "FileSink" {
		return connectapi.ConfigInfos{}, connectapi.NotFoundf("Failed to find any class that implements Connector and which name matches %s", plugin)
	}
	infos := connectapi.ConfigInfos{Name: plugin}
	for _, key := range []string{"file", "topics"} {
		v := connectapi.ConfigValueInfo{Name: key}
		if cfg[key] == "" {
			v.Errors = []string{fmt.Sprintf("Missing required configuration %q which has no default value.", key)}
			infos.ErrorCount++
		}
		infos.Configs = append(infos.Configs, connectapi.ConfigInfo{Definition: connectapi.ConfigKeyInfo{Name: key}, Value: v})
	}
	return infos, nil
}

func (h *memHerder) Limits(_ context.Context, name string) (connectapi.Limits, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.Limits{}, err
	}
	four := 4
	eff := h.effective(c)
	reason := "TasksMax"
	if c.tasksMax > 4 {
		reason = "TopicPartitions"
	}
	return connectapi.Limits{TasksMax: c.tasksMax, NaturalLimit: &four, EffectiveTasks: eff, Reason: reason}, nil
}

func (h *memHerder) ActiveTopics(_ context.Context, name string) (connectapi.ActiveTopicsInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return connectapi.ActiveTopicsInfo{}, err
	}
	return connectapi.ActiveTopicsInfo{Connector: name, Topics: SinkTopics(c.config)}, nil
}

type env struct {
	t      *testing.T
	ctx    context.Context
	k8s    client.Client
	herder *memHerder
	r      *Reconciler
}

func newEnv(t *testing.T) *env { return newEnvWith(t, nil) }

// newEnvWith serves wrap(herder) instead of the herder double itself.
func newEnvWith(t *testing.T, wrap func(*memHerder) connectapi.Herder) *env {
	t.Helper()
	h := newMemHerder()
	var served connectapi.Herder = h
	if wrap != nil {
		served = wrap(h)
	}
	srv, err := rest.New(served, rest.Config{Token: restToken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"},
		Spec: v1alpha1.ConnectClusterSpec{Kafka: v1alpha1.KafkaConnection{BootstrapServers: "127.0.0.1:9092"},
			ConnectorAccess: &v1alpha1.ConnectorAccess{Secrets: []string{"db", "api"}}},
	}
	tokenSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "c1" + v1alpha1.RestTokenSecretSuffix, Namespace: "ns"},
		Data:       map[string][]byte{v1alpha1.RestTokenSecretKey: []byte(restToken)},
	}
	k8s := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&v1alpha1.KafkaConnector{}, &v1alpha1.ConnectCluster{}).
		WithIndex(&v1alpha1.KafkaConnector{}, clusterkit.ConnectorClusterRefIndex, clusterkit.ClusterRefOf).
		WithIndex(&v1alpha1.KafkaConnector{}, SecretRefIndex, SecretNamesOf).
		WithObjects(cc, tokenSecret).Build()
	return &env{t: t, ctx: context.Background(), k8s: k8s, herder: h, r: &Reconciler{
		Client:        k8s,
		Resolver:      workerclient.StaticResolver{ts.URL},
		ClientOptions: workerclient.Options{Backoff: workerclient.Backoff{Initial: 1, Max: 1, Attempts: 2}},
		Lag: func(_ context.Context, _ *v1alpha1.ConnectCluster, group string) (*int64, error) {
			if group != "connect-orders-sink" {
				return nil, nil
			}
			return ptr.To[int64](42), nil
		},
	}}
}

func (e *env) apply(name string, mutate func(kc *v1alpha1.KafkaConnector)) {
	e.t.Helper()
	kc := &v1alpha1.KafkaConnector{}
	err := e.k8s.Get(e.ctx, types.NamespacedName{Namespace: "ns", Name: name}, kc)
	if apierrors.IsNotFound(err) {
		kc = &v1alpha1.KafkaConnector{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: v1alpha1.KafkaConnectorSpec{
				ClusterRef: v1alpha1.ClusterReference{Name: "c1"}, Class: "FileSink", TasksMax: ptr.To[int32](10),
				Config: map[string]string{"topics": "orders", "file": "/data/orders.jsonl"}, State: v1alpha1.ConnectorTargetRunning,
			},
		}
		mutate(kc)
		if err := e.k8s.Create(e.ctx, kc); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	if err != nil {
		e.t.Fatal(err)
	}
	mutate(kc)
	kc.Generation++
	if err := e.k8s.Update(e.ctx, kc); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reconcile(name string) ctrl.Result {
	e.t.Helper()
	res, err := e.r.Reconcile(e.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}})
	if err != nil {
		e.t.Fatalf("reconcile %s: %v", name, err)
	}
	return res
}

func (e *env) get(name string) *v1alpha1.KafkaConnector {
	e.t.Helper()
	kc := &v1alpha1.KafkaConnector{}
	if err := e.k8s.Get(e.ctx, types.NamespacedName{Namespace: "ns", Name: name}, kc); err != nil {
		e.t.Fatal(err)
	}
	return kc
}

func (e *env) ready(name string) *metav1.Condition {
	return meta.FindStatusCondition(e.get(name).Status.Conditions, v1alpha1.KafkaConnectorReady)
}

func TestReconcileLifecycle(t *testing.T) {
	e := newEnv(t)
	e.apply("orders-sink", func(*v1alpha1.KafkaConnector) {})
	e.reconcile("orders-sink")

	kc := e.get("orders-sink")
	if !controllerutil.ContainsFinalizer(kc, Finalizer) {
		t.Fatal("no finalizer on a connector Conveyor created")
	}
	stored, _ := e.herder.ConnectorConfig(e.ctx, "orders-sink")
	if stored["tasks.max"] != "10" || stored["connector.class"] != "FileSink" || stored["name"] != "orders-sink" || stored["topics"] != "orders" {
		t.Fatalf("stored config %v", stored)
	}
	if kc.Status.TasksMax != 10 || kc.Status.EffectiveTasks != 4 || kc.Status.TaskLimit == nil || kc.Status.TaskLimit.Value != 4 || kc.Status.TaskLimit.Reason != "TopicPartitions" {
		t.Fatalf("task status %+v limit %+v", kc.Status, kc.Status.TaskLimit)
	}
	if c := meta.FindStatusCondition(kc.Status.Conditions, v1alpha1.KafkaConnectorTasksLimited); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "TopicPartitions" {
		t.Fatalf("TasksLimited = %+v", c)
	}
	if c := e.ready("orders-sink"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonConnectorRunning {
		t.Fatalf("Ready = %+v", c)
	}
	if kc.Status.Lag == nil || *kc.Status.Lag != 42 {
		t.Fatalf("status.lag = %v, want the 42 the Lag reader reported for group connect-orders-sink", kc.Status.Lag)
	}
	if len(kc.Status.Tasks) != 4 || kc.Status.State != v1alpha1.ConnectorStateRunning || len(kc.Status.Topics) != 1 {
		t.Fatalf("runtime status %+v", kc.Status)
	}

	// A no-op reconcile makes no REST write and no status write.
	writes, rv := e.herder.totalWrites(), kc.ResourceVersion
	e.reconcile("orders-sink")
	e.reconcile("orders-sink")
	if n := e.herder.totalWrites(); n != writes {
		t.Fatalf("no-op reconciles made %d REST writes (%v)", n-writes, e.herder.writes)
	}
	if e.get("orders-sink").ResourceVersion != rv {
		t.Fatal("a no-op reconcile wrote the KafkaConnector")
	}

	// A config edit is applied once.
	e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["file"] = "/data/other.jsonl" })
	e.reconcile("orders-sink")
	e.reconcile("orders-sink")
	if e.herder.count("put") != 1 {
		t.Fatalf("config edit: %d PUTs, want 1", e.herder.count("put"))
	}
	if stored, _ := e.herder.ConnectorConfig(e.ctx, "orders-sink"); stored["file"] != "/data/other.jsonl" {
		t.Fatalf("edit not applied: %v", stored)
	}

	// tasksMax 2 is below the limit: not limited any more.
	e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) { kc.Spec.TasksMax = ptr.To[int32](2) })
	e.reconcile("orders-sink")
	kc = e.get("orders-sink")
	if kc.Status.EffectiveTasks != 2 || meta.IsStatusConditionTrue(kc.Status.Conditions, v1alpha1.KafkaConnectorTasksLimited) {
		t.Fatalf("tasksMax 2: effective %d, conditions %+v", kc.Status.EffectiveTasks, kc.Status.Conditions)
	}

	// Pause, stop, resume reach the runtime.
	for _, step := range []struct {
		target v1alpha1.ConnectorTargetState
		kind   string
		state  v1alpha1.ConnectorState
		reason string
	}{
		{v1alpha1.ConnectorTargetPaused, "pause", v1alpha1.ConnectorStatePaused, v1alpha1.ReasonConnectorPaused},
		{v1alpha1.ConnectorTargetStopped, "stop", v1alpha1.ConnectorStateStopped, v1alpha1.ReasonConnectorStopped},
		{v1alpha1.ConnectorTargetRunning, "resume", v1alpha1.ConnectorStateRunning, v1alpha1.ReasonConnectorRunning},
	} {
		before := e.herder.count(step.kind)
		e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = step.target })
		e.reconcile("orders-sink")
		e.reconcile("orders-sink")
		if got := e.herder.count(step.kind) - before; got != 1 {
			t.Fatalf("%s: %d calls, want 1", step.target, got)
		}
		kc := e.get("orders-sink")
		if kc.Status.State != step.state {
			t.Fatalf("%s: status.state %s", step.target, kc.Status.State)
		}
		if c := e.ready("orders-sink"); c.Status != metav1.ConditionTrue || c.Reason != step.reason {
			t.Fatalf("%s: Ready %+v", step.target, c)
		}
	}

	// Stopping works even when the connector FAILED.
	e.herder.mu.Lock()
	e.herder.connectors["orders-sink"].failed = true
	e.herder.mu.Unlock()
	e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) {
		kc.Spec.State = v1alpha1.ConnectorTargetStopped
		kc.Spec.AutoRestart.Enabled = ptr.To(false)
	})
	before := e.herder.count("stop")
	e.reconcile("orders-sink")
	if e.herder.count("stop") != before+1 {
		t.Fatal("a FAILED connector was not stopped")
	}
	e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetRunning })
	e.reconcile("orders-sink")

	// The restart annotation restarts once per new value.
	restarts := e.herder.count("restart")
	e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) {
		kc.Annotations = map[string]string{AnnotationRestart: "2026-01-01T00:00:00Z"}
	})
	e.reconcile("orders-sink")
	e.reconcile("orders-sink")
	if got := e.herder.count("restart") - restarts; got != 1 {
		t.Fatalf("restart annotation: %d restarts, want 1", got)
	}
	if e.get("orders-sink").Status.LastRestartAnnotation != "2026-01-01T00:00:00Z" {
		t.Fatal("the handled restart value is not kept in status")
	}
	if e.herder.count("restart orders-sink includeTasks=true onlyFailed=false") != 1 {
		t.Fatalf("the restart annotation must restart the connector and all its tasks: %v", e.herder.writes)
	}

	// The restart-tasks annotation restarts the connector with its failed
	// tasks, once per new value, and keeps the value in status.
	restarts = e.herder.count("restart")
	e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) { kc.Annotations[AnnotationRestartTasks] = "1" })
	e.reconcile("orders-sink")
	e.reconcile("orders-sink")
	if got := e.herder.count("restart") - restarts; got != 1 || e.herder.count("restart orders-sink includeTasks=true onlyFailed=true") != 1 {
		t.Fatalf("restart-tasks annotation: %d restarts (%v), want 1 with onlyFailed", got, e.herder.writes)
	}
	if st := e.get("orders-sink").Status; st.LastRestartTasksAnnotation != "1" || st.LastRestartAnnotation != "2026-01-01T00:00:00Z" {
		t.Fatalf("handled values in status: restart %q, restart-tasks %q", st.LastRestartAnnotation, st.LastRestartTasksAnnotation)
	}

	// autoRestart restarts a failed connector (by default) and counts it.
	e.herder.mu.Lock()
	e.herder.connectors["orders-sink"].failed = true
	e.herder.mu.Unlock()
	e.apply("orders-sink", func(kc *v1alpha1.KafkaConnector) { kc.Spec.AutoRestart.Enabled = nil })
	restarts = e.herder.count("restart")
	e.reconcile("orders-sink")
	if e.herder.count("restart") != restarts+1 || e.get("orders-sink").Status.Restarts != 1 {
		t.Fatalf("autoRestart: %d restarts, status.restarts %d", e.herder.count("restart")-restarts, e.get("orders-sink").Status.Restarts)
	}

	// Delete removes the connector from the runtime, then the finalizer.
	if err := e.k8s.Delete(e.ctx, e.get("orders-sink")); err != nil {
		t.Fatal(err)
	}
	e.reconcile("orders-sink")
	if _, err := e.herder.ConnectorConfig(e.ctx, "orders-sink"); err == nil {
		t.Fatal("the connector is still in the runtime")
	}
	if err := e.k8s.Get(e.ctx, types.NamespacedName{Namespace: "ns", Name: "orders-sink"}, &v1alpha1.KafkaConnector{}); !apierrors.IsNotFound(err) {
		t.Fatalf("KafkaConnector not gone after its finalizer: %v", err)
	}
}

func TestReconcileBadInputLeavesOthersAlone(t *testing.T) {
	e := newEnv(t)
	e.apply("good", func(*v1alpha1.KafkaConnector) {})
	e.apply("missing-file", func(kc *v1alpha1.KafkaConnector) { delete(kc.Spec.Config, "file") })
	e.apply("unknown-class", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Class = "NoSuchConnector" })
	e.apply("bad-placeholder", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["password"] = "${secret:db}" })
	for _, n := range []string{"missing-file", "unknown-class", "bad-placeholder", "good"} {
		e.reconcile(n)
	}
	cases := map[string]struct{ reason, mention string }{
		"missing-file":    {v1alpha1.ReasonConfigInvalid, "file: Missing required configuration"},
		"unknown-class":   {v1alpha1.ReasonPluginNotFound, "NoSuchConnector"},
		"bad-placeholder": {v1alpha1.ReasonConfigInvalid, `"password"`},
	}
	for name, want := range cases {
		c := e.ready(name)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != want.reason || !strings.Contains(c.Message, want.mention) {
			t.Errorf("%s: Ready = %+v, want %s mentioning %q", name, c, want.reason, want.mention)
		}
		if _, err := e.herder.ConnectorConfig(e.ctx, name); err == nil {
			t.Errorf("%s was created despite bad input", name)
		}
	}
	if c := e.ready("good"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("the good connector is affected: %+v", c)
	}
	if e.herder.count("create") != 1 {
		t.Fatalf("%d creates, want 1", e.herder.count("create"))
	}
}

// foreignConnectorRefused creates connector name through the REST API, then
// a KafkaConnector of the same name, and checks that the pass refuses it.
func (e *env) foreignConnectorRefused(name string) {
	e.t.Helper()
	if _, err := e.herder.CreateConnector(e.ctx, connectapi.CreateConnectorRequest{Name: name, Config: map[string]string{"connector.class": "FileSink", "topics": "t", "file": "/x"}}); err != nil {
		e.t.Fatal(err)
	}
	e.apply(name, func(*v1alpha1.KafkaConnector) {})
	e.reconcile(name)
	if c := e.ready(name); c == nil || c.Reason != ReasonConnectorNotManaged {
		e.t.Fatalf("Ready = %+v, want %s", c, ReasonConnectorNotManaged)
	}
}

func TestReconcileLeavesForeignConnectorsAlone(t *testing.T) {
	e := newEnv(t)
	e.foreignConnectorRefused("theirs")
	if cfg, _ := e.herder.ConnectorConfig(e.ctx, "theirs"); cfg["file"] != "/x" {
		t.Fatal("the foreign connector's config was changed")
	}
	if err := e.k8s.Delete(e.ctx, e.get("theirs")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.herder.ConnectorConfig(e.ctx, "theirs"); err != nil {
		t.Fatal("deleting the KafkaConnector deleted a connector Conveyor does not manage")
	}
}

// staleCache serves KafkaConnectors as a cache that has not seen the
// finalizer yet: a pass reading it right after the pass that added the
// finalizer and created the connector.
type staleCache struct{ client.Client }

func (s staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := s.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if kc, ok := obj.(*v1alpha1.KafkaConnector); ok {
		controllerutil.RemoveFinalizer(kc, Finalizer)
	}
	return nil
}

func TestReconcileOwnConnectorThroughAStaleCache(t *testing.T) {
	e := newEnv(t)
	e.apply("mine", func(*v1alpha1.KafkaConnector) {})
	e.reconcile("mine")
	if c := e.ready("mine"); c == nil || c.Reason == ReasonConnectorNotManaged {
		t.Fatalf("after creation: Ready = %+v", c)
	}
	// The next pass reads the KafkaConnector from a cache that trails the
	// finalizer patch; the API server has it.
	e.r.Client, e.r.APIReader = staleCache{e.k8s}, e.k8s
	e.reconcile("mine")
	if c := e.ready("mine"); c == nil || c.Reason == ReasonConnectorNotManaged {
		t.Fatalf("a pass reading a stale cache took its own connector for a foreign one: Ready = %+v", c)
	}
	// A connector nobody created through a KafkaConnector is still refused.
	e.foreignConnectorRefused("theirs")
}

func TestReconcileWithoutClusterOrWorkers(t *testing.T) {
	e := newEnv(t)
	e.apply("lost", func(kc *v1alpha1.KafkaConnector) { kc.Spec.ClusterRef.Name = "nope" })
	e.reconcile("lost")
	if c := e.ready("lost"); c == nil || c.Reason != v1alpha1.ReasonClusterNotFound {
		t.Fatalf("Ready = %+v", c)
	}
	e.r.Resolver = workerclient.StaticResolver(nil)
	e.apply("waiting", func(*v1alpha1.KafkaConnector) {})
	if res := e.reconcile("waiting"); res.RequeueAfter <= 0 {
		t.Fatal("no retry while the cluster has no Ready worker")
	}
	if c := e.ready("waiting"); c == nil || c.Reason != v1alpha1.ReasonClusterNotReady {
		t.Fatalf("Ready = %+v", c)
	}
}

func TestConnectorsOfCluster(t *testing.T) {
	e := newEnv(t)
	e.apply("a", func(*v1alpha1.KafkaConnector) {})
	e.apply("b", func(*v1alpha1.KafkaConnector) {})
	e.apply("elsewhere", func(kc *v1alpha1.KafkaConnector) { kc.Spec.ClusterRef.Name = "c2" })
	cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"}}
	reqs := e.r.connectorsOfCluster(e.ctx, cc)
	if len(reqs) != 2 || reqs[0].Name == "elsewhere" || reqs[1].Name == "elsewhere" {
		t.Fatalf("connectorsOfCluster = %v", reqs)
	}
}

func TestConnectorsUsingSecret(t *testing.T) {
	e := newEnv(t)
	e.apply("uses-db", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["password"] = "${secret:db:password}" })
	e.apply("uses-db-and-api", func(kc *v1alpha1.KafkaConnector) {
		kc.Spec.Config["password"] = "${secret:db:password}"
		kc.Spec.Config["key"] = "${secret:api:key}"
	})
	e.apply("uses-nothing", func(*v1alpha1.KafkaConnector) {})
	mapFn := ConnectorsUsingSecret(e.k8s)
	names := func(secret string) []string {
		var out []string
		for _, r := range mapFn(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: "ns"}}) {
			out = append(out, r.Name)
		}
		sort.Strings(out)
		return out
	}
	if got := names("db"); !reflect.DeepEqual(got, []string{"uses-db", "uses-db-and-api"}) {
		t.Fatalf("Secret db maps to %v", got)
	}
	if got := names("api"); !reflect.DeepEqual(got, []string{"uses-db-and-api"}) {
		t.Fatalf("Secret api maps to %v", got)
	}
	if got := names("other"); got != nil {
		t.Fatalf("an unreferenced Secret maps to %v", got)
	}
}

// TestSecretRotationRestartsOnlyItsUsers: status.secretsHash digests the
// referenced values (never holds them); changing a referenced key restarts
// exactly the connectors that reference it, once; an unreferenced key, a
// config edit or a stopped connector restarts nothing.
func TestSecretRotationRestartsOnlyItsUsers(t *testing.T) {
	e := newEnv(t)
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Data: map[string][]byte{"password": []byte("pw-one"), "unused": []byte("x")}}
	if err := e.k8s.Create(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	e.apply("uses-db", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["db.password"] = "${secret:db:password}" })
	e.apply("plain", func(*v1alpha1.KafkaConnector) {})

	// Until the workers' Role lists db, the connector is not created: its
	// tasks would fail to read the Secret.
	if res := e.reconcile("uses-db"); res.RequeueAfter <= 0 {
		t.Fatalf("a connector waiting for its Secret grant must come back: %+v", res)
	}
	if c := e.ready("uses-db"); c == nil || c.Reason != ReasonSecretsNotGranted || !strings.Contains(c.Message, "db") {
		t.Fatalf("Ready = %+v, want %s naming db", c, ReasonSecretsNotGranted)
	}
	if _, err := e.herder.ConnectorConfig(e.ctx, "uses-db"); err == nil {
		t.Fatal("the connector was created before the workers may read its Secret")
	}
	cc := &v1alpha1.ConnectCluster{}
	if err := e.k8s.Get(e.ctx, types.NamespacedName{Namespace: "ns", Name: "c1"}, cc); err != nil {
		t.Fatal(err)
	}
	role, _ := connectcluster.BuildSecretsRole(cc, []string{"db"})
	if err := e.k8s.Create(e.ctx, role); err != nil {
		t.Fatal(err)
	}
	e.reconcile("uses-db")
	e.reconcile("plain")
	if c := e.ready("uses-db"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v once the Role lists db", c)
	}
	h0 := e.get("uses-db").Status.SecretsHash
	if h0 == "" || strings.Contains(h0, "pw-one") || e.get("plain").Status.SecretsHash != "" {
		t.Fatalf("secretsHash %q / %q", h0, e.get("plain").Status.SecretsHash)
	}
	restarts := func(name string) int {
		return e.herder.count("restart " + name + " includeTasks=true onlyFailed=false")
	}
	setSecret := func(key, value string) {
		t.Helper()
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(db), db); err != nil {
			t.Fatal(err)
		}
		db.Data[key] = []byte(value)
		if err := e.k8s.Update(e.ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	pass := func() {
		e.reconcile("uses-db")
		e.reconcile("plain")
	}

	setSecret("unused", "y")
	pass()
	if restarts("uses-db") != 0 || e.get("uses-db").Status.SecretsHash != h0 {
		t.Fatal("an unreferenced key of the Secret restarted the connector")
	}

	setSecret("password", "pw-two")
	pass()
	pass()
	if restarts("uses-db") != 1 || restarts("plain") != 0 {
		t.Fatalf("rotation: uses-db restarted %d times, plain %d; want 1 and 0", restarts("uses-db"), restarts("plain"))
	}
	h1 := e.get("uses-db").Status.SecretsHash
	if h1 == h0 || h1 == "" {
		t.Fatalf("secretsHash did not follow the rotation: %q", h1)
	}

	// A config edit writes the config (the worker restarts the connector on
	// it); a rotation in the same pass adds no restart of its own.
	setSecret("password", "pw-three")
	e.apply("uses-db", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["file"] = "/data/new.jsonl" })
	e.reconcile("uses-db")
	if restarts("uses-db") != 1 || e.get("uses-db").Status.SecretsHash == h1 {
		t.Fatalf("config edit with a rotation: %d restarts, hash %q", restarts("uses-db"), e.get("uses-db").Status.SecretsHash)
	}

	// A stopped connector records the new digest without a restart.
	e.apply("uses-db", func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetStopped })
	e.reconcile("uses-db")
	setSecret("password", "pw-four")
	e.reconcile("uses-db")
	if restarts("uses-db") != 1 {
		t.Fatal("a stopped connector was restarted for a rotation")
	}

	// A deleted Secret is a change too (the worker's tasks would fail on it).
	e.apply("uses-db", func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetRunning })
	e.reconcile("uses-db")
	before := e.get("uses-db").Status.SecretsHash
	if err := e.k8s.Delete(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	e.reconcile("uses-db")
	if restarts("uses-db") != 2 || e.get("uses-db").Status.SecretsHash == before {
		t.Fatalf("deleting the Secret: %d restarts, hash %q", restarts("uses-db"), e.get("uses-db").Status.SecretsHash)
	}
}

// TestRestartAnnotationAtCreationIsRecordedNotActedOn: a connector created
// with a restart annotation already set starts once; the value is recorded
// in status, and later passes do not restart it for that value.
func TestRestartAnnotationAtCreationIsRecordedNotActedOn(t *testing.T) {
	e := newEnv(t)
	e.apply("born-annotated", func(kc *v1alpha1.KafkaConnector) {
		kc.Annotations = map[string]string{AnnotationRestart: "2026-01-01T00:00:00Z", AnnotationRestartTasks: "7"}
	})
	e.reconcile("born-annotated")
	e.reconcile("born-annotated")
	e.reconcile("born-annotated")
	if n := e.herder.count("restart"); n != 0 {
		t.Fatalf("%d restarts for annotations present at creation, want 0", n)
	}
	kc := e.get("born-annotated")
	if kc.Status.LastRestartAnnotation != "2026-01-01T00:00:00Z" || kc.Status.LastRestartTasksAnnotation != "7" {
		t.Fatalf("handled values %q / %q, want the creation's", kc.Status.LastRestartAnnotation, kc.Status.LastRestartTasksAnnotation)
	}
}

// TestAccessRefusals: a Secret the cluster does not list, or a ${file:} or
// ${env:} without the cluster's allow-list, gives Ready=False naming the
// key, and the connector is never created on the workers.
func TestAccessRefusals(t *testing.T) {
	e := newEnv(t)
	for name, c := range map[string]struct{ key, value, reason string }{
		"not-listed": {"connection.password", "${secret:other:password}", v1alpha1.ReasonSecretNotAllowed},
		"sa-token":   {"topics", "${file:/var/run/secrets/kubernetes.io/serviceaccount/token}", v1alpha1.ReasonProviderNotAllowed},
		"env":        {"transforms.x.static.value", "${env:HOME}", v1alpha1.ReasonProviderNotAllowed},
	} {
		e.apply(name, func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config[c.key] = c.value })
		e.reconcile(name)
		r := e.ready(name)
		if r == nil || r.Status != metav1.ConditionFalse || r.Reason != c.reason || !strings.Contains(r.Message, c.key) {
			t.Fatalf("%s: Ready = %+v, want %s naming %s", name, r, c.reason, c.key)
		}
		if _, err := e.herder.ConnectorConfig(e.ctx, name); err == nil {
			t.Fatalf("%s: the connector was created", name)
		}
	}
}

func TestUnmanagedScanSkipsOwnConnectorThroughAStaleCache(t *testing.T) {
	e := newEnv(t)
	e.apply("mine", func(*v1alpha1.KafkaConnector) {})
	e.reconcile("mine")
	// The scan lists the KafkaConnectors from a cache that has not seen the
	// finalizer yet (the view's read then finds "mine" and "by-hand"
	// unmanaged); the API server has it.
	e.r.Client, e.r.APIReader = staleCache{e.k8s}, e.k8s
	stale := *e.get("mine")
	controllerutil.RemoveFinalizer(&stale, Finalizer)
	foreign := v1alpha1.KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns", UID: "other"}}
	got := e.r.withoutOwnInFlight(e.ctx, []string{"by-hand", "mine", "theirs"}, []v1alpha1.KafkaConnector{stale, foreign})
	if !slices.Equal(got, []string{"by-hand", "theirs"}) {
		t.Fatalf("unmanaged = %v, want [by-hand theirs]: a connector its KafkaConnector just created is not someone else's", got)
	}
}
