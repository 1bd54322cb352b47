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
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
)

// canary is one secret a worker holds and where it came from.
type canary struct{ what, value string }

// TestCanaryCredentialsNeverLeak plants unique markers in the files a
// worker holds (its REST token and metrics token, from Secrets the
// cluster's owner wrote, its worker properties through spec.config, the
// private key of its Kafka client certificate and its SASL password: the
// cluster runs on the local cluster's secure Kafka, TLS with client
// certificates and SASL/SCRAM-SHA-512), then waits (t.Parallel) until every other test of the tier has run its
// attacks. It then collects the credentials every worker of every cluster
// holds (the planted markers, every REST and metrics token Secret, every
// pod's ServiceAccount token) and checks that none appears in any Kafka
// topic, any REST answer of any worker, any ConnectCluster or
// KafkaConnector status, any event, any log of the local cluster, or any
// container's termination message. Both Kafkas' topics are read.
func TestCanaryCredentialsNeverLeak(t *testing.T) {
	ctx := t.Context()
	m := randomHex()
	const ns = "canary"
	tenantNamespace(t, ns)
	sk := cluster.SecureKafka
	// The client key carries the marker in a PEM header (a key file may hold
	// headers; the key itself is as unique, its body lines are canaries too).
	keyBlock, _ := pem.Decode(sk.ClientKeyPEM)
	if keyBlock == nil {
		t.Fatal("the secure Kafka's client key is not PEM")
	}
	keyBlock.Headers = map[string]string{"Canary": "canary-tls-key-" + m}
	keyPEM := string(pem.EncodeToMemory(keyBlock))
	secrets := map[string]map[string]string{
		"canary-rest":    {"token": "canary-rest-" + m + "\n"},
		"canary-metrics": {"token": "canary-metrics-" + m + "\n"},
		"canary-kafka-tls": {connectcluster.KafkaTLSCAFile: string(sk.CAPEM), connectcluster.KafkaTLSCertFile: string(sk.ClientCertPEM),
			connectcluster.KafkaTLSKeyFile: keyPEM},
		"canary-kafka-sasl": {"username": sk.User, "password": sk.Password + "\n"},
	}
	for name, data := range secrets {
		if _, err := cluster.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cc := tenantCluster(ns, "connect", sk.Addr, "")
	cc.Spec.RestAPI.Authentication.TokenSecret = &v1alpha1.SecretKeyRef{Name: "canary-rest", Key: "token"}
	cc.Spec.Metrics.Authentication.TokenSecret = &v1alpha1.SecretKeyRef{Name: "canary-metrics", Key: "token"}
	cc.Spec.Config["x.canary.marker"] = "canary-properties-" + m
	cc.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{
		CA:          &v1alpha1.SecretKeyRef{Name: "canary-kafka-tls", Key: connectcluster.KafkaTLSCAFile},
		Certificate: &v1alpha1.SecretKeyRef{Name: "canary-kafka-tls", Key: connectcluster.KafkaTLSCertFile},
		Key:         &v1alpha1.SecretKeyRef{Name: "canary-kafka-tls", Key: connectcluster.KafkaTLSKeyFile},
	}
	cc.Spec.Kafka.SASL = &v1alpha1.KafkaSASL{Mechanism: v1alpha1.SASLMechanismScramSHA512,
		Username: v1alpha1.SecretKeyRef{Name: "canary-kafka-sasl", Key: "username"},
		Password: v1alpha1.SecretKeyRef{Name: "canary-kafka-sasl", Key: "password"}}
	tenantCreate(t, cc)
	if _, err := cv.WaitWorkersReady(ctx, ns, "connect", 1, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	// A connector that asks for the worker's own files by placeholder, and
	// one that streams on the secure Kafka (so its topics hold records).
	inConfig := func(sub, file string) string { return connectcluster.ConfigDir + "/" + sub + "/" + file }
	tenantCreate(t, tenantConnector(ns, "curious", "connect", "RangeSource", map[string]string{
		"topic": "canary-curious", "count": "10", "x.token": "${file:/etc/conveyor/rest-token/token}", "x.sa": "${file:/var/run/secrets/kubernetes.io/serviceaccount/token}",
		"x.tls":  "${file:" + inConfig(connectcluster.KafkaTLSSubdir, connectcluster.KafkaTLSKeyFile) + "}",
		"x.sasl": "${file:" + inConfig(connectcluster.KafkaSASLSubdir, connectcluster.KafkaSASLPasswordFile) + "}",
	}))
	tenantCreate(t, tenantConnector(ns, "streams", "connect", "RangeSource", map[string]string{"topic": "canary-out", "count": "100"}))
	if _, err := cv.WaitConnectorsRunning(ctx, ns, 3*time.Minute, "streams"); err != nil {
		t.Fatalf("a connector on the TLS and SASL Kafka: %v", err)
	}

	t.Parallel() // the checks wait until the tier's other tests are done
	ctx = context.Background()
	canaries := []canary{{"planted REST token", "canary-rest-" + m}, {"planted metrics token", "canary-metrics-" + m}, {"planted worker property", "canary-properties-" + m},
		{"planted TLS key marker", "canary-tls-key-" + m}, {"planted SASL password", sk.Password}}
	for i, line := range strings.Split(strings.TrimSpace(string(sk.ClientKeyPEM)), "\n") {
		if !strings.HasPrefix(line, "-----") {
			canaries = append(canaries, canary{fmt.Sprintf("line %d of the TLS key", i), line})
		}
	}
	canaries = append(canaries, tokenSecrets(t, ctx)...)
	canaries = append(canaries, serviceAccountTokens(t)...)
	t.Logf("%d canaries (5 planted)", len(canaries))
	check := func(where, text string) {
		t.Helper()
		for _, c := range canaries {
			if strings.Contains(text, c.value) {
				t.Errorf("%s holds the %s", where, c.what)
			}
		}
	}

	// Logs (every pod's container log and the cluster's own).
	for _, c := range canaries {
		if hits := filesHolding(t, filepath.Join(cluster.Dir, "logs"), c.value); len(hits) > 0 {
			t.Errorf("logs hold the %s: %v", c.what, hits)
		}
	}
	// Statuses, events, termination messages.
	var ccs v1alpha1.ConnectClusterList
	if err := cv.Client.List(ctx, &ccs); err != nil {
		t.Fatal(err)
	}
	for _, c := range ccs.Items {
		b, _ := json.Marshal(c.Status)
		check("ConnectCluster "+c.Namespace+"/"+c.Name+" status", string(b))
	}
	var kcs v1alpha1.KafkaConnectorList
	if err := cv.Client.List(ctx, &kcs); err != nil {
		t.Fatal(err)
	}
	for _, k := range kcs.Items {
		b, _ := json.Marshal(k.Status)
		check("KafkaConnector "+k.Namespace+"/"+k.Name+" status", string(b))
	}
	events, err := cluster.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		check("event "+e.Namespace+"/"+e.Name, e.Message)
	}
	pods, err := cluster.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			for _, st := range []corev1.ContainerState{s.State, s.LastTerminationState} {
				if st.Terminated != nil {
					check("termination message of "+p.Namespace+"/"+p.Name, st.Terminated.Message)
				}
			}
		}
	}
	// REST answers of every worker of every cluster.
	for _, c := range ccs.Items {
		workers, _, err := cv.WorkerPods(ctx, c.Namespace, c.Name)
		if err != nil || len(workers) == 0 {
			continue
		}
		token, err := cv.RestToken(ctx, &c)
		if err != nil {
			continue
		}
		token = strings.TrimSpace(token)
		for _, w := range workers {
			if w.Status.PodIP == "" {
				continue
			}
			paths := []string{"/", "/connectors?expand=info&expand=status", "/connector-plugins", "/admin/loggers"}
			var names []string
			if code, body := workerREST(t, "GET", w.Status.PodIP, "/connectors", token, nil, nil); code == 200 {
				_ = json.Unmarshal([]byte(body), &names)
			}
			for _, n := range names {
				for _, sub := range []string{"", "/config", "/status", "/tasks", "/topics", "/offsets"} {
					paths = append(paths, "/connectors/"+n+sub)
				}
			}
			for _, p := range paths {
				_, body := workerREST(t, "GET", w.Status.PodIP, p, token, nil, nil)
				check(fmt.Sprintf("REST GET %s on %s/%s", p, c.Namespace, w.Name), body)
			}
		}
	}
	// Every record of every topic of both Kafkas.
	checkTopics(t, ctx, check, kgo.SeedBrokers(cluster.KafkaAddr))
	secureOpts, err := sk.ClientOpts()
	if err != nil {
		t.Fatal(err)
	}
	checkTopics(t, ctx, check, secureOpts...)
}

