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

package autoscaling

import (
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func TestFloor(t *testing.T) {
	cases := []struct{ tasks, per, want int32 }{
		{0, 8, 0}, {1, 8, 1}, {8, 8, 1}, {9, 8, 2}, {16, 8, 2}, {17, 8, 3}, {5, 0, 0}, {-3, 8, 0},
		{2147483647, 1, v1alpha1.MaxWorkers}, {5000, 1, v1alpha1.MaxWorkers}, // one cap for every floor
	}
	for _, c := range cases {
		if got := Floor(c.tasks, c.per); got != c.want {
			t.Errorf("Floor(%d, %d) = %d, want %d", c.tasks, c.per, got, c.want)
		}
	}
}

func TestAutoscalingDecision(t *testing.T) {
	cases := []struct {
		name             string
		in               BoundsInput
		wantMin, wantMax int32
		wantRaised       bool
		wantReason       string
	}{
		{"no tasks: min stays, max collapses to min",
			BoundsInput{MinReplicas: 1, MaxReplicas: 10, MaxTasksPerWorker: 8, TotalEffectiveTasks: 0}, 1, 1, false, v1alpha1.ReasonWithinRequested},
		{"sink over 4 partitions: max capped at the task count",
			BoundsInput{MinReplicas: 1, MaxReplicas: 10, MaxTasksPerWorker: 8, TotalEffectiveTasks: 4}, 1, 4, false, v1alpha1.ReasonWithinRequested},
		{"cdc source tasksMax 10 -> 1 task: one worker at most",
			BoundsInput{MinReplicas: 1, MaxReplicas: 10, MaxTasksPerWorker: 8, TotalEffectiveTasks: 1}, 1, 1, false, v1alpha1.ReasonWithinRequested},
		{"many tasks: maxReplicas is the cap",
			BoundsInput{MinReplicas: 2, MaxReplicas: 10, MaxTasksPerWorker: 8, TotalEffectiveTasks: 40}, 5, 10, true, v1alpha1.ReasonTaskFloor},
		{"floor at min: not raised",
			BoundsInput{MinReplicas: 2, MaxReplicas: 10, MaxTasksPerWorker: 8, TotalEffectiveTasks: 16}, 2, 10, false, v1alpha1.ReasonWithinRequested},
		{"capacity overrides maxReplicas",
			BoundsInput{MinReplicas: 1, MaxReplicas: 3, MaxTasksPerWorker: 2, TotalEffectiveTasks: 10}, 5, 5, true, v1alpha1.ReasonTaskFloorAboveMaxReplicas},
		{"min above task count keeps max at min",
			BoundsInput{MinReplicas: 3, MaxReplicas: 10, MaxTasksPerWorker: 8, TotalEffectiveTasks: 2}, 3, 3, false, v1alpha1.ReasonWithinRequested},
		{"an uncapped floor (tasksMax 100000 at 1 per worker) stops at the one cap",
			BoundsInput{MinReplicas: 1, MaxReplicas: 10, MaxTasksPerWorker: 1, TotalEffectiveTasks: 100000}, v1alpha1.MaxWorkers, v1alpha1.MaxWorkers, true, v1alpha1.ReasonTaskFloorAboveMaxReplicas},
		{"hard maxReplicas: the floor never passes it, tasks wait",
			BoundsInput{MinReplicas: 1, MaxReplicas: 3, MaxTasksPerWorker: 2, TotalEffectiveTasks: 10, HardMax: true}, 3, 3, false, v1alpha1.ReasonTasksWaitForMaxReplicas},
		{"hard maxReplicas within capacity changes nothing",
			BoundsInput{MinReplicas: 1, MaxReplicas: 10, MaxTasksPerWorker: 8, TotalEffectiveTasks: 4, HardMax: true}, 1, 4, false, v1alpha1.ReasonWithinRequested},
		{"degenerate inputs are clamped",
			BoundsInput{MinReplicas: 0, MaxReplicas: 0, MaxTasksPerWorker: 0, TotalEffectiveTasks: -4}, 1, 1, false, v1alpha1.ReasonWithinRequested},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := AutoscalingDecision(c.in)
			if d.Min != c.wantMin || d.Max != c.wantMax || d.CapacityRaised != c.wantRaised || d.Reason != c.wantReason {
				t.Fatalf("AutoscalingDecision(%+v) = %+v; want min %d max %d raised %v reason %s", c.in, d, c.wantMin, c.wantMax, c.wantRaised, c.wantReason)
			}
			if d.Min > d.Max {
				t.Fatalf("min %d above max %d", d.Min, d.Max)
			}
			cond := d.Condition(7)
			if cond.Type != v1alpha1.ConnectClusterCapacityRaised || cond.ObservedGeneration != 7 || (cond.Status == "True") != c.wantRaised || cond.Message == "" {
				t.Fatalf("condition %+v", cond)
			}
		})
	}
	d := AutoscalingDecision(BoundsInput{MinReplicas: 1, MaxReplicas: 3, MaxTasksPerWorker: 2, TotalEffectiveTasks: 10})
	if !strings.Contains(d.Message, "maxReplicas=3") || !strings.Contains(d.Message, "10 tasks") {
		t.Errorf("message %q does not explain the override", d.Message)
	}
	d = AutoscalingDecision(BoundsInput{MinReplicas: 1, MaxReplicas: 3, MaxTasksPerWorker: 2, TotalEffectiveTasks: 10, HardMax: true})
	if !strings.Contains(d.Message, "4 of 10 tasks wait") || !strings.Contains(d.Message, "hardMaxReplicas") {
		t.Errorf("message %q does not say which tasks wait", d.Message)
	}
}
