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

package apitest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestInvalidObjectsRefused creates objects that break one rule each and checks that the API
// server refuses them with a message naming the field (and, for CEL rules, the fix).
func TestInvalidObjectsRefused(t *testing.T) {
	ns := newNamespace(t)
	cluster := func(mutate func(*v1.ConnectCluster)) client.Object {
		cc := validCluster(ns, "")
		cc.GenerateName = "bad-"
		mutate(cc)
		return cc
	}
	connector := func(mutate func(*v1.KafkaConnector)) client.Object {
		kc := validConnector(ns, "")
		kc.GenerateName = "bad-"
		mutate(kc)
		return kc
	}
	dur := func(s string) *metav1.Duration {
		d, err := timeParse(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cases := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"autoscaling minReplicas above maxReplicas", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Autoscaling = &v1.AutoscalingSpec{Enabled: true, MinReplicas: ptr(int32(5)), MaxReplicas: ptr(int32(3))}
		}), []string{"spec.autoscaling.minReplicas", "less than or equal to autoscaling.maxReplicas"}},
		{"autoscaling minReplicas above the default maxReplicas", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Autoscaling = &v1.AutoscalingSpec{Enabled: true, MinReplicas: ptr(int32(11))}
		}), []string{"spec.autoscaling.minReplicas", "maxReplicas"}},
		{"autoscaling minReplicas zero", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Autoscaling = &v1.AutoscalingSpec{MinReplicas: ptr(int32(0))}
		}), []string{"spec.autoscaling.minReplicas", "greater than or equal to 1"}},
		{"autoscaling pollingInterval below a second", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Autoscaling = &v1.AutoscalingSpec{PollingInterval: dur("500ms")}
		}), []string{"spec.autoscaling.pollingInterval", "between 1s and 1h"}},
		{"worker config sets group.id", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Config = map[string]string{"group.id": "other", "offset.flush.interval.ms": "1000"}
		}), []string{"spec.config", "config may not set group.id", "spec.groupId", "remove the key"}},
		{"worker config sets bootstrap.servers and rest.port", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Config = map[string]string{"rest.port": "9000", "bootstrap.servers": "x:9092"}
		}), []string{"spec.config", "config may not set bootstrap.servers", "spec.kafka"}},
		{"exactlyOnce together with the worker key", cluster(func(c *v1.ConnectCluster) {
			c.Spec.ExactlyOnce = ptr(true)
			c.Spec.Config = map[string]string{"exactly.once.source.support": "preparing"}
		}), []string{"spec.exactlyOnce", "either with spec.exactlyOnce or with config"}},
		{"KafkaConnector exactlyOnce not an allowed value", connector(func(k *v1.KafkaConnector) {
			k.Spec.ExactlyOnce = "Always"
		}), []string{"spec.exactlyOnce", "Requested", "Required"}},
		{"bootstrapServers without a port", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Kafka.BootstrapServers = "kafka-0.kafka,kafka-1.kafka:9092"
		}), []string{"spec.kafka.bootstrapServers", "comma-separated list of host:port pairs"}},
		{"bootstrapServers empty", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Kafka.BootstrapServers = ""
		}), []string{"spec.kafka.bootstrapServers"}},
		{"negative replicas", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Replicas = ptr(int32(-1))
		}), []string{"spec.replicas", "greater than or equal to 0"}},
		{"groupId with a space", cluster(func(c *v1.ConnectCluster) {
			c.Spec.GroupID = ptr("my group")
		}), []string{"spec.groupId"}},
		{"SASL mechanism GSSAPI", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Kafka.SASL = &v1.KafkaSASL{Mechanism: "GSSAPI",
				Username: v1.SecretKeyRef{Name: "kafka-user", Key: "username"},
				Password: v1.SecretKeyRef{Name: "kafka-user", Key: "password"}}
		}), []string{"spec.kafka.sasl.mechanism", "PLAIN", "SCRAM-SHA-512"}},
		{"SASL password without a key", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Kafka.SASL = &v1.KafkaSASL{Mechanism: v1.SASLMechanismScramSHA512,
				Username: v1.SecretKeyRef{Name: "kafka-user", Key: "username"},
				Password: v1.SecretKeyRef{Name: "kafka-user"}}
		}), []string{"spec.kafka.sasl.password.key"}},
		{"TLS certificate without key", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Kafka.TLS = &v1.KafkaTLS{Certificate: &v1.SecretKeyRef{Name: "kafka-client", Key: "tls.crt"}}
		}), []string{"spec.kafka.tls", "certificate and kafka.tls.key go together"}},
		{"same topic for configs and offsets", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Storage.ConfigTopic = ptr("connect-internal")
			c.Spec.Storage.OffsetTopic = ptr("connect-internal")
		}), []string{"spec.storage.offsetTopic", "must be different topics"}},
		{"storage topic name with a slash", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Storage.StatusTopic = ptr("team/status")
		}), []string{"spec.storage.statusTopic"}},
		{"storage replicationFactor zero", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Storage.ReplicationFactor = ptr(int32(0))
		}), []string{"spec.storage.replicationFactor", "-1 (the brokers' default) or at least 1"}},
		{"lostWorkerDelay above an hour", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Rebalance.LostWorkerDelay = dur("2h")
		}), []string{"spec.rebalance.lostWorkerDelay", "between 0s and 1h"}},
		{"maxTasksPerWorker zero", cluster(func(c *v1.ConnectCluster) {
			c.Spec.MaxTasksPerWorker = ptr(int32(0))
		}), []string{"spec.maxTasksPerWorker"}},
		{"pod labels take the operator's selector label", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Pod = &v1.PodOverrides{Labels: map[string]string{"app.kubernetes.io/instance": "x", "team": "data"}}
		}), []string{"spec.pod.labels", "the operator selects worker pods by them"}},
		{"metrics on the REST port", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Metrics.Port = ptr(int32(8083))
		}), []string{"spec.metrics.port", "must differ from 8083"}},
		{"imagePullPolicy unknown", cluster(func(c *v1.ConnectCluster) {
			c.Spec.ImagePullPolicy = corev1.PullPolicy("Sometimes")
		}), []string{"spec.imagePullPolicy", "IfNotPresent"}},
		{"connector tasksMax zero", connector(func(k *v1.KafkaConnector) {
			k.Spec.TasksMax = ptr(int32(0))
		}), []string{"spec.tasksMax", "greater than or equal to 1"}},
		{"connector config sets connector.class", connector(func(k *v1.KafkaConnector) {
			k.Spec.Config["connector.class"] = "FileSource"
		}), []string{"spec.config", "connector.class", "use spec.class"}},
		{"connector config sets tasks.max", connector(func(k *v1.KafkaConnector) {
			k.Spec.Config["tasks.max"] = "3"
		}), []string{"spec.config", "tasks.max", "spec.tasksMax"}},
		{"connector config sets name", connector(func(k *v1.KafkaConnector) {
			k.Spec.Config["name"] = "other"
		}), []string{"spec.config", "metadata.name"}},
		{"connector state unknown", connector(func(k *v1.KafkaConnector) {
			k.Spec.State = "suspended"
		}), []string{"spec.state", "running", "paused", "stopped"}},
		{"connector without clusterRef name", connector(func(k *v1.KafkaConnector) {
			k.Spec.ClusterRef.Name = ""
		}), []string{"spec.clusterRef.name"}},
		{"connector without class", connector(func(k *v1.KafkaConnector) {
			k.Spec.Class = ""
		}), []string{"spec.class"}},
		{"connector negative maxRestarts", connector(func(k *v1.KafkaConnector) {
			k.Spec.AutoRestart.MaxRestarts = ptr(int32(-1))
		}), []string{"spec.autoRestart.maxRestarts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, k8sClient.Create(ctx(t), tc.obj), tc.want...)
		})
	}
}

