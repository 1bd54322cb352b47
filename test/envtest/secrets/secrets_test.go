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
package secrets

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/controllers/kafkaconnector"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const (
	nsA, clusterA = "team-a", "alpha"
	nsB, clusterB = "team-b", "beta"
	restToken     = "secrets-envtest-rest-token"
	sinkClass     = "dev.conveyor.connect.file.FileSinkConnector"
	settle        = 20 * time.Second
)

// clusterObject is the ConnectCluster of a test worker (autoscaling off).
func clusterObject(ns, name string) *v1alpha1.ConnectCluster {
	return &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka:   v1alpha1.KafkaConnection{BootstrapServers: bootstrap},
			GroupID: ptr(groupOf(ns, name)),
			Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1),
				OffsetPartitions: ptr(storagePartitions), StatusPartitions: ptr(storagePartitions)},
			RestAPI: v1alpha1.RestAPISpec{Authentication: v1alpha1.RestAuthentication{
				TokenSecret: &v1alpha1.SecretKeyRef{Name: name + "-rest", Key: "token"}}},
			ConnectorAccess: connectorAccess(ns),
		},
	}
}

var (
	clustersMu sync.Mutex
	clusters   = map[string]bool{}
)

// ensureCluster creates (once) the namespace, the REST token Secret and the
// ConnectCluster, waits for the workers' ServiceAccount the operator
// creates, and hands the worker a token of that account (what the kubelet
// mounts into a worker pod).
func ensureCluster(t *testing.T, ns, name string) {
	t.Helper()
	clustersMu.Lock()
	defer clustersMu.Unlock()
	if clusters[ns+"/"+name] {
		return
	}
	ctx := context.Background()
	cc := clusterObject(ns, name)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-rest", Namespace: ns}, Data: map[string][]byte{"token": []byte(restToken)}},
		cc,
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	sa := &corev1.ServiceAccount{}
	testkit.Eventually(t, settle, "the workers' ServiceAccount", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: connectcluster.ServiceAccountName(cc)}, sa)
		return err == nil, fmt.Sprint(err)
	})
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3600)}}
	if err := k8s.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token of ServiceAccount %s/%s: %v", ns, sa.Name, err)
	}
	if err := os.WriteFile(workers[ns+"/"+name].tokenFile, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	clusters[ns+"/"+name] = true
}

func ptr[T any](v T) *T { return &v }

func putSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
	s.Data = map[string][]byte{}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	switch {
	case apierrors.IsNotFound(err):
		err = k8s.Create(ctx, s)
	case err == nil:
		err = k8s.Update(ctx, s)
	}
	if err != nil {
		t.Fatalf("writing Secret %s/%s: %v", ns, name, err)
	}
}

func kafkaClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	resp, err := kadm.NewClient(kafkaClient(t)).CreateTopic(context.Background(), partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
}

// produce writes string values in the workers' default value format (JSON
// with the schema envelope).
func produce(t *testing.T, topic string, values ...string) {
	t.Helper()
	cl := kafkaClient(t)
	for _, v := range values {
		b, err := json.Marshal(map[string]any{"schema": map[string]any{"type": "string"}, "payload": v})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: b}).FirstErr(); err != nil {
			t.Fatalf("producing to %s: %v", topic, err)
		}
	}
}

// sink creates a FileSink KafkaConnector on the cluster of ns.
func sink(t *testing.T, ns, cluster, name, topic string, config map[string]string) {
	t.Helper()
	cfg := map[string]string{"topics": topic, "file": filepath.Join(outDir, ns+"-"+name+".out"), "partition.check.interval.ms": "500"}
	for k, v := range config {
		cfg[k] = v
	}
	kc := &v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.KafkaConnectorSpec{
			ClusterRef: v1alpha1.ClusterReference{Name: cluster},
			Class:      sinkClass,
			TasksMax:   ptr[int32](1),
			Config:     cfg,
		},
	}
	if err := k8s.Create(context.Background(), kc); err != nil {
		t.Fatalf("creating KafkaConnector %s/%s: %v", ns, name, err)
	}
	// Gone when the test ends, so its Secret references leave the workers'
	// Role and a next run (-count) can use the name again.
	t.Cleanup(func() { deleteKC(t, ns, name) })
}

