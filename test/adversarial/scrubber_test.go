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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestScrubberKeepsConnectorsApart: on one ConnectCluster, an attacker's
// connector resolves a Secret whose value is a word in another team's
// connector config (its topic). The other connector's config and task
// configs stay as written (no placeholder of the attacker's appears in
// them) and the operator does not fight a drift it caused; every REST
// answer is valid JSON. A connector whose error message would quote its
// resolved value (a bad number) shows the placeholder in its status and
// events, and the worker's log never holds the value.
func TestScrubberKeepsConnectorsApart(t *testing.T) {
	ctx := t.Context()
	const ns = "sc-shared"
	tenantNamespace(t, ns)
	word := "sc-orders-stream"
	leak := fmt.Sprintf("sc-leak-%d", time.Now().UnixNano())
	if _, err := cluster.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
		StringData: map[string]string{"w": word, "bad": leak},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cc := tenantCluster(ns, "connect", cluster.KafkaAddr, "")
	cc.Spec.ConnectorAccess = &v1alpha1.ConnectorAccess{Secrets: []string{"words"}}
	tenantCreate(t, cc)
	pods, err := cv.WaitWorkersReady(ctx, ns, "connect", 1, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	victim := map[string]string{"topic": word, "count": "1000", "rate": "20"}
	tenantCreate(t, tenantConnector(ns, "victim", "connect", "RangeSource", victim))
	tenantCreate(t, tenantConnector(ns, "attacker", "connect", "RangeSource", map[string]string{"topic": "sc-attacker", "count": "1000", "rate": "20", "x.note": "${secret:words:w}"}))
	if _, err := cv.WaitConnectorsRunning(ctx, ns, 2*time.Minute, "victim", "attacker"); err != nil {
		t.Fatal(err)
	}
	if err := cv.Client.Get(ctx, client.ObjectKeyFromObject(cc), cc); err != nil {
		t.Fatal(err)
	}
	token, err := cv.RestToken(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	ip := pods[0].Status.PodIP
	restJSON := func(path string, out any) string {
		t.Helper()
		code, body := workerREST(t, "GET", ip, path, token, nil, nil)
		if code != 200 || !json.Valid([]byte(body)) {
			t.Fatalf("GET %s: %d, valid JSON %v: %s", path, code, json.Valid([]byte(body)), body)
		}
		if out != nil {
			if err := json.Unmarshal([]byte(body), out); err != nil {
				t.Fatal(err)
			}
		}
		return body
	}

	// The victim's data is its own, for as long as the operator keeps
	// checking it (its drift check runs at each resync).
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var cfg map[string]string
		restJSON("/connectors/victim/config", &cfg)
		if cfg["topic"] != word {
			t.Fatalf("the victim's config on the workers says topic=%q, want %q (another connector's value rewrote it)", cfg["topic"], word)
		}
		var tasks []struct {
			Config map[string]string `json:"config"`
		}
		restJSON("/connectors/victim/tasks", &tasks)
		if len(tasks) == 0 || tasks[0].Config["topic"] != word {
			t.Fatalf("the victim's stored task configs: %+v", tasks)
		}
		for _, p := range []string{"/connectors?expand=info&expand=status", "/connectors/victim/status", "/connectors/victim/topics", "/connectors/attacker/config"} {
			restJSON(p, nil)
		}
		var kc v1alpha1.KafkaConnector
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "victim"}, &kc); err != nil {
			t.Fatal(err)
		}
		if d := meta.FindStatusCondition(kc.Status.Conditions, v1alpha1.KafkaConnectorConfigDrift); d != nil && d.Reason != v1alpha1.ReasonInSync {
			t.Fatalf("the operator sees drift on the victim: %s %s", d.Reason, d.Message)
		}
		if kc.Status.Drift != nil && kc.Status.Drift.Reverts > 0 {
			t.Fatalf("the operator reverted the victim's config %d times", kc.Status.Drift.Reverts)
		}
		time.Sleep(2 * time.Second)
	}
	// The attacker's own answers show its placeholder.
	if body := restJSON("/connectors/attacker/config", nil); !strings.Contains(body, "${secret:words:w}") {
		t.Errorf("the attacker's config: %s", body)
	}

	// A resolved value quoted by a validation error.
	tenantCreate(t, tenantConnector(ns, "leaky", "connect", "RangeSource", map[string]string{"topic": "sc-leaky", "count": "${secret:words:bad}"}))
	var kc v1alpha1.KafkaConnector
	deadline = time.Now().Add(2 * time.Minute)
	for {
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "leaky"}, &kc); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(kc.Status.Conditions, "Ready"); c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "count") {
			t.Logf("leaky refused: %s %s", c.Reason, c.Message)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaky connector not refused naming count: %+v", kc.Status.Conditions)
		}
		time.Sleep(500 * time.Millisecond)
	}
	st, _ := json.Marshal(kc.Status)
	if strings.Contains(string(st), leak) {
		t.Errorf("the resolved value is in the KafkaConnector status: %s", st)
	}
	events, err := cluster.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, leak) {
			t.Errorf("event %s/%s holds the resolved value: %s", e.Reason, e.InvolvedObject.Name, e.Message)
		}
	}
	for _, p := range []string{"/connectors?expand=info&expand=status", "/connectors/leaky/status", "/connectors/leaky/config"} {
		code, body := workerREST(t, "GET", ip, p, token, nil, nil)
		if strings.Contains(body, leak) {
			t.Errorf("GET %s (%d) holds the resolved value: %s", p, code, body)
		}
	}
	if hits := filesHolding(t, filepath.Join(cluster.Dir, "logs"), leak); len(hits) > 0 {
		t.Errorf("the resolved value is in logs: %v", hits)
	}
}

// filesHolding lists the files under dir that contain any of needles.
func filesHolding(t *testing.T, dir string, needles ...string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, n := range needles {
			if n != "" && strings.Contains(string(b), n) {
				hits = append(hits, p)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}