// TestEveryOperatorOwnedKeyRefused checks each key of v1alpha1.OperatorOwnedWorkerConfigKeys
// against the API server, and that the CEL rule lists no key the Go slice lacks, so the two
// lists cannot drift apart.
func TestEveryOperatorOwnedKeyRefused(t *testing.T) {
	ns := newNamespace(t)
	for _, key := range v1.OperatorOwnedWorkerConfigKeys {
		t.Run(key, func(t *testing.T) {
			cc := validCluster(ns, "")
			cc.GenerateName = "owned-"
			cc.Spec.Config = map[string]string{key: "x"}
			requireRefused(t, k8sClient.Create(ctx(t), cc), "spec.config", "config may not set "+key+":")
		})
	}
	t.Run("a key the operator does not own is accepted", func(t *testing.T) {
		cc := validCluster(ns, "free-key")
		cc.Spec.Config = map[string]string{"offset.flush.interval.ms": "1000", "group.id.suffix": "x", "rest.portal": "y"}
		if err := k8sClient.Create(ctx(t), cc); err != nil {
			t.Fatalf("creating a cluster with non-owned config keys: %v", err)
		}
	})

	ruleKeys := celListedKeys(t, "connect.conveyor.dev_connectclusters.yaml", "group.id")
	slices.Sort(ruleKeys)
	goKeys := slices.Clone(v1.OperatorOwnedWorkerConfigKeys)
	slices.Sort(goKeys)
	if !slices.Equal(ruleKeys, goKeys) {
		t.Errorf("the CEL rule on spec.config lists %v, OperatorOwnedWorkerConfigKeys %v: keep them equal", ruleKeys, goKeys)
	}
	ruleKeys = celListedKeys(t, "connect.conveyor.dev_kafkaconnectors.yaml", "connector.class")
	slices.Sort(ruleKeys)
	goKeys = slices.Clone(v1.ReservedConnectorConfigKeys)
	slices.Sort(goKeys)
	if !slices.Equal(ruleKeys, goKeys) {
		t.Errorf("the CEL rule on KafkaConnector spec.config lists %v, ReservedConnectorConfigKeys %v: keep them equal", ruleKeys, goKeys)
	}
}