// deleteKC deletes a KafkaConnector (if still there) and waits until the
// operator removed its connector and finalizer.
func deleteKC(t *testing.T, ns, name string) {
	t.Helper()
	kc := &v1alpha1.KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := k8s.Delete(context.Background(), kc); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting KafkaConnector %s/%s: %v", ns, name, err)
		return
	}
	testkit.Eventually(t, settle, "KafkaConnector "+ns+"/"+name+" gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(kc), kc)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func getKC(t *testing.T, ns, name string) *v1alpha1.KafkaConnector {
	t.Helper()
	kc := &v1alpha1.KafkaConnector{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, kc); err != nil {
		t.Fatalf("reading KafkaConnector %s/%s: %v", ns, name, err)
	}
	return kc
}

func patchKC(t *testing.T, ns, name string, mutate func(kc *v1alpha1.KafkaConnector)) {
	t.Helper()
	kc := getKC(t, ns, name)
	orig := kc.DeepCopy()
	mutate(kc)
	if err := k8s.Patch(context.Background(), kc, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patching KafkaConnector %s/%s: %v", ns, name, err)
	}
}

func describe(kc *v1alpha1.KafkaConnector) string {
	var conds []string
	for _, c := range kc.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("state=%s tasks=%+v secretsHash=%q conditions=%v", kc.Status.State, kc.Status.Tasks, kc.Status.SecretsHash, conds)
}

func waitReady(t *testing.T, ns, name string) time.Duration {
	t.Helper()
	return testkit.Eventually(t, settle, ns+"/"+name+" Ready=True", func() (bool, string) {
		kc := getKC(t, ns, name)
		c := meta.FindStatusCondition(kc.Status.Conditions, v1alpha1.KafkaConnectorReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == kc.Generation, describe(kc)
	})
}

// roleNames returns the resourceNames of the workers' secrets Role, and
// whether the Role and its RoleBinding (to the workers' ServiceAccount)
// exist; it fails on a Role that allows anything else.
func roleNames(t *testing.T, ns, cluster string) ([]string, bool) {
	t.Helper()
	ctx := context.Background()
	cc := clusterObject(ns, cluster)
	key := client.ObjectKey{Namespace: ns, Name: clusterkit.SecretsRoleName(cc)}
	role, binding := &rbacv1.Role{}, &rbacv1.RoleBinding{}
	rerr, berr := k8s.Get(ctx, key, role), k8s.Get(ctx, key, binding)
	if apierrors.IsNotFound(rerr) && apierrors.IsNotFound(berr) {
		return nil, false
	}
	if rerr != nil || berr != nil {
		return nil, false // half there: the caller waits
	}
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Verbs, []string{"get"}) || !slices.Equal(role.Rules[0].Resources, []string{"secrets"}) ||
		len(role.Rules[0].ResourceNames) == 0 {
		t.Fatalf("Role %s allows more than get on named Secrets: %+v", key, role.Rules)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Name != connectcluster.ServiceAccountName(cc) || binding.RoleRef.Name != role.Name {
		t.Fatalf("RoleBinding %s binds %+v to %+v", key, binding.Subjects, binding.RoleRef)
	}
	owner := metav1.GetControllerOf(role)
	if owner == nil || owner.Kind != "ConnectCluster" || owner.Name != cluster {
		t.Fatalf("Role %s is not owned by ConnectCluster %s: %+v", key, cluster, role.OwnerReferences)
	}
	return role.Rules[0].ResourceNames, true
}

func waitRoleNames(t *testing.T, ns, cluster string, want ...string) time.Duration {
	t.Helper()
	return testkit.Eventually(t, settle, fmt.Sprintf("the workers' Role of %s/%s lists exactly %v", ns, cluster, want), func() (bool, string) {
		names, ok := roleNames(t, ns, cluster)
		if len(want) == 0 {
			return !ok, fmt.Sprintf("Role present with %v", names)
		}
		return ok && slices.Equal(names, want), fmt.Sprintf("present=%v names=%v", ok, names)
	})
}

// workerReads reads key of a Secret as the cluster's workers do: with
// their ServiceAccount token, through their own ${secret:...} provider.
func workerReads(ns, cluster, secret, key string) (string, error) {
	vals, err := workers[ns+"/"+cluster].secrets.Get(context.Background(), secret, []string{key})
	if err != nil {
		return "", err
	}
	return vals[key], nil
}

func expectForbidden(t *testing.T, ns, cluster, secret string) {
	t.Helper()
	// RBAC changes reach the authorizer's cache within moments; wait.
	testkit.Eventually(t, settle, fmt.Sprintf("the workers of %s/%s forbidden to read Secret %s", ns, cluster, secret), func() (bool, string) {
		_, err := workerReads(ns, cluster, secret, "key")
		return err != nil && strings.Contains(err.Error(), "forbidden (403)"), fmt.Sprint(err)
	})
}

// TestRoleListsExactlyTheReferencedSecrets: with no connector referencing
// a Secret the workers may read none; a reference grants exactly that
// Secret; editing the reference moves the grant; deleting the connector
// takes the Role and its binding away. The operator runs with the
// generated ClusterRole only, so RBAC's escalation check applies.
func TestRoleListsExactlyTheReferencedSecrets(t *testing.T) {
	ensureCluster(t, nsB, clusterB)
	for _, s := range []string{"b-creds", "b-creds2", "b-other"} {
		putSecret(t, nsB, s, map[string]string{"key": "value-of-" + s})
	}
	bIn := testkit.Unique(t, "b-in") // one topic per run (-count)
	createTopic(t, bIn, 1)
	// The cluster reconciled at least once (its ServiceAccount exists) and
	// no connector references a Secret: no Role, no access.
	waitRoleNames(t, nsB, clusterB)
	expectForbidden(t, nsB, clusterB, "b-creds")

	start := time.Now()
	sink(t, nsB, clusterB, "b-ref", bIn, map[string]string{"api.key": "${secret:b-creds:key}"})
	took := waitRoleNames(t, nsB, clusterB, "b-creds")
	t.Logf("Role lists [b-creds] %s after the connector was created", took.Round(time.Millisecond))
	testkit.Eventually(t, settle, "the workers read b-creds", func() (bool, string) {
		v, err := workerReads(nsB, clusterB, "b-creds", "key")
		return err == nil && v == "value-of-b-creds", fmt.Sprint(err)
	})
	expectForbidden(t, nsB, clusterB, "b-other")
	waitReady(t, nsB, "b-ref")

	patchKC(t, nsB, "b-ref", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["api.key"] = "${secret:b-creds2:key}" })
	took = waitRoleNames(t, nsB, clusterB, "b-creds2")
	t.Logf("editing the reference moved the grant to [b-creds2] in %s", took.Round(time.Millisecond))
	expectForbidden(t, nsB, clusterB, "b-creds")

	if err := k8s.Delete(context.Background(), getKC(t, nsB, "b-ref")); err != nil {
		t.Fatal(err)
	}
	took = waitRoleNames(t, nsB, clusterB)
	t.Logf("deleting the only referencing connector removed the Role and its binding in %s (%s since the start)",
		took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	expectForbidden(t, nsB, clusterB, "b-creds2")
}

// waitFileLines waits until the FileSink output file holds n lines.
func waitFileLines(t *testing.T, path string, n int) {
	t.Helper()
	testkit.Eventually(t, settle, fmt.Sprintf("%d line(s) in %s", n, filepath.Base(path)), func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		lines := strings.Count(string(b), "\n")
		return lines >= n, fmt.Sprintf("%d lines", lines)
	})
}

