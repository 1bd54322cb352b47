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

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConnectClusterDerivedNames(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		name                           string
		spec                           ConnectClusterSpec
		statusGroup                    string
		group, configs, offsets, stats string
	}{
		{"defaults from namespace and name", ConnectClusterSpec{}, "", "team-a.demo", "team-a.demo-configs", "team-a.demo-offsets", "team-a.demo-status"},
		{"recorded group wins over the default", ConnectClusterSpec{}, "recorded", "recorded", "recorded-configs", "recorded-offsets", "recorded-status"},
		{"spec group wins", ConnectClusterSpec{GroupID: s("payments")}, "recorded", "payments", "payments-configs", "payments-offsets", "payments-status"},
		{"explicit topics", ConnectClusterSpec{GroupID: s("g"), Storage: StorageSpec{ConfigTopic: s("c"), OffsetTopic: s("o"), StatusTopic: s("st")}}, "", "g", "c", "o", "st"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc := &ConnectCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "demo"}, Spec: tc.spec}
			cc.Status.GroupID = tc.statusGroup
			got := []string{cc.GroupID(), cc.ConfigTopic(), cc.OffsetTopic(), cc.StatusTopic()}
			want := []string{tc.group, tc.configs, tc.offsets, tc.stats}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("got %q, want %q (all: %v)", got[i], want[i], got)
				}
			}
		})
	}
}

func TestConnectClusterDefaultsWhenUnset(t *testing.T) {
	cc := &ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if cc.RequestedReplicas() != DefaultReplicas || cc.MaxTasksPerWorker() != DefaultMaxTasksPerWorker ||
		cc.LostWorkerDelay() != 30*time.Second || cc.OffsetPartitions() != 25 || cc.StatusPartitions() != 5 ||
		cc.StorageReplicationFactor() != 3 || cc.MetricsPort() != 9404 {
		t.Errorf("unexpected defaults for an empty spec")
	}
	if !cc.RestAuthenticationEnabled() || !cc.NetworkPolicyEnabled() || !cc.MetricsEnabled() || cc.AutoscalingEnabled() {
		t.Errorf("REST authentication, network policy and metrics default on, autoscaling off")
	}
	var a *AutoscalingSpec
	if a.MinReplicasOrDefault() != 1 || a.MaxReplicasOrDefault() != 10 {
		t.Errorf("nil autoscaling bounds: %d..%d", a.MinReplicasOrDefault(), a.MaxReplicasOrDefault())
	}
	off := false
	cc.Spec.RestAPI.Authentication.Enabled = &off
	if cc.RestAuthenticationEnabled() {
		t.Errorf("restApi.authentication.enabled=false ignored")
	}
	if got := cc.RestTokenSecret(); got != (SecretKeyRef{Name: "x-rest-token", Key: "token"}) {
		t.Errorf("RestTokenSecret() = %+v", got)
	}
}

func TestKafkaConnectorHelpers(t *testing.T) {
	k := &KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: "orders-sink"}}
	if k.RequestedTasksMax() != 1 || k.TargetState() != ConnectorTargetRunning || !k.AutoRestartEnabled() {
		t.Errorf("defaults: tasksMax %d, state %q, autoRestart %v", k.RequestedTasksMax(), k.TargetState(), k.AutoRestartEnabled())
	}
	if k.SinkGroup() != "connect-orders-sink" {
		t.Errorf("SinkGroup() = %q", k.SinkGroup())
	}
	for target, want := range map[ConnectorTargetState]ConnectorState{
		ConnectorTargetRunning: ConnectorStateRunning, ConnectorTargetPaused: ConnectorStatePaused, ConnectorTargetStopped: ConnectorStateStopped,
	} {
		if got := target.RuntimeState(); got != want {
			t.Errorf("%s.RuntimeState() = %s, want %s", target, got, want)
		}
	}

	if _, ok := k.RestartRequested(); ok {
		t.Errorf("restart requested without the annotation")
	}
	k.Annotations = map[string]string{RestartAnnotation: "2026-11-29T13:00:00Z"}
	if v, ok := k.RestartRequested(); !ok || v != "2026-11-29T13:00:00Z" {
		t.Errorf("RestartRequested() = %q, %v", v, ok)
	}
	k.Status.LastRestartAnnotation = "2026-11-29T13:00:00Z"
	if _, ok := k.RestartRequested(); ok {
		t.Errorf("an already handled value asked for another restart")
	}
}
