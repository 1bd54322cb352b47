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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/condition"
)

// ReasonAutoscalerUnavailable: autoscaling is enabled but this operator build
// has no autoscaler to derive the ScaledObject; the cluster runs
// spec.replicas raised to the task floor.
const ReasonAutoscalerUnavailable = "AutoscalerUnavailable"

// Event reasons (events.k8s.io) the reconciler emits on state changes.
const (
	EventWorkersCreated = "WorkersCreated"
	EventWorkersScaled  = "WorkersScaled"
	EventGroupConflict  = "GroupConflict"
	EventTopicsCreated  = "TopicsCreated"
	EventTopicProblem   = "TopicProblem"
	EventTopicsReady    = "TopicsReady"
	EventCapacityRaised = "CapacityRaised"
	EventSpecProblem    = "SpecProblem"
)

// computeStatus derives the new status from the old one and what the loop
// observed and decided. It changes nothing in cc.
func computeStatus(cc *v1alpha1.ConnectCluster, st *loopState, now metav1.Time) *v1alpha1.ConnectClusterStatus {
	s := cc.Status.DeepCopy()
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: t, Status: status, Reason: reason, Message: condition.Truncate(msg, condition.MaxMessage), ObservedGeneration: cc.Generation, LastTransitionTime: now,
		})
	}
	bool2 := func(b bool) metav1.ConditionStatus {
		if b {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}

	s.ObservedGeneration = cc.Generation
	s.GroupID = cc.GroupID()
	if st.kafkaClusterID != "" {
		s.KafkaClusterID = st.kafkaClusterID
	}
	s.Selector = Selector(cc)
	s.RestURL = RestURL(cc)
	s.Connectors = st.totals.Connectors
	s.Tasks = st.totals.Tasks
	if st.unmanaged != nil {
		s.UnmanagedConnectors = *st.unmanaged
	}

	dep := st.deployment
	if st.conflict != nil {
		dep = nil // deleted this loop
	}
	s.Replicas, s.ReadyReplicas = 0, 0
	if dep != nil {
		s.Replicas = dep.Status.Replicas
		s.ReadyReplicas = dep.Status.ReadyReplicas
	}
	autoscaled := st.autoscaling != nil && st.autoscaling.Active
	switch {
	case st.conflict != nil:
		s.DesiredReplicas = 0
	case autoscaled && dep != nil:
		s.DesiredReplicas = ptr.Deref(dep.Spec.Replicas, 1)
	case !autoscaled:
		s.DesiredReplicas = st.capacity.Replicas
	}

	// GroupConflict
	if c := st.conflict; c != nil {
		set(v1alpha1.ConnectClusterGroupConflict, metav1.ConditionTrue, v1alpha1.ReasonGroupInUse, c.Message)
	} else {
		set(v1alpha1.ConnectClusterGroupConflict, metav1.ConditionFalse, v1alpha1.ReasonGroupUnique,
			fmt.Sprintf("no other ConnectCluster claims group %q on these brokers", cc.GroupID()))
	}

	// TopicsReady
	switch {
	case st.topics.state == "ok":
		set(v1alpha1.ConnectClusterTopicsReady, metav1.ConditionTrue, st.topics.reason, st.topics.message)
	case st.topics.state == "failed":
		set(v1alpha1.ConnectClusterTopicsReady, metav1.ConditionFalse, st.topics.reason, st.topics.message)
	case st.conflict != nil:
		set(v1alpha1.ConnectClusterTopicsReady, metav1.ConditionUnknown, v1alpha1.ReasonGroupInUse, "not checked: the cluster is in a group conflict")
	case st.problem != nil:
		set(v1alpha1.ConnectClusterTopicsReady, metav1.ConditionUnknown, st.problem.Reason, "not checked: "+st.problem.Message)
	}

	// ExactlyOnce
	if st.eos != nil {
		set(v1alpha1.ConnectClusterExactlyOnce, st.eos.status, st.eos.reason, st.eos.message)
	}

	// Autoscaling and CapacityRaised
	switch {
	case !cc.AutoscalingEnabled():
		set(v1alpha1.ConnectClusterAutoscaling, metav1.ConditionFalse, v1alpha1.ReasonAutoscalingDisabled, "autoscaling.enabled is false: the cluster runs spec.replicas, raised to the task floor")
	case st.autoscaling == nil && st.conflict == nil && st.problem == nil:
		set(v1alpha1.ConnectClusterAutoscaling, metav1.ConditionFalse, ReasonAutoscalerUnavailable, "autoscaling.enabled is true but this operator derives no ScaledObject yet: the cluster runs spec.replicas, raised to the task floor")
	case st.autoscaling != nil:
		a := st.autoscaling.Autoscaling
		set(v1alpha1.ConnectClusterAutoscaling, bool2(a.Status), a.Reason, a.Message)
	}
	switch {
	case autoscaled && st.autoscaling.CapacityRaised.Reason != "":
		c := st.autoscaling.CapacityRaised
		set(v1alpha1.ConnectClusterCapacityRaised, bool2(c.Status), c.Reason, c.Message)
	case !autoscaled && st.capacity.Reason != "":
		set(v1alpha1.ConnectClusterCapacityRaised, bool2(st.capacity.Raised), st.capacity.Reason, st.capacity.Message)
	}

	// Monitoring (only while metrics.podMonitor.enabled)
	switch {
	case !cc.PodMonitorEnabled():
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConnectClusterMonitoring)
	case st.monitoringDone && st.monitoring != nil:
		m := st.monitoring
		set(v1alpha1.ConnectClusterMonitoring, bool2(m.Status), m.Reason, m.Message)
	}

	// Reconciled
	switch {
	case st.conflict != nil:
		set(v1alpha1.ConnectClusterReconciled, metav1.ConditionFalse, v1alpha1.ReasonGroupInUse, st.conflict.Message)
	case st.problem != nil:
		set(v1alpha1.ConnectClusterReconciled, metav1.ConditionFalse, st.problem.Reason, st.problem.Message)
	default:
		set(v1alpha1.ConnectClusterReconciled, metav1.ConditionTrue, v1alpha1.ReasonReconcileSucceeded, "the worker Deployment, its Service, config and policies and the internal topics match the spec")
	}

	// Ready
	switch {
	case st.conflict != nil:
		set(v1alpha1.ConnectClusterReady, metav1.ConditionFalse, v1alpha1.ReasonGroupInUse, "no workers run: "+st.conflict.Message)
	case dep == nil && st.problem != nil:
		set(v1alpha1.ConnectClusterReady, metav1.ConditionFalse, st.problem.Reason, "no workers yet: "+st.problem.Message)
	case dep == nil:
		set(v1alpha1.ConnectClusterReady, metav1.ConditionFalse, v1alpha1.ReasonReconciling, "the worker Deployment is being created")
	default:
		ready, msg := workersReady(dep.Generation, dep.Status.ObservedGeneration, ptr.Deref(dep.Spec.Replicas, 1), dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas)
		reason := v1alpha1.ReasonWorkersNotReady
		if ready {
			reason = v1alpha1.ReasonWorkersReady
		}
		set(v1alpha1.ConnectClusterReady, bool2(ready), reason, msg)
	}

	// Reconciling and Stalled, for kstatus
	rec, stall := condition.Progress([]*metav1.Condition{
		meta.FindStatusCondition(s.Conditions, v1alpha1.ConnectClusterReconciled),
		meta.FindStatusCondition(s.Conditions, v1alpha1.ConnectClusterReady),
	}, clusterStalled, cc.Generation)
	set(rec.Type, rec.Status, rec.Reason, rec.Message)
	set(stall.Type, stall.Status, stall.Reason, stall.Message)
	return s
}

