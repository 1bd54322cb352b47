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

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

// samplesNS is where the Conveyor tests apply config/samples.
const samplesNS = "samples"

// TestConveyor installs Conveyor the way users do (helm, kubectl, kcat against the local
// cluster) and walks through the product in order: each step builds on the previous one,
// so a failed step stops the walk.
func TestConveyor(t *testing.T) {
	ctx := t.Context()
	root, err := localcluster.ModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := localcluster.ToolsDir(ctx, root, "tools", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatalf("kcat is not installed: run hack/install-deps.sh (%v)", err)
	}
	cv, err := localcluster.NewConveyor(cluster, root, filepath.Join(tools, "helm"))
	if err != nil {
		t.Fatal(err)
	}
	w := &walk{cv: cv, root: root, samplesDir: filepath.Join(cluster.Dir, "samples")}
	steps := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"KEDACRDsAndHelmInstall", w.helmInstall},
		{"SamplesRunAndRecordsFlow", w.samples},
		{"ScaledObjectFollowsSinks", w.scaledObject},
		{"TasksLimitedInPrinterColumns", w.tasksLimited},
		{"KcatFillsTopicSinkDrainsIt", w.sinkDrainsKcatTopic},
		{"InvalidResourcesRefused", w.invalidRefused},
		{"ServerSideApplyTwiceNoDrift", w.serverSideApplyNoDrift},
		{"ScaleSpreadsTasksNoRecordLost", w.scale},
		{"MetricsAuthAndRestTokenRotation", w.metricsAndTokenRotation},
		{"PrometheusScrapesWorkersAndAlerts", w.prometheusScrapesAndAlerts},
		{"HelmUpgradeRollsOperator", w.helmUpgrade},
		{"HelmUninstallKeepsCRDs", w.helmUninstall},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.fn) {
			t.Fatalf("step %s failed; later steps depend on it (logs in %s/logs)", s.name, cluster.Dir)
		}
	}
}

type walk struct {
	cv         *localcluster.Conveyor
	root       string
	samplesDir string
}

func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := cluster.RunKubectl(t.Context(), stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kcat runs the real kcat against the local Kafka.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "kcat", append([]string{"-b", cluster.KafkaAddr}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String()
}

func (w *walk) helmInstall(t *testing.T) {
	ctx := t.Context()
	// KEDA's CRDs (not KEDA itself) from the KEDA module, as the envtest suites install them:
	// the operator discovers them at start and derives ScaledObjects.
	kedaDir, err := envkit.KEDACRDDir()
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "apply", "--server-side", "-f", filepath.Join(kedaDir, "keda.sh_scaledobjects.yaml"),
		"-f", filepath.Join(kedaDir, "keda.sh_triggerauthentications.yaml"))
	kubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/scaledobjects.keda.sh", "crd/triggerauthentications.keda.sh")

	out, err := w.cv.HelmInstall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install did not report a deployed release:\n%s", out)
	}
	op, err := w.cv.OperatorPod(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The operator runs as the chart's ServiceAccount, with in-cluster config: RBAC for real.
	if op.Spec.ServiceAccountName != w.cv.Release {
		t.Errorf("operator pod runs as ServiceAccount %q, want the chart's %q", op.Spec.ServiceAccountName, w.cv.Release)
	}
	for _, crd := range []string{"connectclusters.connect.conveyor.dev", "kafkaconnectors.connect.conveyor.dev"} {
		kubectl(t, "", "get", "crd", crd)
	}
	if list := kubectl(t, "", "-n", w.cv.Namespace, "get", "deployment", "-o", "name"); !strings.Contains(list, "deployment.apps/"+w.cv.Release) {
		t.Errorf("no operator Deployment in %s: %s", w.cv.Namespace, list)
	}
}

