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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/configprovider"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// allowedSecrets are the Secrets every test cluster's owner allows its
// connectors (spec.connectorAccess.secrets); "unrelated" and "b-other" are
// left out on purpose.
var allowedSecrets = []string{"db", "rot", "leak", "b-creds", "b-creds2"}

// allowedDir is the one directory cluster A's owner lets ${file:} read.
func allowedDir() string { return filepath.Join(outDir, "allowed") }

// connectorAccess is the test clusters' spec.connectorAccess: the Secrets
// above for both, and ${file:} under allowedDir for team A only.
func connectorAccess(ns string) *v1alpha1.ConnectorAccess {
	a := &v1alpha1.ConnectorAccess{Secrets: allowedSecrets}
	if ns == nsA {
		a.FilePaths = []string{allowedDir()}
	}
	return a
}

// distributedResolver is what a distributed worker of cc resolves with
// (the worker builds the same from the access lists the operator renders).
func distributedResolver(secrets configprovider.Provider, cc *v1alpha1.ConnectCluster) *configprovider.Resolver {
	return configprovider.Distributed(secrets, configprovider.Access{FilePaths: cc.AllowedFilePaths(), EnvVariables: cc.AllowedEnvVariables()})
}

// restDo sends a REST call to a test worker with the REST token.
func restDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+restToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func readyOf(kc *v1alpha1.KafkaConnector) *metav1.Condition {
	return meta.FindStatusCondition(kc.Status.Conditions, v1alpha1.KafkaConnectorReady)
}

// waitNotReady waits for Ready=False with reason, and returns its message.
func waitNotReady(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var msg string
	testkit.Eventually(t, settle, ns+"/"+name+" Ready=False/"+reason, func() (bool, string) {
		kc := getKC(t, ns, name)
		c := readyOf(kc)
		if c != nil {
			msg = c.Message
		}
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.ObservedGeneration == kc.Generation, describe(kc)
	})
	return msg
}