// celListedKeys returns the quoted strings of the first x-kubernetes-validations rule of the
// generated CRD that mentions marker.
func celListedKeys(t *testing.T, crdFile, marker string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "crd", "bases", crdFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parsing %s: %v", crdFile, err)
	}
	var rule string
	var walk func(any)
	walk = func(n any) {
		switch v := n.(type) {
		case map[string]any:
			if r, ok := v["rule"].(string); ok && rule == "" && strings.Contains(r, "'"+marker+"'") {
				rule = r
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	if rule == "" {
		t.Fatalf("%s has no CEL rule mentioning %q", crdFile, marker)
	}
	var keys []string
	for _, m := range regexp.MustCompile(`'([^']+)'`).FindAllStringSubmatch(rule, -1) {
		keys = append(keys, m[1])
	}
	return keys
}

func timeParse(s string) (*metav1.Duration, error) {
	var d metav1.Duration
	if err := d.UnmarshalJSON([]byte(fmt.Sprintf("%q", s))); err != nil {
		return nil, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	return &d, nil
}

// TestInvalidUnstructuredRefused covers mistakes that typed Go clients cannot make but YAML
// authors can: missing required objects, wrong types, strings that are not durations.
func TestInvalidUnstructuredRefused(t *testing.T) {
	ns := newNamespace(t)
	obj := func(kind string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1.GroupVersion.String(),
			"kind":       kind,
			"metadata":   map[string]any{"generateName": "raw-", "namespace": ns},
		}}
		if spec != nil {
			u.Object["spec"] = spec
		}
		return u
	}
	kafka := map[string]any{"bootstrapServers": "kafka:9092"}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want []string
	}{
		{"ConnectCluster without spec", obj("ConnectCluster", nil), []string{"spec", "Required value"}},
		{"ConnectCluster without kafka", obj("ConnectCluster", map[string]any{"replicas": int64(1)}), []string{"spec.kafka", "Required value"}},
		{"lostWorkerDelay that is not a duration", obj("ConnectCluster", map[string]any{
			"kafka": kafka, "rebalance": map[string]any{"lostWorkerDelay": "soon"}}), []string{"spec.rebalance.lostWorkerDelay"}},
		{"replicas as a string", obj("ConnectCluster", map[string]any{"kafka": kafka, "replicas": "three"}), []string{"spec.replicas", "integer"}},
		{"KafkaConnector without clusterRef", obj("KafkaConnector", map[string]any{"class": "FileSink"}), []string{"spec.clusterRef", "Required value"}},
		{"KafkaConnector config value not a string", obj("KafkaConnector", map[string]any{
			"clusterRef": map[string]any{"name": "demo"}, "class": "FileSink", "config": map[string]any{"batch.size": int64(100)}}), []string{"spec.config.batch.size", "string"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, k8sClient.Create(ctx(t), tc.obj), tc.want...)
		})
	}
}