// clusterStalled reports whether a Ready or Reconciled reason needs the
// user to act (kstatus Failed); the other reasons settle by themselves
// (Reconciling: workers starting or rolling, Kafka not answering yet, a
// child being written again).
func clusterStalled(reason string) bool {
	switch reason {
	case v1alpha1.ReasonGroupInUse, v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonSecretNotFound, v1alpha1.ReasonTopicInvalid:
		return true
	}
	return false
}

// workersReady decides the Ready condition from the Deployment's figures.
func workersReady(generation, observedGeneration int64, want, updated, ready int32) (bool, string) {
	switch {
	case observedGeneration < generation:
		return false, fmt.Sprintf("the worker Deployment is rolling out a change (%d of %d workers ready)", ready, want)
	case want == 0:
		return false, "the cluster is scaled to 0 workers"
	case updated < want:
		return false, fmt.Sprintf("%d of %d workers run the current config (%d ready)", updated, want, ready)
	case ready < want:
		return false, fmt.Sprintf("%d of %d workers ready", ready, want)
	}
	return true, fmt.Sprintf("%d of %d workers ready", ready, want)
}

// writeStatus patches the status subresource, once, and only when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, cc *v1alpha1.ConnectCluster, s *v1alpha1.ConnectClusterStatus) error {
	if equality.Semantic.DeepEqual(&cc.Status, s) {
		return nil
	}
	patched := cc.DeepCopy()
	patched.Status = *s
	if err := r.client.Status().Patch(ctx, patched, client.MergeFrom(cc)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing the status of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	return nil
}