// TestSecretValueNeverLeaks: a connector whose config references
// ${secret:db:password} runs with the value (its output file is named after
// it), and the value appears nowhere else: not in the cluster's internal
// topics, the workers' REST answers, the KafkaConnector, Events, or the
// operator's and workers' logs.
func TestSecretValueNeverLeaks(t *testing.T) {
	ensureCluster(t, nsA, clusterA)
	value := fmt.Sprintf("pw-%d-Zq7vXk29", time.Now().UnixNano())
	putSecret(t, nsA, "db", map[string]string{"password": value, "user": "app"})
	putSecret(t, nsA, "unrelated", map[string]string{"password": "not-for-workers"})
	leakIn := testkit.Unique(t, "leak-in") // one topic per run (-count)
	createTopic(t, leakIn, 1)
	placeholder := "${secret:db:password}"
	sink(t, nsA, clusterA, "leak-sink", leakIn, map[string]string{
		"file":        filepath.Join(outDir, "leak-"+placeholder+".out"),
		"db.password": placeholder,
	})
	waitRoleNames(t, nsA, clusterA, "db")
	waitReady(t, nsA, "leak-sink")
	produce(t, leakIn, "one", "two")
	// The task resolved the placeholder: it writes to the file named after
	// the value.
	waitFileLines(t, filepath.Join(outDir, "leak-"+value+".out"), 2)
	expectForbidden(t, nsA, clusterA, "unrelated")
	if kc := getKC(t, nsA, "leak-sink"); kc.Status.SecretsHash == "" {
		t.Fatalf("status.secretsHash is empty: %s", describe(kc))
	}
	assertNoLeak(t, nsA, clusterA, "leak-sink", leakIn, value, placeholder)
}

