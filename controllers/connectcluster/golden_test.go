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

package connectcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const testImage = "ghcr.io/conveyor-dev/conveyor:v0.1.0"

// minimalCluster is a cluster as a user would write it, with the API
// server's defaults applied.
func minimalCluster() *v1alpha1.ConnectCluster {
	return &v1alpha1.ConnectCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ConnectCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "orders", Namespace: "data", UID: "0f6d1a7e-1111-4c3b-9a55-000000000001", Generation: 1,
		},
		Spec: v1alpha1.ConnectClusterSpec{
			Replicas: ptr.To[int32](2),
			Kafka:    v1alpha1.KafkaConnection{BootstrapServers: "kafka-0.kafka:9092,kafka-1.kafka:9092"},
		},
	}
}

// secureCluster has TLS and SASL from Secrets, pod overrides, resources,
// a user token Secret, a pinned group and topics and worker settings.
func secureCluster() *v1alpha1.ConnectCluster {
	cc := minimalCluster()
	cc.Name = "payments"
	cc.Spec.Image = "registry.example.com/conveyor:pinned"
	cc.Spec.ImagePullPolicy = corev1.PullIfNotPresent
	cc.Spec.GroupID = ptr.To("payments-connect")
	cc.Spec.ConnectorAccess = &v1alpha1.ConnectorAccess{Secrets: []string{"payments-db", "vendor-api"}, FilePaths: []string{"/opt/connectors/creds"}, EnvVariables: []string{"VENDOR_REGION"},
		FileConnectors:          []v1alpha1.FileConnectorVolume{{Path: "/data/in", ClaimName: "payments-in"}, {Path: "/data/out", SizeLimit: ptr.To(resource.MustParse("2Gi"))}},
		AmbientCloudCredentials: true}
	tcp := corev1.ProtocolTCP
	cc.Spec.NetworkPolicy.Egress = []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.20.30.40/32"}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(5432))}},
	}}
	cc.Spec.Metrics.Authentication.TokenSecret = &v1alpha1.SecretKeyRef{Name: "scrape-token", Key: "bearer"}
	cc.Spec.Kafka = v1alpha1.KafkaConnection{
		BootstrapServers: "broker-0.kafka.svc:9093,broker-1.kafka.svc:9093",
		TLS: &v1alpha1.KafkaTLS{
			CA:          &v1alpha1.SecretKeyRef{Name: "kafka-ca", Key: "ca.crt"},
			Certificate: &v1alpha1.SecretKeyRef{Name: "payments-client", Key: "tls.crt"},
			Key:         &v1alpha1.SecretKeyRef{Name: "payments-client", Key: "tls.key"},
		},
		SASL: &v1alpha1.KafkaSASL{
			Mechanism: v1alpha1.SASLMechanismScramSHA512,
			Username:  v1alpha1.SecretKeyRef{Name: "payments-sasl", Key: "user"},
			Password:  v1alpha1.SecretKeyRef{Name: "payments-sasl", Key: "password"},
		},
	}
	cc.Spec.Storage = v1alpha1.StorageSpec{
		ConfigTopic:       ptr.To("payments.connect.configs"),
		OffsetTopic:       ptr.To("payments.connect.offsets"),
		StatusTopic:       ptr.To("payments.connect.status"),
		ReplicationFactor: ptr.To[int32](3),
		OffsetPartitions:  ptr.To[int32](50),
		StatusPartitions:  ptr.To[int32](10),
	}
	cc.Spec.Config = map[string]string{
		"offset.flush.interval.ms":       "5000",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
		"producer.compression.type":      "zstd",
	}
	cc.Spec.MaxTasksPerWorker = ptr.To[int32](4)
	cc.Spec.Rebalance.LostWorkerDelay = &metav1.Duration{Duration: 15 * time.Second}
	cc.Spec.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	cc.Spec.Pod = &v1alpha1.PodOverrides{
		Labels:       map[string]string{"team": "payments"},
		Annotations:  map[string]string{"example.com/owner": "payments"},
		NodeSelector: map[string]string{"node-role.example.com/connect": "true"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-west-1a", "eu-west-1b"},
				}},
			}}},
		}},
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "connect", Effect: corev1.TaintEffectNoSchedule}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{clusterkit.LabelCluster: "payments"}},
		}},
		PriorityClassName: "data-critical",
		ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "registry-creds"}},
		Rack:              &v1alpha1.RackSpec{TopologyKey: corev1.LabelTopologyZone},
	}
	cc.Spec.RestAPI.Authentication.TokenSecret = &v1alpha1.SecretKeyRef{Name: "payments-rest", Key: "bearer"}
	cc.Spec.NetworkPolicy.MetricsNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}
	cc.Spec.Metrics.Port = ptr.To[int32](9500)
	return cc
}