// TestNoResolvedValueInAnyOutput puts a unique marker behind every way a
// value enters a connector (a password key, a non-password key, a topic
// name, a transform's static value, a file, a rotated Secret, a refused
// file), drives each failure path (an invalid value, a failing task, a
// rotation, a refused reference), then searches every output: the workers'
// REST answers (400 bodies included), the config, status and offset
// topics, every KafkaConnector, Events, and the operator's and workers'
// logs. Each search is first shown to cover what it searches.
func TestNoResolvedValueInAnyOutput(t *testing.T) {
	ensureCluster(t, nsA, clusterA)
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	mk := func(what string) string { return fmt.Sprintf("mk%s%dQz", what, stamp) }
	markers := map[string]string{
		"password key":          mk("pass"),
		"non-password key":      mk("retry"),
		"topic name":            mk("topic"),
		"transform static":      mk("static"),
		"file":                  mk("file"),
		"rotated Secret before": mk("rotone"),
		"rotated Secret after":  mk("rottwo"),
		"refused file":          mk("outside"),
	}
	putSecret(t, nsA, "leak", map[string]string{
		"pw": markers["password key"], "retry": markers["non-password key"], "topic": markers["topic name"],
		"static": markers["transform static"], "rot": markers["rotated Secret before"],
	})
	if err := os.MkdirAll(allowedDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	allowedFile := filepath.Join(allowedDir(), "leak.txt")
	outsideFile := filepath.Join(outDir, "outside.txt")
	for p, v := range map[string]string{allowedFile: markers["file"], outsideFile: markers["refused file"]} {
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := workers[nsA+"/"+clusterA]
	var responses []string // every REST body the test received

	// A topic named through a placeholder, and a transform's static value:
	// a running sink whose output (its own data, not a message) shows both
	// were resolved.
	topic := markers["topic name"]
	createTopic(t, topic, 1)
	out := filepath.Join(outDir, "leak-topic.out")
	sink(t, nsA, clusterA, "leak-topic", "${secret:leak:topic}", map[string]string{
		"file":                           out,
		"transforms":                     "ins",
		"transforms.ins.type":            "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.ins.static.field":    "tag",
		"transforms.ins.static.value":    "${secret:leak:static}",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	})
	waitReady(t, nsA, "leak-topic")
	produce(t, topic, `{"n":1}`)
	waitFileLines(t, out, 1)
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), markers["transform static"]) {
		t.Fatalf("the sink did not resolve the static value: %q", b)
	}

	// A failing task whose error names a file path built from ${file:} and
	// a Secret, then a rotation of that Secret: the new value fails too.
	// The resolved paths are directories, so the task cannot open them
	// ("is a directory"), while the connector's validation passes.
	createTopic(t, "leak-fail-in", 1)
	for _, rot := range []string{markers["rotated Secret before"], markers["rotated Secret after"]} {
		if err := os.MkdirAll(filepath.Join(outDir, markers["file"]+"-"+rot), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	failPath := filepath.Join(outDir, "${file:"+allowedFile+"}-${secret:leak:rot}")
	// The FileSink checks that the directory of the unresolved path exists
	// (the operator validates placeholders as written); the ${file:} path's
	// slashes make that directory "<outDir>/${file:<allowedDir>".
	if err := os.MkdirAll(filepath.Dir(failPath), 0o755); err != nil {
		t.Fatal(err)
	}
	sink(t, nsA, clusterA, "leak-fail", "leak-fail-in", map[string]string{"file": failPath})
	waitTrace := func(what string) {
		testkit.Eventually(t, settle, "leak-fail's task FAILED with a trace ("+what+")", func() (bool, string) {
			kc := getKC(t, nsA, "leak-fail")
			return len(kc.Status.Tasks) == 1 && kc.Status.Tasks[0].State == "FAILED" && strings.Contains(kc.Status.Tasks[0].Trace, "is a directory"), describe(kc)
		})
	}
	waitTrace("before the rotation")
	putSecret(t, nsA, "leak", map[string]string{
		"pw": markers["password key"], "retry": markers["non-password key"], "topic": markers["topic name"],
		"static": markers["transform static"], "rot": markers["rotated Secret after"],
	})
	testkit.Eventually(t, settle, "the rotation restarts leak-fail", func() (bool, string) {
		_, body := restGet(t, w.url+"/connectors/leak-fail/status")
		return restarts("leak-fail") > 0, body
	})
	waitTrace("after the rotation")

	// An invalid value of a non-password key and a password key, written
	// straight to the workers' REST API (what a KafkaConnector's validation
	// never reaches: the placeholder itself is not a number).
	for name, cfg := range map[string]map[string]string{
		"leak-invalid": {"connector.class": sinkClass, "topics": "t", "file": filepath.Join(outDir, "x.out"), "errors.retry.timeout": "${secret:leak:retry}"},
		"leak-pg": {"connector.class": "dev.conveyor.connect.postgres.PostgresSinkConnector", "topics": "t",
			"connection.url": "postgres://127.0.0.1:1/db?connect_timeout=1", "connection.user": "u", "connection.password": "${secret:leak:pw}"},
		"leak-refused": {"connector.class": sinkClass, "topics": "t", "file": "${file:" + outsideFile + "}"},
	} {
		b, _ := json.Marshal(cfg)
		code, body := restDo(t, http.MethodPut, w.url+"/connectors/"+name+"/config", string(b))
		if code != http.StatusBadRequest {
			t.Errorf("PUT %s: %d %s, want 400", name, code, body)
		}
		responses = append(responses, "PUT "+name+": "+body)
		if name == "leak-invalid" && !strings.Contains(body, "errors.retry.timeout") {
			t.Errorf("the 400 does not name the key: %s", body)
		}
		if name == "leak-refused" && !strings.Contains(body, `config key \"file\"`) {
			t.Errorf("the refusal does not name the key: %s", body)
		}
	}

	// A refused reference through a KafkaConnector.
	sink(t, nsA, clusterA, "leak-refused-kc", "leak-fail-in", map[string]string{"file": "${file:" + outsideFile + "}"})
	if msg := waitNotReady(t, nsA, "leak-refused-kc", v1alpha1.ReasonProviderNotAllowed); !strings.Contains(msg, `"file"`) {
		t.Errorf("the Ready message does not name the key: %s", msg)
	}

	// Every REST answer about every connector.
	paths := []string{"/connectors?expand=info&expand=status", "/metrics"}
	for _, c := range []string{"leak-topic", "leak-fail"} {
		for _, p := range []string{"", "/config", "/status", "/tasks", "/tasks/0/status", "/topics", "/limits", "/offsets"} {
			paths = append(paths, "/connectors/"+c+p)
		}
	}
	for _, p := range paths {
		code, body := restGet(t, w.url+p)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
		responses = append(responses, "GET "+p+": "+body)
	}
	allREST := strings.Join(responses, "\n")

	var outputs []struct{ what, content, mustHold string }
	add := func(what, content, mustHold string) {
		outputs = append(outputs, struct{ what, content, mustHold string }{what, content, mustHold})
	}
	add("REST responses", allREST, "is a directory")
	cc := clusterObject(nsA, clusterA)
	for _, tp := range []struct{ topic, mustHold string }{
		{cc.ConfigTopic(), "${secret:leak:rot}"}, {cc.StatusTopic(), "is a directory"}, {cc.OffsetTopic(), ""},
	} {
		content, n := readTopic(t, tp.topic)
		add(fmt.Sprintf("topic %s (%d records)", tp.topic, n), content, tp.mustHold)
	}
	var kcs v1alpha1.KafkaConnectorList
	if err := k8s.List(ctx, &kcs, client.InNamespace(nsA)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(kcs)
	add(fmt.Sprintf("KafkaConnectors (%d)", len(kcs.Items)), string(b), "is a directory")
	var evs eventsv1.EventList
	var cevs corev1.EventList
	if err := k8s.List(ctx, &evs, client.InNamespace(nsA)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.List(ctx, &cevs, client.InNamespace(nsA)); err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(evs)
	b2, _ := json.Marshal(cevs)
	add(fmt.Sprintf("Events (%d)", len(evs.Items)+len(cevs.Items)), string(b1)+string(b2), "leak-fail")
	add("the operator's log", operatorLog.String(), "leak-fail")
	add("the workers' log", workerLog.String(), "leak-fail")

	hits := 0
	for _, o := range outputs {
		if o.mustHold != "" && !strings.Contains(o.content, o.mustHold) {
			t.Errorf("%s does not hold %q: the search does not cover the connectors (%d bytes)", o.what, o.mustHold, len(o.content))
		}
		for _, name := range slices.Sorted(mapKeys(markers)) {
			m := markers[name]
			for _, form := range []string{m, base64.StdEncoding.EncodeToString([]byte(m))} {
				if i := strings.Index(o.content, form); i >= 0 {
					hits++
					t.Errorf("the %s marker appears in %s: ...%s...", name, o.what, o.content[max(0, i-160):min(len(o.content), i+len(form)+40)])
				}
			}
		}
	}
	t.Logf("%d markers searched in %d outputs (%d bytes): %d hits", len(markers), len(outputs), totalLen(outputs), hits)
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func totalLen[T any](xs []T) int {
	n := 0
	for _, x := range xs {
		n += len(fmt.Sprint(x))
	}
	return n
}

// TestPrivilegeRefusals: a KafkaConnector naming a Secret the cluster does
// not allow, or using ${file:} or ${env:} without the owner's allow-list,
// gets Ready=False naming the key, is never created on the workers, and
// the workers' Role does not change: they still may not read the Secret.
func TestPrivilegeRefusals(t *testing.T) {
	ensureCluster(t, nsB, clusterB)
	putSecret(t, nsB, "b-other", map[string]string{"key": "not-for-connectors"})
	createTopic(t, "b-priv-in", 1)
	before, _ := roleNames(t, nsB, clusterB)
	for _, c := range []struct{ name, key, value, reason string }{
		{"priv-secret", "api.key", "${secret:b-other:key}", v1alpha1.ReasonSecretNotAllowed},
		{"priv-sa-token", "api.key", "${secret:" + clusterB + "-rest:token}", v1alpha1.ReasonSecretNotAllowed},
		{"priv-file", "file", "${file:/var/run/secrets/kubernetes.io/serviceaccount/token}", v1alpha1.ReasonProviderNotAllowed},
		{"priv-env", "api.key", "${env:HOME}", v1alpha1.ReasonProviderNotAllowed},
	} {
		sink(t, nsB, clusterB, c.name, "b-priv-in", map[string]string{c.key: c.value})
		msg := waitNotReady(t, nsB, c.name, c.reason)
		if !strings.Contains(msg, `"`+c.key+`"`) || !strings.Contains(msg, "spec.connectorAccess") {
			t.Errorf("%s: the message does not name the key and the fix: %s", c.name, msg)
		}
		if code, body := restGet(t, workers[nsB+"/"+clusterB].url+"/connectors/"+c.name); code != http.StatusNotFound {
			t.Errorf("%s was created on the workers: %d %s", c.name, code, body)
		}
	}
	testkit.Consistently(t, 3*time.Second, "the workers' Role keeps "+fmt.Sprint(before), func() (bool, string) {
		got, _ := roleNames(t, nsB, clusterB)
		return slices.Equal(got, before), fmt.Sprint(got)
	})
	expectForbidden(t, nsB, clusterB, "b-other")
}
