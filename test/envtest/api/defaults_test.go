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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestDefaultsApplied creates objects that set only what is required, written generically so
// that no client-side zero values reach the server, reads them back and compares every
// defaulted field with the Go constants the reconcilers use.
func TestDefaultsApplied(t *testing.T) {
	ns := newNamespace(t)

	t.Run("ConnectCluster", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1.GroupVersion.String(),
			"kind":       "ConnectCluster",
			"metadata":   map[string]any{"name": "minimal", "namespace": ns},
			"spec": map[string]any{
				"kafka":       map[string]any{"bootstrapServers": "kafka:9092"},
				"autoscaling": map[string]any{"enabled": true},
				"pod":         map[string]any{"rack": map[string]any{}},
			},
		}}
		if err := k8sClient.Create(ctx(t), u); err != nil {
			t.Fatalf("creating a minimal ConnectCluster: %v", err)
		}
		var cc v1.ConnectCluster
		if err := k8sClient.Get(ctx(t), key(ns, "minimal"), &cc); err != nil {
			t.Fatal(err)
		}
		s := cc.Spec
		checkInt32(t, "spec.replicas", s.Replicas, v1.DefaultReplicas)
		checkInt32(t, "spec.maxTasksPerWorker", s.MaxTasksPerWorker, v1.DefaultMaxTasksPerWorker)
		checkInt32(t, "spec.storage.replicationFactor", s.Storage.ReplicationFactor, v1.DefaultStorageReplication)
		checkInt32(t, "spec.storage.offsetPartitions", s.Storage.OffsetPartitions, v1.DefaultOffsetPartitions)
		checkInt32(t, "spec.storage.statusPartitions", s.Storage.StatusPartitions, v1.DefaultStatusPartitions)
		checkDuration(t, "spec.rebalance.lostWorkerDelay", s.Rebalance.LostWorkerDelay, v1.DefaultLostWorkerDelay)
		checkBool(t, "spec.restApi.authentication.enabled", s.RestAPI.Authentication.Enabled, true)
		checkBool(t, "spec.networkPolicy.enabled", s.NetworkPolicy.Enabled, true)
		checkBool(t, "spec.metrics.enabled", s.Metrics.Enabled, true)
		checkInt32(t, "spec.metrics.port", s.Metrics.Port, v1.DefaultMetricsPort)
		if s.GroupID != nil {
			t.Errorf("spec.groupId = %q, want it left unset (the operator records its default in status)", *s.GroupID)
		}
		if s.Storage.ConfigTopic != nil || s.Storage.OffsetTopic != nil || s.Storage.StatusTopic != nil {
			t.Errorf("storage topic names were defaulted in the spec: %+v", s.Storage)
		}
		a := s.Autoscaling
		if a == nil {
			t.Fatal("spec.autoscaling vanished")
		}
		checkInt32(t, "spec.autoscaling.minReplicas", a.MinReplicas, v1.DefaultMinReplicas)
		checkInt32(t, "spec.autoscaling.maxReplicas", a.MaxReplicas, v1.DefaultMaxReplicas)
		checkInt64(t, "spec.autoscaling.lagThreshold", a.LagThreshold, v1.DefaultLagThreshold)
		checkInt64(t, "spec.autoscaling.activationLagThreshold", a.ActivationLagThreshold, v1.DefaultActivationLagThreshold)
		checkDuration(t, "spec.autoscaling.pollingInterval", a.PollingInterval, v1.DefaultPollingInterval)
		checkDuration(t, "spec.autoscaling.cooldownPeriod", a.CooldownPeriod, v1.DefaultCooldownPeriod)
		if got := s.Pod.Rack.TopologyKey; got != v1.DefaultRackTopologyKey {
			t.Errorf("spec.pod.rack.topologyKey = %q, want %q", got, v1.DefaultRackTopologyKey)
		}

		// The helpers agree with what the server stored and derive the rest.
		if got, want := cc.GroupID(), ns+".minimal"; got != want {
			t.Errorf("GroupID() = %q, want %q", got, want)
		}
		if got, want := cc.OffsetTopic(), ns+".minimal-offsets"; got != want {
			t.Errorf("OffsetTopic() = %q, want %q", got, want)
		}
		if got := cc.RestTokenSecret(); got.Name != "minimal-rest-token" || got.Key != "token" {
			t.Errorf("RestTokenSecret() = %+v", got)
		}
	})

	t.Run("KafkaConnector", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1.GroupVersion.String(),
			"kind":       "KafkaConnector",
			"metadata":   map[string]any{"name": "minimal", "namespace": ns},
			"spec": map[string]any{
				"clusterRef": map[string]any{"name": "minimal"},
				"class":      "RangeSource",
			},
		}}
		if err := k8sClient.Create(ctx(t), u); err != nil {
			t.Fatalf("creating a minimal KafkaConnector: %v", err)
		}
		var kc v1.KafkaConnector
		if err := k8sClient.Get(ctx(t), key(ns, "minimal"), &kc); err != nil {
			t.Fatal(err)
		}
		checkInt32(t, "spec.tasksMax", kc.Spec.TasksMax, v1.DefaultTasksMax)
		if kc.Spec.State != v1.DefaultConnectorState {
			t.Errorf("spec.state = %q, want %q", kc.Spec.State, v1.DefaultConnectorState)
		}
		checkBool(t, "spec.autoRestart.enabled", kc.Spec.AutoRestart.Enabled, v1.DefaultAutoRestartEnabled)
		if kc.Spec.AutoRestart.MaxRestarts != nil {
			t.Errorf("spec.autoRestart.maxRestarts = %d, want unset (no limit)", *kc.Spec.AutoRestart.MaxRestarts)
		}
	})
}

func checkInt32(t *testing.T, field string, got *int32, want int32) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want default %d", field, deref(got), want)
	}
}

func checkInt64(t *testing.T, field string, got *int64, want int64) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want default %d", field, deref(got), want)
	}
}

func checkBool(t *testing.T, field string, got *bool, want bool) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want default %v", field, deref(got), want)
	}
}

func checkDuration(t *testing.T, field string, got *metav1.Duration, want time.Duration) {
	t.Helper()
	if got == nil || got.Duration != want {
		t.Errorf("%s = %v, want default %v", field, deref(got), want)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return "<unset>"
	}
	return *p
}
