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
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func TestCapacityFloor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		total, per int64
		want       int32
	}{
		{"no tasks", 0, 4, 0},
		{"negative tasks", -3, 4, 0},
		{"no per-worker limit", 100, 0, 0},
		{"negative limit means none", 100, -1, 0},
		{"exact division", 8, 4, 2},
		{"rounds up", 9, 4, 3},
		{"one task", 1, 10, 1},
		{"limit one", 7, 1, 7},
		{"capped", 1 << 40, 1, MaxReplicaFloor},
		{"the probe's 125000 replicas", 1_000_000, 8, MaxReplicaFloor},
		{"just under the cap", 8000, 8, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CapacityFloor(tc.total, tc.per); got != tc.want {
				t.Fatalf("CapacityFloor(%d, %d) = %d, want %d", tc.total, tc.per, got, tc.want)
			}
		})
	}
}

func TestDesiredReplicas(t *testing.T) {
	for _, tc := range []struct {
		name          string
		requested     int32
		total, per    int64
		wantReplicas  int32
		wantRaised    bool
		wantReason    string
		wantInMessage string
	}{
		{"spec wins without connectors", 3, 0, 4, 3, false, v1alpha1.ReasonWithinRequested, "spec.replicas=3"},
		{"spec wins when above floor", 5, 8, 4, 5, false, v1alpha1.ReasonWithinRequested, "at least 2"},
		{"equal to floor is not raised", 2, 8, 4, 2, false, v1alpha1.ReasonWithinRequested, "spec.replicas=2"},
		{"floor raises", 1, 9, 4, 3, true, v1alpha1.ReasonTaskFloor, "instead of spec.replicas=1"},
		{"floor raises from zero", 0, 1, 4, 1, true, v1alpha1.ReasonTaskFloor, "need 1 tasks"},
		{"no limit keeps spec", 2, 1000, 0, 2, false, v1alpha1.ReasonWithinRequested, "spec.replicas=2"},
		{"negative request treated as zero", -1, 0, 4, 0, false, v1alpha1.ReasonWithinRequested, "spec.replicas=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DesiredReplicas(tc.requested, tc.total, tc.per)
			if got.Replicas != tc.wantReplicas || got.Raised != tc.wantRaised || got.Reason != tc.wantReason {
				t.Fatalf("DesiredReplicas(%d, %d, %d) = %+v, want replicas=%d raised=%v reason=%s",
					tc.requested, tc.total, tc.per, got, tc.wantReplicas, tc.wantRaised, tc.wantReason)
			}
			if !strings.Contains(got.Message, tc.wantInMessage) {
				t.Fatalf("message %q does not contain %q", got.Message, tc.wantInMessage)
			}
		})
	}
}

func TestDesiredReplicasSaysWhenCapped(t *testing.T) {
	c := DesiredReplicas(1, 1_000_000, 8)
	if c.Replicas != MaxReplicaFloor || !strings.Contains(c.Message, "capped at 1000") || !strings.Contains(c.Message, "maxTasksPerWorker") {
		t.Fatalf("%+v", c)
	}
	if c := DesiredReplicas(1, 8000, 8); strings.Contains(c.Message, "capped") {
		t.Fatalf("uncapped floor says capped: %+v", c)
	}
}

// autoscaling.hardMaxReplicas holds the operator's own count (KEDA absent)
// at maxReplicas too, saying how many tasks wait; without it, or within the
// ceiling, the capacity decision stands.
func TestHardCeilingHoldsTheFloor(t *testing.T) {
	cc := &v1alpha1.ConnectCluster{Spec: v1alpha1.ConnectClusterSpec{Autoscaling: &v1alpha1.AutoscalingSpec{Enabled: true, MaxReplicas: ptr.To[int32](2), HardMaxReplicas: true}}}
	c := HardCeiling(cc, DesiredReplicas(1, 150, 1), 150, 1)
	if c.Replicas != 2 || c.Reason != v1alpha1.ReasonTasksWaitForMaxReplicas || !strings.Contains(c.Message, "148 of 150 tasks wait") {
		t.Fatalf("hard ceiling: %+v", c)
	}
	soft := cc.DeepCopy()
	soft.Spec.Autoscaling.HardMaxReplicas = false
	if c := HardCeiling(soft, DesiredReplicas(1, 150, 1), 150, 1); c.Replicas != 150 {
		t.Fatalf("soft ceiling changed the floor: %+v", c)
	}
	if c := HardCeiling(cc, DesiredReplicas(1, 2, 1), 2, 1); c.Replicas != 2 || c.Reason == v1alpha1.ReasonTasksWaitForMaxReplicas {
		t.Fatalf("within the ceiling: %+v", c)
	}
}