// tokenSecrets are the REST and metrics tokens of every ConnectCluster.
func tokenSecrets(t *testing.T, ctx context.Context) []canary {
	var ccs v1alpha1.ConnectClusterList
	if err := cv.Client.List(ctx, &ccs); err != nil {
		t.Fatal(err)
	}
	var out []canary
	for _, c := range ccs.Items {
		for what, ref := range map[string]v1alpha1.SecretKeyRef{"REST token": c.RestTokenSecret(), "metrics token": c.MetricsTokenSecret()} {
			s, err := cluster.Client.CoreV1().Secrets(c.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if v := strings.TrimSpace(string(s.Data[ref.Key])); len(v) >= 8 {
				out = append(out, canary{fmt.Sprintf("%s of %s/%s", what, c.Namespace, c.Name), v})
			}
		}
	}
	return out
}

// serviceAccountTokens are the ServiceAccount tokens mounted in the pods,
// by the signature part of each JWT (what makes one unique).
func serviceAccountTokens(t *testing.T) []canary {
	var out []canary
	files, _ := filepath.Glob(filepath.Join(cluster.Dir, "pods", "*", "volumes", "*", "token"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		parts := strings.Split(strings.TrimSpace(string(b)), ".")
		if len(parts) == 3 && len(parts[2]) >= 16 {
			out = append(out, canary{"ServiceAccount token in " + filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(f)))), parts[2]})
		}
	}
	return out
}

// checkTopics reads every topic of the Kafka that opts reach from the
// start to its end and passes keys, values and headers to check.
func checkTopics(t *testing.T, ctx context.Context, check func(where, text string), opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx)
	if err != nil {
		t.Fatalf("listing the topics' end offsets: %v", err)
	}
	want := map[string]map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset <= 0 {
			return
		}
		if want[o.Topic] == nil {
			want[o.Topic] = map[int32]kgo.Offset{}
		}
		want[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
	})
	if len(want) == 0 {
		return
	}
	cl.AddConsumePartitions(want)
	// Read until two polls of 3 s bring nothing new (transaction markers
	// make "offset end-1 seen" unreliable).
	records, idle := 0, 0
	for idle < 2 {
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("reading every topic: %v after %d records", ctx.Err(), records)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			where := fmt.Sprintf("topic %s partition %d offset %d", r.Topic, r.Partition, r.Offset)
			check(where+" key", string(r.Key))
			check(where+" value", string(r.Value))
			for _, h := range r.Headers {
				check(where+" header "+h.Key, string(h.Value))
			}
		})
		records += n
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	t.Logf("read %d records of %d topics", records, len(want))
}