// assertNoLeak searches every output for value, and checks that each one
// searched really covers the connector (so the search cannot pass on an
// empty or wrong source).
func assertNoLeak(t *testing.T, ns, cluster, connector, topic, value, placeholder string) {
	t.Helper()
	ctx := context.Background()
	// The value as is, and as the API server's JSON carries Secret data.
	forms := []string{value, base64.StdEncoding.EncodeToString([]byte(value))}
	check := func(what, content, mustHold string) {
		t.Helper()
		for _, f := range forms {
			if i := strings.Index(content, f); i >= 0 {
				t.Errorf("the Secret value appears in %s: ...%s...", what, content[max(0, i-200):min(len(content), i+len(f)+50)])
			}
		}
		if mustHold != "" && !strings.Contains(content, mustHold) {
			t.Errorf("%s does not mention %q: the search does not cover the connector (%d bytes)", what, mustHold, len(content))
		}
	}

	// Internal topics: every record of the config, offset and status topics.
	cc := clusterObject(ns, cluster)
	for _, internal := range []string{cc.ConfigTopic(), cc.StatusTopic(), cc.OffsetTopic()} {
		content, n := readTopic(t, internal)
		mustHold := ""
		switch internal {
		case cc.ConfigTopic():
			mustHold = placeholder
		case cc.StatusTopic():
			mustHold = connector
		}
		check(fmt.Sprintf("topic %s (%d records)", internal, n), content, mustHold)
	}

	// The workers' REST answers.
	w := workers[ns+"/"+cluster]
	base := "/connectors/" + connector
	for _, p := range []struct{ path, mustHold string }{
		{"/connectors?expand=info&expand=status", placeholder},
		{base, placeholder},
		{base + "/config", placeholder},
		{base + "/status", "RUNNING"},
		{base + "/tasks", placeholder},
		{base + "/offsets", "offsets"},
		{base + "/tasks/0/status", "RUNNING"},
		{base + "/topics", topic},
		{base + "/limits", "tasks_max"},
	} {
		code, body := restGet(t, w.url+p.path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p.path, code, body)
		}
		check("GET "+p.path, body, p.mustHold)
	}

	// The KafkaConnector as stored (spec and status).
	kc := getKC(t, ns, connector)
	b, err := json.Marshal(kc)
	if err != nil {
		t.Fatal(err)
	}
	check("the KafkaConnector", string(b), kc.Status.SecretsHash)

	// Events, in both APIs.
	var evs eventsv1.EventList
	var cevs corev1.EventList
	if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.List(ctx, &cevs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(evs)
	b2, _ := json.Marshal(cevs)
	check(fmt.Sprintf("Events (%d)", len(evs.Items)), string(b1)+string(b2), "created connector "+connector)

	// Logs, at the most verbose levels.
	check("the operator's log", operatorLog.String(), connector)
	check("the workers' log", workerLog.String(), connector)
}

// readTopic returns every record (key, value, headers) of a topic, read
// to its end, and the record count.
func readTopic(t *testing.T, topic string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(kafkaClient(t)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	var sb strings.Builder
	n := 0
	if len(want) == 0 {
		return "", 0
	}
	cl := kafkaClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading topic %s: %v (still missing %v)", topic, err, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			sb.Write(r.Key)
			sb.WriteByte('\n')
			sb.Write(r.Value)
			sb.WriteByte('\n')
			for _, h := range r.Headers {
				sb.WriteString(h.Key + "=" + string(h.Value) + "\n")
			}
			if end, ok := want[r.Partition]; ok && r.Offset >= end-1 {
				delete(want, r.Partition)
			}
		})
	}
	return sb.String(), n
}