// autoscalingCluster lets KEDA own the replica count; metrics, REST
// authentication and the NetworkPolicy are off.
func autoscalingCluster() *v1alpha1.ConnectCluster {
	cc := minimalCluster()
	cc.Name = "clicks"
	cc.Spec.Autoscaling = &v1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](12)}
	cc.Spec.Metrics.Enabled = ptr.To(false)
	cc.Spec.RestAPI.Authentication.Enabled = ptr.To(false)
	cc.Spec.NetworkPolicy.Enabled = ptr.To(false)
	cc.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	return cc
}

func TestGoldenChildren(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   *v1alpha1.ConnectCluster
		in   ChildInputs
	}{
		{"minimal", minimalCluster(), ChildInputs{Image: testImage, OperatorNamespace: "conveyor-system", Replicas: ptr.To[int32](2), RestToken: "test-token-not-secret", MetricsToken: "test-metrics-token-not-secret"}},
		{"tls-sasl-overrides", secureCluster(), ChildInputs{Image: "registry.example.com/conveyor:pinned", OperatorNamespace: "conveyor-system", Replicas: ptr.To[int32](3), SASLUsername: "payments-connect",
			SecretNames: []string{"payments-db", "vendor-api"}}},
		{"autoscaling", autoscalingCluster(), ChildInputs{Image: testImage, OperatorNamespace: "conveyor-system", Replicas: nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := BuildChildren(tc.cc, tc.in)
			if err != nil {
				t.Fatalf("BuildChildren: %v", err)
			}
			var buf bytes.Buffer
			for _, o := range ch.Objects() {
				u, err := clusterkit.ApplyForm(o)
				if err != nil {
					t.Fatal(err)
				}
				b, err := yaml.Marshal(u.Object)
				if err != nil {
					t.Fatal(err)
				}
				buf.WriteString("---\n")
				buf.Write(b)
			}
			testkit.Golden(t, filepath.Join("testdata", tc.name+".golden.yaml"), buf.Bytes())

			// The rendered worker.properties is what conveyor-worker loads:
			// parse it back with the worker's own code and validate it.
			props := ch.ConfigMap.Data[ConfigFileName]
			dir := t.TempDir()
			path := filepath.Join(dir, ConfigFileName)
			if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv(workerconfig.EnvPodIP, "10.1.2.3")
			// The Downward API as the kubelet resolves it, for a pod whose
			// node is in zone eu-west-1b (PodTopologyLabels copies the
			// node's topology labels onto the pod).
			podLabels := map[string]string{corev1.LabelTopologyZone: "eu-west-1b"}
			wantRack := ""
			t.Setenv(workerconfig.EnvRack, "")
			for _, e := range ch.Deployment.Spec.Template.Spec.Containers[0].Env {
				if e.Name != EnvRack {
					continue
				}
				key, ok := strings.CutPrefix(e.ValueFrom.FieldRef.FieldPath, "metadata.labels['")
				key, ok2 := strings.CutSuffix(key, "']")
				if !ok || !ok2 {
					t.Fatalf("%s from %q: not a pod label", EnvRack, e.ValueFrom.FieldRef.FieldPath)
				}
				wantRack = podLabels[key]
				t.Setenv(workerconfig.EnvRack, wantRack)
			}
			if (tc.cc.Spec.Pod != nil && tc.cc.Spec.Pod.Rack != nil) != (wantRack != "") {
				t.Fatalf("pod.rack %+v but the rack from the pod's labels is %q", tc.cc.Spec.Pod, wantRack)
			}
			loaded, err := workerconfig.Load(path)
			if err != nil {
				t.Fatalf("the worker cannot load the rendered config: %v\n%s", err, props)
			}
			if got, want := loaded.AdvertisedURL(), "http://10.1.2.3:8083"; got != want {
				t.Errorf("advertised URL %s, want %s (rest.advertised from POD_IP)", got, want)
			}
			if got, want := loaded.RestListenAddress(), "10.1.2.3:8083"; got != want {
				t.Errorf("REST listen address %s, want %s (rest.host.name from POD_IP: pods sharing a network namespace must not collide)", got, want)
			}
			if loaded.ClientRack != wantRack {
				t.Errorf("client.rack %q, want %q (the node's zone, from pod.rack)", loaded.ClientRack, wantRack)
			}
			if loaded.GroupID != tc.cc.GroupID() || loaded.ConfigStorageTopic != tc.cc.ConfigTopic() {
				t.Errorf("group %q / config topic %q do not match the cluster", loaded.GroupID, loaded.ConfigStorageTopic)
			}
		})
	}
}