func (w *walk) samples(t *testing.T) {
	ctx := t.Context()
	if _, err := localcluster.RenderSamples(w.root, w.samplesDir, cluster.KafkaAddr); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "create", "namespace", samplesNS)
	out := kubectl(t, "", "apply", "-n", samplesNS, "-f", w.samplesDir)
	for _, want := range []string{"connectcluster.connect.conveyor.dev/demo created", "kafkaconnector.connect.conveyor.dev/numbers created", "kafkaconnector.connect.conveyor.dev/numbers-to-file created"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply output lacks %q:\n%s", want, out)
		}
	}
	pods, err := w.cv.WaitWorkersReady(ctx, samplesNS, "demo", 0, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kcs, err := w.cv.WaitConnectorsRunning(ctx, samplesNS, 3*time.Minute, "numbers", "numbers-to-file")
	if err != nil {
		t.Fatal(err)
	}
	for _, kc := range kcs {
		for _, task := range kc.Status.Tasks {
			if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return strings.HasPrefix(task.WorkerID, p.Status.PodIP+":") }) {
				t.Errorf("%s task %d runs on worker %q, not one of the worker pods", kc.Name, task.ID, task.WorkerID)
			}
		}
	}

	// The source wrote to Kafka: kcat reads distinct range IDs from topic numbers.
	lines := strings.Split(strings.TrimSpace(kcat(t, "", "-C", "-t", "numbers", "-o", "beginning", "-c", "200", "-e", "-q")), "\n")
	if len(lines) != 200 {
		t.Fatalf("kcat read %d records from numbers, want 200", len(lines))
	}
	seen := map[int64]bool{}
	for _, l := range lines {
		var rec struct {
			ID *int64 `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.ID == nil {
			t.Fatalf("record %q is not a RangeSource record: %v", l, err)
		}
		if *rec.ID < 0 || *rec.ID >= 1_000_000 || seen[*rec.ID] {
			t.Fatalf("record id %d out of range or repeated", *rec.ID)
		}
		seen[*rec.ID] = true
	}

	// The sink drains numbers into its file on a worker: every ID of the range arrives.
	const total = 1_000_000
	waitFor(t, 4*time.Minute, "numbers-to-file to write all the source's records", func() (bool, error) {
		n, err := w.sinkFileIDs(ctx, samplesNS, "demo", "/data/numbers.jsonl", nil)
		return n >= total, fmt.Errorf("%d of %d records in the sink's file (%v)", n, total, err)
	})
	ids := map[int64]bool{}
	if _, err := w.sinkFileIDs(ctx, samplesNS, "demo", "/data/numbers.jsonl", ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != total {
		t.Errorf("the sink wrote %d distinct IDs, want %d", len(ids), total)
	}

	// The REST API of a worker answers on its pod IP with the cluster's bearer token.
	_, cc, err := w.cv.WorkerPods(ctx, samplesNS, "demo")
	if err != nil {
		t.Fatal(err)
	}
	token, err := w.cv.RestToken(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s:%d/connectors?expand=status", pods[0].Status.PodIP, v1alpha1.RestPort)
	for _, tc := range []struct {
		token string
		code  int
	}{{"", http.StatusUnauthorized}, {token, http.StatusOK}} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s with token=%v: HTTP %d, want %d", url, tc.token != "", resp.StatusCode, tc.code)
		}
		if tc.code == http.StatusOK && (body["numbers"] == nil || body["numbers-to-file"] == nil) {
			t.Errorf("GET %s lists %v, want both sample connectors", url, body)
		}
	}
}

// sinkFileIDs counts the records in a FileSink's file on every worker of a cluster (the file
// sits in the emptyDir granted at /data, spec.connectorAccess.fileConnectors) and adds their IDs to ids when it is not nil.
func (w *walk) sinkFileIDs(ctx context.Context, ns, clusterName, path string, ids map[int64]bool) (int, error) {
	pods, _, err := w.cv.WorkerPods(ctx, ns, clusterName)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods {
		f, err := os.Open(filepath.Join(cluster.PodVolumeDir(&p, "files-0"), strings.TrimPrefix(path, "/data/")))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return n, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			n++
			if ids != nil {
				var rec struct {
					ID int64 `json:"id"`
				}
				if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
					f.Close()
					return n, fmt.Errorf("line %q of %s: %w", sc.Text(), path, err)
				}
				ids[rec.ID] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return n, err
		}
	}
	return n, nil
}

var scaledObjectGVR = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

func (w *walk) scaledObject(t *testing.T) {
	ctx := t.Context()
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	var cc v1alpha1.ConnectCluster
	if err := w.cv.Client.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "demo"}, &cc); err != nil {
		t.Fatal(err)
	}
	// Bounds from the design: floor = ceil(effective tasks / maxTasksPerWorker),
	// min = max(minReplicas, floor), max = max(min, min(maxReplicas, effective tasks)).
	var kcs v1alpha1.KafkaConnectorList
	if err := w.cv.Client.List(ctx, &kcs, client.InNamespace(samplesNS)); err != nil {
		t.Fatal(err)
	}
	var tasks int64
	for _, kc := range kcs.Items {
		tasks += int64(kc.Status.EffectiveTasks)
	}
	per := int64(cc.MaxTasksPerWorker())
	floor := (tasks + per - 1) / per
	as := cc.Spec.Autoscaling
	wantMin := max(int64(*as.MinReplicas), floor)
	wantMax := max(wantMin, min(int64(*as.MaxReplicas), tasks))

	var so *unstructured.Unstructured
	waitFor(t, 90*time.Second, "the derived ScaledObject with its trigger and bounds", func() (bool, error) {
		list, err := dc.Resource(scaledObjectGVR).Namespace(samplesNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(list.Items) != 1 {
			return false, fmt.Errorf("%d ScaledObjects", len(list.Items))
		}
		so = &list.Items[0]
		minR, _, _ := unstructured.NestedInt64(so.Object, "spec", "minReplicaCount")
		maxR, _, _ := unstructured.NestedInt64(so.Object, "spec", "maxReplicaCount")
		return minR == wantMin && maxR == wantMax, fmt.Errorf("bounds %d..%d, want %d..%d (tasks %d)", minR, maxR, wantMin, wantMax, tasks)
	})
	target, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "name")
	if dep := "demo-connect"; target != dep {
		t.Errorf("ScaledObject targets %q, want the worker Deployment %s", target, dep)
	}
	triggers, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	if len(triggers) != 1 {
		t.Fatalf("ScaledObject has %d triggers, want one for the one running sink: %v", len(triggers), triggers)
	}
	tr := triggers[0].(map[string]any)
	md, _ := tr["metadata"].(map[string]any)
	if tr["type"] != "kafka" || md["consumerGroup"] != "connect-numbers-to-file" || md["topic"] != "numbers" ||
		md["bootstrapServers"] != cluster.KafkaAddr || md["lagThreshold"] != strconv.Itoa(int(*as.LagThreshold)) {
		t.Errorf("trigger %v, want kafka on group connect-numbers-to-file, topic numbers, bootstrap %s, lagThreshold %d", tr, cluster.KafkaAddr, *as.LagThreshold)
	}
	// kubectl sees it too, by the cluster's name.
	kubectl(t, "", "get", "-n", samplesNS, "scaledobject", so.GetName())
}

func (w *walk) tasksLimited(t *testing.T) {
	// The sample sink asks for 6 tasks on topic numbers, which has one partition.
	out := kubectl(t, "", "get", "kafkaconnector", "-n", samplesNS, "numbers-to-file", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get kafkaconnector -o wide:\n%s", out)
	}
	cols := map[string]string{}
	header := columns(lines[0])
	for i, v := range strings.Fields(lines[1]) {
		if i < len(header) {
			cols[header[i]] = v
		}
	}
	want := map[string]string{"CLASS": "FileSink", "STATE": "RUNNING", "TASKS MAX": "6", "TASKS": "1", "LIMIT": "TopicPartitions"}
	for k, v := range want {
		if cols[k] != v {
			t.Errorf("column %s = %q, want %q\n%s", k, cols[k], v, out)
		}
	}
	cond := kubectl(t, "", "get", "kafkaconnector", "-n", samplesNS, "numbers-to-file",
		"-o", `jsonpath={.status.conditions[?(@.type=="TasksLimited")].status} {.status.conditions[?(@.type=="TasksLimited")].reason}`)
	if !strings.HasPrefix(cond, "True ") {
		t.Errorf("TasksLimited condition: %q, want True with a reason", cond)
	}
	t.Logf("kubectl get kafkaconnector -o wide:\n%s", out)
}

// columns splits a kubectl table header into column names ("TASKS MAX" is one name: names
// are separated by two or more spaces).
func columns(header string) []string {
	var out []string
	for _, f := range strings.Split(header, "  ") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (w *walk) sinkDrainsKcatTopic(t *testing.T) {
	ctx := t.Context()
	const n = 500
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"id\":%d}\n", 5_000_000+i)
	}
	kcat(t, in.String(), "-P", "-t", "e2e-in")
	kubectl(t, `apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: e2e-drain
spec:
  clusterRef:
    name: demo
  class: FileSink
  tasksMax: 1
  config:
    topics: e2e-in
    file: /data/e2e-drain.jsonl
`, "apply", "-n", samplesNS, "-f", "-")
	if _, err := w.cv.WaitConnectorsRunning(ctx, samplesNS, 2*time.Minute, "e2e-drain"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "e2e-drain to write the records kcat produced", func() (bool, error) {
		got, err := w.sinkFileIDs(ctx, samplesNS, "demo", "/data/e2e-drain.jsonl", nil)
		return got >= n, fmt.Errorf("%d of %d records (%v)", got, n, err)
	})
	ids := map[int64]bool{}
	got, err := w.sinkFileIDs(ctx, samplesNS, "demo", "/data/e2e-drain.jsonl", ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !ids[int64(5_000_000+i)] {
			t.Fatalf("record %d never reached the sink's file (%d lines)", 5_000_000+i, got)
		}
	}
	if got != n {
		t.Errorf("the sink wrote %d lines for %d records", got, n)
	}
}

func (w *walk) invalidRefused(t *testing.T) {
	cases := []struct {
		name, manifest string
		want           []string
	}{
		{"tasksMax 0", `apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: bad-tasks
spec:
  clusterRef: {name: demo}
  class: FileSink
  tasksMax: 0
  config: {topics: x, file: /tmp/x}
`, []string{"spec.tasksMax", "greater than or equal to 1"}},
		{"operator-owned worker key", `apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: bad-config
spec:
  kafka: {bootstrapServers: "127.0.0.1:9092"}
  config:
    bootstrap.servers: "127.0.0.1:9092"
`, []string{"spec.config", "config may not set bootstrap.servers", "spec.kafka"}},
		{"bootstrapServers with a space", `apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: bad-servers
spec:
  kafka: {bootstrapServers: "a:1, b:2"}
`, []string{"spec.kafka.bootstrapServers", "host:port"}},
	}
	for _, tc := range cases {
		out, err := cluster.RunKubectl(t.Context(), tc.manifest, "apply", "-n", samplesNS, "-f", "-")
		if err == nil {
			t.Errorf("%s: kubectl apply accepted it:\n%s", tc.name, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the refusal does not say %q:\n%s", tc.name, w, out)
			}
		}
	}
}

// serverSideApplyNoDrift applies the samples with server-side apply twice: the second apply
// changes nothing (same generation, kubectl's managed fields untouched), and no field
// manager but kubectl's owns anything under spec (the operator writes status only).
func (w *walk) serverSideApplyNoDrift(t *testing.T) {
	ctx := t.Context()
	// The first server-side apply takes over the fields of the earlier client-side apply.
	kubectl(t, "", "apply", "--server-side", "-n", samplesNS, "-f", w.samplesDir)
	type snap struct {
		generation int64
		spec       string
		applied    string // kubectl's Apply entry (time and fields)
	}
	take := func() map[string]snap {
		out := map[string]snap{}
		var ccs v1alpha1.ConnectClusterList
		var kcs v1alpha1.KafkaConnectorList
		if err := w.cv.Client.List(ctx, &ccs, client.InNamespace(samplesNS)); err != nil {
			t.Fatal(err)
		}
		if err := w.cv.Client.List(ctx, &kcs, client.InNamespace(samplesNS)); err != nil {
			t.Fatal(err)
		}
		objs := []client.Object{}
		specs := map[string]any{}
		for i := range ccs.Items {
			objs = append(objs, &ccs.Items[i])
			specs["ConnectCluster/"+ccs.Items[i].Name] = ccs.Items[i].Spec
		}
		for i := range kcs.Items {
			objs = append(objs, &kcs.Items[i])
			specs["KafkaConnector/"+kcs.Items[i].Name] = kcs.Items[i].Spec
		}
		for _, o := range objs {
			key := "ConnectCluster/" + o.GetName()
			if _, ok := o.(*v1alpha1.KafkaConnector); ok {
				key = "KafkaConnector/" + o.GetName()
			}
			spec, _ := json.Marshal(specs[key])
			s := snap{generation: o.GetGeneration(), spec: string(spec)}
			for _, mf := range o.GetManagedFields() {
				fields := ""
				if mf.FieldsV1 != nil {
					fields = string(mf.FieldsV1.Raw)
				}
				if mf.Manager == "kubectl" && mf.Operation == metav1.ManagedFieldsOperationApply {
					s.applied = mf.Time.String() + " " + fields
				}
				if mf.Subresource == "" && !strings.HasPrefix(mf.Manager, "kubectl") && strings.Contains(fields, `"f:spec"`) {
					t.Errorf("%s: field manager %q (%s) owns fields under spec: %s", key, mf.Manager, mf.Operation, fields)
				}
			}
			out[key] = s
		}
		return out
	}
	before := take()
	// Wait a clock second: managedFields times have second precision.
	time.Sleep(1100 * time.Millisecond)
	kubectl(t, "", "apply", "--server-side", "-n", samplesNS, "-f", w.samplesDir)
	after := take()
	for _, key := range []string{"ConnectCluster/demo", "KafkaConnector/numbers", "KafkaConnector/numbers-to-file"} {
		b, a := before[key], after[key]
		if b.applied == "" {
			t.Errorf("%s: no server-side apply entry of kubectl in managedFields", key)
			continue
		}
		if a != b {
			t.Errorf("%s changed on a second identical apply:\nbefore %+v\nafter  %+v", key, b, a)
		}
	}
}

// scaleManifest is a cluster without autoscaling, a rate-limited source that runs for about
// 60 seconds on 8 tasks, and a sink on its topic (9 tasks: maxTasksPerWorker 8 keeps the
// capacity floor at 2 workers).
func scaleManifest(kafka string) string {
	return fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: scale
spec:
  replicas: 2
  kafka:
    bootstrapServers: %s
  storage:
    replicationFactor: 1
    offsetPartitions: 3
    statusPartitions: 1
  config:
    key.converter: org.apache.kafka.connect.json.JsonConverter
    value.converter: org.apache.kafka.connect.json.JsonConverter
    value.converter.schemas.enable: "false"
    offset.flush.interval.ms: "1000"
  maxTasksPerWorker: 8
  connectorAccess:
    fileConnectors: [{path: /data}]
  rebalance:
    lostWorkerDelay: 5s
  networkPolicy:
    metricsNamespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: %s}
---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: scale-src
spec:
  clusterRef: {name: scale}
  class: RangeSource
  tasksMax: 8
  config:
    topic: scale-numbers
    count: "%d"
    rate: "%d"
    record.size: "16"
    batch.size: "200"
---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: scale-sink
spec:
  clusterRef: {name: scale}
  class: FileSink
  tasksMax: 1
  config:
    topics: scale-numbers
    file: /data/scale.jsonl
`, kafka, monitoringNS, scaleRecords, scaleRate)
}