func restGet(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+restToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// statusReads counts the operator's reads of a connector's runtime status:
// one per reconcile pass that reached the workers.
// statusReads counts the operator's reads of a connector's runtime status:
// its own GET .../status and the whole-cluster reads (GET
// /connectors?expand=...) that a resync pass uses instead.
func statusReads(name string) int {
	return calls.get("GET /connectors/"+name+"/status") + calls.get("GET /connectors?expand=status&expand=info&expand=limits&expand=topics")
}

// TestRotationRestartsOnlyItsUsers: two connectors, one references Secret
// rot, the other none. Changing the referenced value restarts exactly the
// first (its task then writes to the file named after the new value); the
// other is reconciled again and never restarted.
func TestRotationRestartsOnlyItsUsers(t *testing.T) {
	ensureCluster(t, nsA, clusterA)
	v1, v2 := fmt.Sprintf("rot1-%d", time.Now().UnixNano()), fmt.Sprintf("rot2-%d", time.Now().UnixNano())
	putSecret(t, nsA, "rot", map[string]string{"password": v1})
	rotIn := testkit.Unique(t, "rot-in") // one topic per run (-count)
	createTopic(t, rotIn, 1)
	plainIn := testkit.Unique(t, "plain-in") // one topic per run (-count)
	createTopic(t, plainIn, 1)
	sink(t, nsA, clusterA, "rot-sink", rotIn, map[string]string{"file": filepath.Join(outDir, "rot-${secret:rot:password}.out")})
	sink(t, nsA, clusterA, "plain-sink", plainIn, nil)
	waitReady(t, nsA, "rot-sink")
	waitReady(t, nsA, "plain-sink")
	produce(t, rotIn, "before")
	waitFileLines(t, filepath.Join(outDir, "rot-"+v1+".out"), 1)
	h0 := getKC(t, nsA, "rot-sink").Status.SecretsHash
	if h0 == "" {
		t.Fatal("status.secretsHash is empty for a connector that references a Secret")
	}
	rot0, plain0 := restarts("rot-sink"), restarts("plain-sink")
	rotAll0 := calls.get("POST /connectors/rot-sink/restart?includeTasks=true&onlyFailed=false")

	start := time.Now()
	putSecret(t, nsA, "rot", map[string]string{"password": v2})
	took := testkit.Eventually(t, settle, "rot-sink restarted once with a new secretsHash", func() (bool, string) {
		kc := getKC(t, nsA, "rot-sink")
		return restarts("rot-sink") == rot0+1 && kc.Status.SecretsHash != h0 && kc.Status.SecretsHash != "",
			fmt.Sprintf("restarts %d, %s", restarts("rot-sink")-rot0, describe(kc))
	})
	t.Logf("rotating Secret rot restarted rot-sink %s after the change (operator resync %s)", took.Round(time.Millisecond), connectorResync)
	if n := calls.get("POST /connectors/rot-sink/restart?includeTasks=true&onlyFailed=false") - rotAll0; n != 1 {
		t.Errorf("the rotation restart was not one restart of the connector and all its tasks (%d with includeTasks=true&onlyFailed=false; calls %v)", n, calls.counts)
	}
	waitReady(t, nsA, "rot-sink")
	produce(t, rotIn, "after")
	waitFileLines(t, filepath.Join(outDir, "rot-"+v2+".out"), 1)
	t.Logf("the restarted task resolved the new value (its output moved to the new file) %s after the change", time.Since(start).Round(time.Millisecond))

	// plain-sink keeps being reconciled (two more passes) and is never restarted.
	reads := statusReads("plain-sink")
	testkit.Eventually(t, settle, "two more reconcile passes of plain-sink", func() (bool, string) {
		return statusReads("plain-sink") >= reads+2, fmt.Sprint(statusReads("plain-sink") - reads)
	})
	if n := restarts("plain-sink") - plain0; n != 0 {
		t.Fatalf("plain-sink, which references no Secret, was restarted %d time(s)", n)
	}
	if n := restarts("rot-sink") - rot0; n != 1 {
		t.Fatalf("rot-sink was restarted %d times for one rotation (calls %v)", n, calls.counts)
	}
	var evs eventsv1.EventList
	if err := k8s.List(context.Background(), &evs, client.InNamespace(nsA)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		if e.Regarding.Name == "rot-sink" && e.Reason == "SecretsRotated" {
			found = true
			if !strings.Contains(e.Note, "rot") || strings.Contains(e.Note, v2) {
				t.Errorf("SecretsRotated event note %q", e.Note)
			}
		}
	}
	if !found {
		t.Error("no SecretsRotated event for rot-sink")
	}
	assertNoLeak(t, nsA, clusterA, "rot-sink", rotIn, v2, "${secret:rot:password}")
	assertNoLeak(t, nsA, clusterA, "rot-sink", rotIn, v1, "${secret:rot:password}")
}

// TestRestartAnnotations: a new value of connect.conveyor.dev/restart
// restarts the connector and all its tasks once, a new value of
// connect.conveyor.dev/restart-tasks the connector with its failed tasks;
// status keeps the values handled, and later passes restart nothing.
func TestRestartAnnotations(t *testing.T) {
	ensureCluster(t, nsA, clusterA)
	restartIn := testkit.Unique(t, "restart-in") // one topic per run (-count)
	createTopic(t, restartIn, 1)
	sink(t, nsA, clusterA, "restart-me", restartIn, nil)
	waitReady(t, nsA, "restart-me")
	all := func() int {
		return calls.get("POST /connectors/restart-me/restart?includeTasks=true&onlyFailed=false")
	}
	failed := func() int {
		return calls.get("POST /connectors/restart-me/restart?includeTasks=true&onlyFailed=true")
	}
	a0, f0 := all(), failed()

	setAnnotation := func(key, value string) {
		patchKC(t, nsA, "restart-me", func(kc *v1alpha1.KafkaConnector) {
			if kc.Annotations == nil {
				kc.Annotations = map[string]string{}
			}
			kc.Annotations[key] = value
		})
	}
	setAnnotation(v1alpha1.RestartAnnotation, "2026-11-29T16:00:00Z")
	took := testkit.Eventually(t, settle, "one restart of everything, recorded in status", func() (bool, string) {
		kc := getKC(t, nsA, "restart-me")
		return all() == a0+1 && kc.Status.LastRestartAnnotation == "2026-11-29T16:00:00Z",
			fmt.Sprintf("restarts %d, lastRestartAnnotation %q", all()-a0, kc.Status.LastRestartAnnotation)
	})
	t.Logf("restart annotation handled in %s", took.Round(time.Millisecond))

	setAnnotation(kafkaconnector.AnnotationRestartTasks, "1")
	took = testkit.Eventually(t, settle, "one restart of the connector and its failed tasks, recorded in status", func() (bool, string) {
		kc := getKC(t, nsA, "restart-me")
		return failed() == f0+1 && kc.Status.LastRestartTasksAnnotation == "1",
			fmt.Sprintf("restarts %d, lastRestartTasksAnnotation %q", failed()-f0, kc.Status.LastRestartTasksAnnotation)
	})
	t.Logf("restart-tasks annotation handled in %s", took.Round(time.Millisecond))

	reads := statusReads("restart-me")
	testkit.Eventually(t, settle, "two more reconcile passes", func() (bool, string) {
		return statusReads("restart-me") >= reads+2, fmt.Sprint(statusReads("restart-me") - reads)
	})
	if all() != a0+1 || failed() != f0+1 {
		t.Fatalf("handled annotations restarted again: %d and %d restarts", all()-a0, failed()-f0)
	}
	waitReady(t, nsA, "restart-me")
}

// TestSinkGroupConflict: a sink named like a sink of another ConnectCluster
// on the same brokers would share its consumer group connect-<name>: it is
// refused with Ready=False naming the other one and never created.
func TestSinkGroupConflict(t *testing.T) {
	ensureCluster(t, nsA, clusterA)
	ensureCluster(t, nsB, clusterB)
	dupIn := testkit.Unique(t, "dup-in") // one topic per run (-count)
	createTopic(t, dupIn, 1)
	sink(t, nsA, clusterA, "dup", dupIn, nil)
	waitReady(t, nsA, "dup")

	sink(t, nsB, clusterB, "dup", dupIn, map[string]string{"file": filepath.Join(outDir, "dup-b.out")})
	took := testkit.Eventually(t, settle, "team-b/dup Ready=False/SinkGroupConflict naming team-a/dup", func() (bool, string) {
		kc := getKC(t, nsB, "dup")
		c := meta.FindStatusCondition(kc.Status.Conditions, v1alpha1.KafkaConnectorReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonSinkGroupConflict &&
			strings.Contains(c.Message, "team-a/dup") && strings.Contains(c.Message, clusterA) && strings.Contains(c.Message, "connect-dup"), describe(kc)
	})
	c := meta.FindStatusCondition(getKC(t, nsB, "dup").Status.Conditions, v1alpha1.KafkaConnectorReady)
	t.Logf("refused in %s: %q", took.Round(time.Millisecond), c.Message)
	rc, err := workerclient.New([]string{workers[nsB+"/"+clusterB].url}, workerclient.Options{Token: restToken, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Status(context.Background(), "dup"); !workerclient.IsNotFound(err) {
		t.Fatalf("the refused sink exists on the workers of %s (err %v)", clusterB, err)
	}
	waitReady(t, nsA, "dup")
}