// emitEvents records what changed this loop; a loop that changes nothing
// emits nothing.
func (r *Reconciler) emitEvents(cc *v1alpha1.ConnectCluster, s *v1alpha1.ConnectClusterStatus, st *loopState) {
	old := cc.Status.Conditions
	became := func(t string, status metav1.ConditionStatus) (*metav1.Condition, bool) {
		n := meta.FindStatusCondition(s.Conditions, t)
		if n == nil || n.Status != status {
			return n, false
		}
		o := meta.FindStatusCondition(old, t)
		return n, o == nil || o.Status != status || o.Reason != n.Reason
	}
	r.emitUnmanagedEvents(cc, s)
	if c, ok := became(v1alpha1.ConnectClusterGroupConflict, metav1.ConditionTrue); ok {
		r.recorder.Eventf(cc, nil, corev1.EventTypeWarning, EventGroupConflict, "Refuse", "%s", c.Message)
	}
	for g, ids := range st.departed {
		r.recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventMembersRemoved, "RemoveMembers",
			"removed the static members %v of deleted worker pods from group %s, so its rebalances do not wait for them", ids, g)
	}
	if len(st.topics.created) > 0 {
		r.recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventTopicsCreated, "CreateTopics", "created internal topics %v (cleanup.policy=compact)", st.topics.created)
	}
	if c, ok := became(v1alpha1.ConnectClusterTopicsReady, metav1.ConditionFalse); ok {
		r.recorder.Eventf(cc, nil, corev1.EventTypeWarning, EventTopicProblem, "VerifyTopics", "%s: %s", c.Reason, c.Message)
	}
	if o := meta.FindStatusCondition(old, v1alpha1.ConnectClusterTopicsReady); o != nil && o.Status == metav1.ConditionFalse {
		if c, ok := became(v1alpha1.ConnectClusterTopicsReady, metav1.ConditionTrue); ok {
			r.recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventTopicsReady, "VerifyTopics", "%s", c.Message)
		}
	}
	if c, ok := became(v1alpha1.ConnectClusterReconciled, metav1.ConditionFalse); ok &&
		(c.Reason == v1alpha1.ReasonSecretNotFound || c.Reason == v1alpha1.ReasonInvalidSpec) {
		r.recorder.Eventf(cc, nil, corev1.EventTypeWarning, EventSpecProblem, "Reconcile", "%s: %s", c.Reason, c.Message)
	}
	if c, ok := became(v1alpha1.ConnectClusterCapacityRaised, metav1.ConditionTrue); ok {
		r.recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventCapacityRaised, "Scale", "%s", c.Message)
	}
	switch {
	case st.deploymentCreated:
		replicas := "autoscaled"
		if st.appliedReplicas != nil {
			replicas = fmt.Sprint(*st.appliedReplicas)
		}
		r.recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventWorkersCreated, "Create", "created worker Deployment %s (replicas: %s)", DeploymentName(cc), replicas)
	case st.deployment != nil && st.appliedReplicas != nil && st.deployment.Spec.Replicas != nil && *st.deployment.Spec.Replicas != *st.appliedReplicas:
		r.recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventWorkersScaled, "Scale", "scaled workers from %d to %d", *st.deployment.Spec.Replicas, *st.appliedReplicas)
	}
}
