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
	"fmt"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// Capacity is the outcome of the capacity rule for a cluster without autoscaling.
type Capacity struct {
	// Replicas is the number of workers the Deployment runs.
	Replicas int32
	// Floor is ceil(totalEffectiveTasks / maxTasksPerWorker); 0 when there is no limit.
	Floor int32
	// Raised is true when Floor is above the requested replicas, so the
	// Deployment runs more workers than spec.replicas says.
	Raised bool
	// Reason and Message explain the decision for a condition.
	Reason  string
	Message string
}

// CapacityFloor returns the fewest workers that can run totalEffectiveTasks
// tasks when one worker runs at most maxTasksPerWorker of them:
// ceil(totalEffectiveTasks / maxTasksPerWorker). A non-positive
// maxTasksPerWorker means "no limit" and gives 0, as do non-positive totals.
// The result is capped at MaxReplicaFloor.
func CapacityFloor(totalEffectiveTasks, maxTasksPerWorker int64) int32 {
	if maxTasksPerWorker <= 0 || totalEffectiveTasks <= 0 {
		return 0
	}
	floor := (totalEffectiveTasks + maxTasksPerWorker - 1) / maxTasksPerWorker
	if floor > MaxReplicaFloor {
		return MaxReplicaFloor
	}
	return int32(floor)
}

// MaxReplicaFloor caps the replicas the capacity rule may add: the one
// cap of every derived replica count, v1alpha1.MaxWorkers.
const MaxReplicaFloor = v1alpha1.MaxWorkers

// DesiredReplicas applies the capacity rule of a cluster without
// autoscaling: the Deployment runs max(requested, floor) workers with
// floor = ceil(totalEffectiveTasks / maxTasksPerWorker). The spec is never
// written: a raised count is reported through Reason and Message instead.
func DesiredReplicas(requested int32, totalEffectiveTasks, maxTasksPerWorker int64) Capacity {
	if requested < 0 {
		requested = 0
	}
	floor := CapacityFloor(totalEffectiveTasks, maxTasksPerWorker)
	if floor > requested {
		return Capacity{
			Replicas: floor,
			Floor:    floor,
			Raised:   true,
			Reason:   v1alpha1.ReasonTaskFloor,
			Message: fmt.Sprintf("running %d workers instead of spec.replicas=%d: connectors need %d tasks and maxTasksPerWorker is %d (ceil(%d/%d)=%d)",
				floor, requested, totalEffectiveTasks, maxTasksPerWorker, totalEffectiveTasks, maxTasksPerWorker, floor) + floorCapNote(totalEffectiveTasks, maxTasksPerWorker),
		}
	}
	msg := fmt.Sprintf("running spec.replicas=%d workers", requested)
	if floor > 0 {
		msg += fmt.Sprintf("; connectors need at least %d (%d tasks, at most %d per worker)", floor, totalEffectiveTasks, maxTasksPerWorker)
	}
	return Capacity{Replicas: requested, Floor: floor, Reason: v1alpha1.ReasonWithinRequested, Message: msg}
}

// floorCapNote says when MaxReplicaFloor cut the floor, and the fix.
func floorCapNote(totalEffectiveTasks, maxTasksPerWorker int64) string {
	if maxTasksPerWorker <= 0 || (totalEffectiveTasks+maxTasksPerWorker-1)/maxTasksPerWorker <= MaxReplicaFloor {
		return ""
	}
	return fmt.Sprintf(", capped at %d workers: some tasks stay unassigned; lower the connectors' tasksMax or raise maxTasksPerWorker", MaxReplicaFloor)
}

// HardCeiling applies autoscaling.hardMaxReplicas to a capacity decision
// while the Deployment's count is the operator's (no ScaledObject active,
// KEDA absent): the floor never raises the workers above maxReplicas, and
// the decision says how many tasks wait. Without a hard ceiling c is
// returned as it is.
func HardCeiling(cc *v1alpha1.ConnectCluster, c Capacity, totalEffectiveTasks, maxTasksPerWorker int64) Capacity {
	if !cc.AutoscalingEnabled() || !cc.Spec.Autoscaling.HardMaxReplicas {
		return c
	}
	ceiling := cc.Spec.Autoscaling.MaxReplicasOrDefault()
	if c.Replicas <= ceiling {
		return c
	}
	c.Replicas, c.Raised = ceiling, false
	c.Reason = v1alpha1.ReasonTasksWaitForMaxReplicas
	c.Message = clusterkit.TasksWaitMessage(totalEffectiveTasks, maxTasksPerWorker, int64(c.Floor), int64(ceiling))
	return c
}