const (
	scaleRecords = 180_000
	scaleRate    = 3000 // records per second: the source runs ~60s
)

func (w *walk) scale(t *testing.T) {
	ctx := t.Context()
	kubectl(t, scaleManifest(cluster.KafkaAddr), "apply", "-n", samplesNS, "-f", "-")
	if _, err := w.cv.WaitWorkersReady(ctx, samplesNS, "scale", 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := w.cv.WaitConnectorsRunning(ctx, samplesNS, 2*time.Minute, "scale-src", "scale-sink"); err != nil {
		t.Fatal(err)
	}

	// kubectl scale goes through the ConnectCluster's scale subresource.
	kubectl(t, "", "scale", "-n", samplesNS, "connectcluster/scale", "--replicas=4")
	pods, err := w.cv.WaitWorkersReady(ctx, samplesNS, "scale", 4, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The 9 tasks (8 of the source, 1 of the sink) spread over the 4 workers, balanced to
	// within one task, as a worker's REST API reports them (the operator mirrors it into
	// status at its next resync).
	_, cc, err := w.cv.WorkerPods(ctx, samplesNS, "scale")
	if err != nil {
		t.Fatal(err)
	}
	token, err := w.cv.RestToken(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	var srcWorkers []string
	waitFor(t, 90*time.Second, "the cluster's tasks to spread over the 4 workers", func() (bool, error) {
		per := map[string]int{}
		n := 0
		srcWorkers = srcWorkers[:0]
		for _, name := range []string{"scale-sink", "scale-src"} {
			var st struct {
				Tasks []struct {
					State    string `json:"state"`
					WorkerID string `json:"worker_id"`
				} `json:"tasks"`
			}
			if err := cluster.RestGet(ctx, pods[0].Status.PodIP, token, "/connectors/"+name+"/status", &st); err != nil {
				return false, err
			}
			for _, task := range st.Tasks {
				if task.State == string(v1alpha1.ConnectorStateRunning) {
					per[task.WorkerID]++
					n++
					if name == "scale-src" {
						srcWorkers = append(srcWorkers, task.WorkerID)
					}
				}
			}
		}
		lo, hi := n, 0
		for _, p := range pods {
			c := per[fmt.Sprintf("%s:%d", p.Status.PodIP, v1alpha1.RestPort)]
			lo, hi = min(lo, c), max(hi, c)
		}
		return n == 9 && len(per) == 4 && hi-lo <= 1, fmt.Errorf("%d running tasks, per worker %v", n, per)
	})

	// Delete a worker that runs source tasks while the source still writes: its tasks
	// resume on the others from their committed offsets, and no ID is lost.
	victim := pods[0]
	for _, p := range pods {
		if slices.Contains(srcWorkers, fmt.Sprintf("%s:%d", p.Status.PodIP, v1alpha1.RestPort)) {
			victim = p
		}
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	// (kcat -e would not return while the source writes: it reads until the end stays put.)
	ends, err := adm.ListEndOffsets(ctx, "scale-numbers")
	if err != nil {
		t.Fatal(err)
	}
	written := int64(0)
	ends.Each(func(o kadm.ListedOffset) { written += o.Offset })
	if written == 0 || written >= scaleRecords {
		t.Fatalf("%d of %d records written when the worker is deleted: want records flowing (tune scaleRate)", written, scaleRecords)
	}
	t.Logf("deleting worker pod %s (runs source tasks) after %d of %d records", victim.Name, written, scaleRecords)
	kubectl(t, "", "delete", "pod", "-n", samplesNS, victim.Name, "--wait=false")
	if _, err := w.cv.WaitWorkersReady(ctx, samplesNS, "scale", 4, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "every ID of scale-src in topic scale-numbers", func() (bool, error) {
		ids := topicIDs(t, "scale-numbers")
		return len(ids) == scaleRecords, fmt.Errorf("%d of %d distinct IDs", len(ids), scaleRecords)
	})
	for id := range topicIDs(t, "scale-numbers") {
		if id < 0 || id >= scaleRecords {
			t.Fatalf("unexpected ID %d in scale-numbers", id)
		}
	}
	// The sink consumed all of it: its group committed the end of the topic.
	waitFor(t, 2*time.Minute, "scale-sink's group to commit the end of scale-numbers", func() (bool, error) {
		lags, err := adm.Lag(ctx, "connect-scale-sink")
		if err != nil {
			return false, err
		}
		l := lags["connect-scale-sink"]
		if l.Error() != nil {
			return false, l.Error()
		}
		var committed, end int64
		for _, pl := range l.Lag["scale-numbers"] {
			committed += pl.Commit.At
			end += pl.End.Offset
		}
		return end >= scaleRecords && committed == end && l.Lag.Total() == 0, fmt.Errorf("committed %d of %d", committed, end)
	})
}

// topicIDs reads a topic to its end with kcat and returns the distinct record IDs.
func topicIDs(t *testing.T, topic string) map[int64]bool {
	t.Helper()
	ids := map[int64]bool{}
	out := kcat(t, "", "-C", "-t", topic, "-o", "beginning", "-e", "-q")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var rec struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("record %q of %s: %v", l, topic, err)
		}
		ids[rec.ID] = true
	}
	return ids
}

func (w *walk) helmUpgrade(t *testing.T) {
	ctx := t.Context()
	before, err := w.cv.OperatorPod(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.cv.HelmInstall(ctx, "--reuse-values", "--set", "logLevel=debug")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "REVISION: 2") {
		t.Errorf("helm upgrade did not make revision 2:\n%s", out)
	}
	after, err := w.cv.OperatorPod(ctx, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if after.UID == before.UID {
		t.Fatalf("helm upgrade with a changed value kept the operator pod %s", before.Name)
	}
	if !slices.Contains(after.Spec.Containers[0].Args, "--zap-log-level=debug") {
		t.Errorf("the new operator pod runs %v, want --zap-log-level=debug", after.Spec.Containers[0].Args)
	}
	if _, err := cluster.Client.CoreV1().Pods(before.Namespace).Get(ctx, before.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the old operator pod %s is still there (%v)", before.Name, err)
	}
	// The new operator takes over: the connectors stay RUNNING.
	if _, err := w.cv.WaitConnectorsRunning(ctx, samplesNS, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func (w *walk) helmUninstall(t *testing.T) {
	ctx := t.Context()
	out, err := w.cv.RunHelm(ctx, "uninstall", w.cv.Release, "--wait", "--timeout", "2m")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out))
	err = testkit.Until(ctx, time.Minute, "the operator pod to go", func(ctx context.Context) (bool, error) {
		list, err := cluster.Client.CoreV1().Pods(w.cv.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + w.cv.Release})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, fmt.Errorf("%d operator pods", len(list.Items))
	})
	if err != nil {
		t.Fatal(err)
	}
	// Helm never deletes CRDs from a chart's crds/ folder: the resources, and the workers
	// they run, survive an uninstall.
	for _, crd := range []string{"connectclusters.connect.conveyor.dev", "kafkaconnectors.connect.conveyor.dev"} {
		kubectl(t, "", "get", "crd", crd)
	}
	list := kubectl(t, "", "get", "connectclusters,kafkaconnectors", "-n", samplesNS, "-o", "name")
	for _, want := range []string{"connectcluster.connect.conveyor.dev/demo", "kafkaconnector.connect.conveyor.dev/numbers"} {
		if !strings.Contains(list, want) {
			t.Errorf("after helm uninstall, %s is gone:\n%s", want, list)
		}
	}
	if _, err := w.cv.WaitWorkersReady(ctx, samplesNS, "demo", 0, 30*time.Second); err != nil {
		t.Errorf("the workers did not survive the operator's uninstall: %v", err)
	}
}
