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

// Package autoscaling derives a ConnectCluster's KEDA ScaledObject (and the
// TriggerAuthentication its Kafka triggers use) from the cluster and its
// connectors, and decides the replica bounds. Everything here except the
// discovery check is a pure function of its inputs: no client, no clock.
//
// The ConnectCluster reconciler owns and applies the objects; this package
// only says what they must be.
package autoscaling

import (
	"fmt"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// BoundsInput is what the replica bounds depend on.
type BoundsInput struct {
	// MinReplicas and MaxReplicas are autoscaling.minReplicas/maxReplicas.
	MinReplicas int32
	MaxReplicas int32
	// MaxTasksPerWorker is spec.maxTasksPerWorker.
	MaxTasksPerWorker int32
	// TotalEffectiveTasks sums the effective tasks of the cluster's connectors.
	TotalEffectiveTasks int32
	// HardMax is autoscaling.hardMaxReplicas: the floor never raises the
	// bounds above MaxReplicas; tasks beyond it wait.
	HardMax bool
}

// Decision is the outcome of the autoscaling bounds rule.
type Decision struct {
	// Min and Max are the ScaledObject's minReplicaCount and maxReplicaCount.
	Min int32
	Max int32
	// Floor is ceil(total effective tasks / maxTasksPerWorker).
	Floor int32
	// CapacityRaised: the task floor raised Min above minReplicas (and, with
	// Reason TaskFloorAboveMaxReplicas, Max above maxReplicas).
	CapacityRaised bool
	// Reason and Message describe the CapacityRaised condition.
	Reason  string
	Message string
}

// Condition is the CapacityRaised condition of the decision.
func (d Decision) Condition(generation int64) metav1.Condition {
	st := metav1.ConditionFalse
	if d.CapacityRaised {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{Type: v1alpha1.ConnectClusterCapacityRaised, Status: st, Reason: d.Reason, Message: d.Message, ObservedGeneration: generation}
}

// Floor is ceil(tasks / perWorker): the fewest workers that run tasks tasks
// with at most perWorker each, capped at v1alpha1.MaxWorkers like every
// derived replica count. Zero tasks, or no per-worker limit, give 0.
func Floor(tasks, perWorker int32) int32 {
	if tasks <= 0 || perWorker <= 0 {
		return 0
	}
	return int32(min((int64(tasks)+int64(perWorker)-1)/int64(perWorker), v1alpha1.MaxWorkers))
}

// AutoscalingDecision applies DESIGN.md's bounds:
//
//	min = max(minReplicas, ceil(total effective tasks / maxTasksPerWorker))
//	max = max(min, min(maxReplicas, total effective tasks))
//
// so the autoscaler never runs fewer workers than the tasks need, nor more
// workers than there are tasks (an idle worker helps nobody), and capacity
// wins over maxReplicas, with a condition that says so.
func AutoscalingDecision(in BoundsInput) Decision {
	minR := max(in.MinReplicas, 1)
	maxR := max(in.MaxReplicas, minR)
	floor := Floor(in.TotalEffectiveTasks, in.MaxTasksPerWorker)
	lo := max(minR, floor)
	if in.HardMax {
		lo = min(lo, maxR)
	}
	hi := min(max(lo, min(maxR, max(in.TotalEffectiveTasks, 0))), v1alpha1.MaxWorkers)
	d := Decision{Min: lo, Max: hi, Floor: floor}
	switch {
	case in.HardMax && floor > maxR:
		d.Reason = v1alpha1.ReasonTasksWaitForMaxReplicas
		d.Message = clusterkit.TasksWaitMessage(int64(in.TotalEffectiveTasks), int64(in.MaxTasksPerWorker), int64(floor), int64(maxR))
	case lo > maxR:
		d.CapacityRaised = true
		d.Reason = v1alpha1.ReasonTaskFloorAboveMaxReplicas
		d.Message = fmt.Sprintf("the autoscaler runs %d to %d workers, above autoscaling.maxReplicas=%d: connectors run %d tasks and maxTasksPerWorker is %d, so at least %d workers are needed",
			lo, hi, maxR, in.TotalEffectiveTasks, in.MaxTasksPerWorker, floor)
	case lo > minR:
		d.CapacityRaised = true
		d.Reason = v1alpha1.ReasonTaskFloor
		d.Message = fmt.Sprintf("the autoscaler keeps at least %d workers instead of autoscaling.minReplicas=%d: connectors run %d tasks and maxTasksPerWorker is %d",
			lo, minR, in.TotalEffectiveTasks, in.MaxTasksPerWorker)
	default:
		d.Reason = v1alpha1.ReasonWithinRequested
		d.Message = fmt.Sprintf("the autoscaler runs %d to %d workers for %d tasks", lo, hi, in.TotalEffectiveTasks)
		if hi < maxR {
			d.Message += fmt.Sprintf(" (maxReplicas=%d lowered to the task count: more workers would idle)", maxR)
		}
	}
	return d
}

// BoundsInputFor reads the bounds inputs of a cluster, with API defaults.
func BoundsInputFor(cc *v1alpha1.ConnectCluster, totalEffectiveTasks int32) BoundsInput {
	return BoundsInput{
		MinReplicas:         cc.Spec.Autoscaling.MinReplicasOrDefault(),
		MaxReplicas:         cc.Spec.Autoscaling.MaxReplicasOrDefault(),
		MaxTasksPerWorker:   cc.MaxTasksPerWorker(),
		TotalEffectiveTasks: totalEffectiveTasks,
		HardMax:             cc.Spec.Autoscaling != nil && cc.Spec.Autoscaling.HardMaxReplicas,
	}
}

// clampInt32 converts a count to int32, saturating.
func clampInt32(v int64) int32 {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	if v < 0 {
		return 0
	}
	return int32(v)
}
