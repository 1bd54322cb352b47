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

package clusterkit

import (
	"context"
	"fmt"
	"time"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// Totals are the connector figures of a cluster.
type Totals struct {
	// Connectors is the number of KafkaConnectors whose clusterRef names the cluster.
	Connectors int32
	// Tasks is the sum of their status.effectiveTasks.
	Tasks int32
}

// AutoscalingResult is what an Autoscaler reports for one cluster.
type AutoscalingResult struct {
	// Active means a ScaledObject owns the worker count: the Deployment's
	// replicas are left unset for the HPA.
	Active bool
	// Autoscaling is the Autoscaling condition (type, status, reason, message).
	Autoscaling ConditionValue
	// CapacityRaised is the CapacityRaised condition while Active.
	CapacityRaised ConditionValue
	// RequeueAfter, when positive, asks for the next loop that soon: the
	// autoscaler waits for KEDA to take up a change.
	RequeueAfter time.Duration
}

// ConditionValue is a condition without its bookkeeping fields.
type ConditionValue struct {
	Status  bool
	Reason  string
	Message string
}

// Autoscaler converges a cluster's autoscaling (the derived KEDA
// ScaledObject targeting deploymentName). The KafkaConnector reconciler
// implements it; the ConnectCluster reconciler calls it once per loop and
// writes the conditions it returns, so the cluster's status has one writer.
type Autoscaler interface {
	ReconcileAutoscaling(ctx context.Context, cc *v1alpha1.ConnectCluster, totals Totals, deploymentName string) (AutoscalingResult, error)
}

// TasksWaitMessage says how many tasks wait because autoscaling.maxReplicas
// is a hard ceiling, and the fixes.
func TasksWaitMessage(tasks, perWorker, floor, ceiling int64) string {
	return fmt.Sprintf("%d of %d tasks wait unassigned: connectors need %d workers at maxTasksPerWorker=%d, and autoscaling.maxReplicas=%d is hard (hardMaxReplicas); lower the connectors' tasksMax, raise maxTasksPerWorker or maxReplicas",
		tasks-ceiling*perWorker, tasks, floor, perWorker, ceiling)
}
