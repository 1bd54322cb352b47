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

package kafkaconnector

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/condition"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// ReasonConnectorNotManaged: a connector of that name exists in the cluster
// but this KafkaConnector did not create it; the operator leaves it alone.
const ReasonConnectorNotManaged = "ConnectorNotManaged"

// ReasonSecretsNotGranted: the connector references Secrets that the
// workers' Role does not list yet; the operator waits before it creates the
// connector or writes the new config, so its tasks do not fail on a 403.
const ReasonSecretsNotGranted = "SecretsNotGranted"

// problemPolicy says how a problem that stops a pass shows beyond the
// Ready condition.
type problemPolicy struct {
	// retry is how soon the pass runs again; nil waits for a watch event (a
	// change of the KafkaConnector, its ConnectCluster or a referenced
	// Secret).
	retry func(r *Reconciler) time.Duration
	// warn: when Ready turns False with this reason, a Warning event of the
	// same reason says so, once. The other reasons are waits that settle
	// by themselves.
	warn bool
}

// problemPolicies maps each reason a pass can stop on (the Ready
// condition's reason) to its policy; a reason absent here neither retries
// nor warns.
var problemPolicies = map[string]problemPolicy{
	v1alpha1.ReasonClusterNotFound:     {},
	v1alpha1.ReasonClusterNotReady:     {retry: (*Reconciler).notReadyRetry},
	ReasonSecretsNotGranted:            {retry: func(*Reconciler) time.Duration { return secretsGrantRetry }},
	v1alpha1.ReasonConfigInvalid:       {warn: true},
	v1alpha1.ReasonSecretNotAllowed:    {warn: true},
	v1alpha1.ReasonProviderNotAllowed:  {warn: true},
	v1alpha1.ReasonPluginNotFound:      {warn: true},
	v1alpha1.ReasonSinkGroupConflict:   {warn: true},
	ReasonConnectorNotManaged:          {warn: true},
	v1alpha1.ReasonRestartLimitReached: {warn: true},
	ReasonApplyingOffsets:              {retry: func(*Reconciler) time.Duration { return offsetsRetry }},
}

// computeStatus derives the new status from the old one and what the pass
// recorded in l; what the pass did not observe keeps its value. It changes
// nothing in kc.
func computeStatus(kc *v1alpha1.KafkaConnector, l *connectorLoop, now metav1.Time) *v1alpha1.KafkaConnectorStatus {
	s := kc.Status.DeepCopy()
	set := func(c metav1.Condition) {
		c.ObservedGeneration, c.LastTransitionTime = kc.Generation, now
		c.Message = condition.Truncate(c.Message, maxConditionMessage)
		meta.SetStatusCondition(&s.Conditions, c)
	}
	s.ObservedGeneration = kc.Generation
	requested := kc.RequestedTasksMax()
	s.TasksMax = requested

	if l.handled != nil {
		s.LastRestartAnnotation, s.LastRestartTasksAnnotation = l.handled.Restart, l.handled.RestartTasks
	}
	if l.restartCount != nil {
		s.Restarts = *l.restartCount
	}
	if n := len(l.restarts); n > 0 {
		s.LastRestartTime = &metav1.Time{Time: l.restarts[n-1].at}
	}
	if l.secretsHash != nil {
		s.SecretsHash = *l.secretsHash
	}
	if lim := l.limits; lim != nil {
		s.EffectiveTasks = lim.effective
		s.TaskLimit = nil
		if lim.limit.Natural != nil {
			s.TaskLimit = &v1alpha1.TaskLimit{Value: *lim.limit.Natural, Reason: string(lim.limit.Reason)}
		}
		set(TasksLimitedCondition(requested, lim.tasks, lim.reason, kc.Generation))
	}
	if l.topics != nil {
		s.Topics = *l.topics
	}
	if l.lagRead {
		s.Lag = l.lag
	}
	if l.done {
		RuntimeStatus(*l.runtime, s)
		set(StalledCondition(*l.runtime, kc.Generation))
	}
	driftStatus(kc, l, s, now, set)
	offsetsStatus(l, s)
	switch {
	case l.problem != nil:
		set(metav1.Condition{Type: v1alpha1.KafkaConnectorReady, Status: metav1.ConditionFalse, Reason: l.problem.Reason, Message: l.problem.Message})
	case l.done:
		set(ReadyCondition(kc.TargetState(), *l.runtime, s.EffectiveTasks, kc.Generation))
	}
	rec, stall := condition.Progress([]*metav1.Condition{meta.FindStatusCondition(s.Conditions, v1alpha1.KafkaConnectorReady)}, connectorStalled, kc.Generation)
	set(rec)
	set(stall)
	return s
}

// connectorStalled reports whether a Ready reason needs the user to act
// (kstatus Failed): the problems that warn, and a FAILED connector or task.
// The others (a cluster not there or not Ready yet, tasks being assigned, a
// Secret grant on its way) settle by themselves: Reconciling.
func connectorStalled(reason string) bool {
	switch reason {
	case v1alpha1.ReasonConnectorFailed, v1alpha1.ReasonTasksFailed:
		return true
	case v1alpha1.ReasonClusterNotFound:
		// Applied together with its ConnectCluster, a connector may look
		// for it before the cache has it: a wait, not a failure.
		return false
	}
	return problemPolicies[reason].warn
}

// writeStatus patches the status subresource, once, and only when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, kc *v1alpha1.KafkaConnector, s *v1alpha1.KafkaConnectorStatus) error {
	if equality.Semantic.DeepEqual(&kc.Status, s) {
		return nil
	}
	patched := kc.DeepCopy()
	patched.Status = *s
	if err := r.Client.Status().Patch(ctx, patched, client.MergeFrom(kc)); err != nil {
		return fmt.Errorf("writing the status of KafkaConnector %s/%s: %w", kc.Namespace, kc.Name, err)
	}
	r.views.leave(kc.Namespace+"/"+kc.Name, patched.ResourceVersion)
	return nil
}

// emitEvents records what the pass did and the conditions that changed; a
// pass that changed nothing emits nothing.
func (r *Reconciler) emitEvents(kc *v1alpha1.KafkaConnector, s *v1alpha1.KafkaConnectorStatus, l *connectorLoop) {
	if l.created {
		r.event(kc, corev1.EventTypeNormal, "Created", "Create", "created connector %s in ConnectCluster %s (%s)", kc.Name, l.cluster.Name, InitialState(kc.TargetState()))
	}
	if l.configKeys != nil {
		r.event(kc, corev1.EventTypeNormal, "ConfigUpdated", "Update", "updated the config of connector %s (keys %v)", kc.Name, l.configKeys)
	}
	for _, rs := range l.restarts {
		switch rs.kind {
		case restartSecrets:
			r.event(kc, corev1.EventTypeNormal, string(rs.kind), "Restart", "restarted connector %s and its tasks: a Secret it references changed (%s)",
				kc.Name, strings.Join(clusterkit.SecretNames(l.refs), ", "))
		case restartRequested:
			r.event(kc, corev1.EventTypeNormal, string(rs.kind), "Restart", "restarted connector %s on request (%s=%s)", kc.Name, rs.request.Annotation, rs.request.Value)
		case restartAuto:
			r.event(kc, corev1.EventTypeWarning, string(rs.kind), "Restart", "restarted failed connector %s and its failed tasks (attempt %d)", kc.Name, rs.attempt)
		}
	}
	r.emitDriftEvents(kc, s, l)
	r.emitOffsetsEvents(kc, l)
	if l.action != StateNone {
		r.event(kc, corev1.EventTypeNormal, "StateChanged", string(l.action), "asked the workers to %s connector %s", l.action, kc.Name)
	}
	if c, ok := became(kc.Status.Conditions, s.Conditions, v1alpha1.KafkaConnectorTasksLimited, metav1.ConditionTrue); ok {
		r.event(kc, corev1.EventTypeNormal, "TasksLimited", "Limit", "%s", c.Message)
	}
	if c, ok := became(kc.Status.Conditions, s.Conditions, v1alpha1.KafkaConnectorReady, metav1.ConditionFalse); ok && problemPolicies[c.Reason].warn {
		r.event(kc, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
	}
}

// became returns condition t of now when it has status and did not have it
// (with the same reason) before.
func became(before, now []metav1.Condition, t string, status metav1.ConditionStatus) (*metav1.Condition, bool) {
	n := meta.FindStatusCondition(now, t)
	if n == nil || n.Status != status {
		return n, false
	}
	o := meta.FindStatusCondition(before, t)
	return n, o == nil || o.Status != status || o.Reason != n.Reason
}

// RuntimeStatus copies the worker's status entity into the status fields:
// connector state and worker, and the tasks sorted by id with traces cut to
// the API's bound.
func RuntimeStatus(st connectapi.ConnectorStateInfo, status *v1alpha1.KafkaConnectorStatus) {
	status.State = v1alpha1.ConnectorState(st.Connector.State)
	status.WorkerID = st.Connector.WorkerID
	tasks := make([]v1alpha1.TaskStatus, 0, len(st.Tasks))
	for _, t := range st.Tasks {
		tasks = append(tasks, v1alpha1.TaskStatus{
			ID:       int32(t.ID),
			State:    v1alpha1.ConnectorState(t.State),
			WorkerID: t.WorkerID,
			Trace:    condition.Truncate(t.Trace, v1alpha1.MaxTraceLength),
		})
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	if len(tasks) == 0 {
		tasks = nil
	}
	status.Tasks = tasks
}

// Failed reports whether the connector or one of its tasks is FAILED.
func Failed(st connectapi.ConnectorStateInfo) bool {
	if st.Connector.State == connectapi.StateFailed {
		return true
	}
	for _, t := range st.Tasks {
		if t.State == connectapi.StateFailed {
			return true
		}
	}
	return false
}

// ReadyCondition says whether the connector and its tasks are in the state
// spec.state asks for. effective is the number of tasks that should run.
func ReadyCondition(target TargetState, st connectapi.ConnectorStateInfo, effective int32, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.KafkaConnectorReady, Status: metav1.ConditionFalse, ObservedGeneration: generation}
	var failed []string
	for _, t := range st.Tasks {
		if t.State == connectapi.StateFailed {
			failed = append(failed, fmt.Sprint(t.ID))
		}
	}
	switch {
	case st.Connector.State == connectapi.StateFailed && target != TargetStopped:
		c.Reason = v1alpha1.ReasonConnectorFailed
		c.Message = condition.Truncate("the connector failed: "+firstLine(st.Connector.Trace), maxConditionMessage)
	case len(failed) > 0 && target == TargetRunning:
		c.Reason = v1alpha1.ReasonTasksFailed
		c.Message = fmt.Sprintf("task(s) %s of %d failed; GET /connectors/%s/status has the traces", strings.Join(failed, ", "), len(st.Tasks), st.Name)
		if connectapi.HeldByCrash(st) {
			c.Message = fmt.Sprintf("task(s) %s of %d held FAILED: the connector's code crashed a worker process, so no automatic restart; fix it, then change its config or restart it with the %s annotation (GET /connectors/%s/status has the crash)",
				strings.Join(failed, ", "), len(st.Tasks), AnnotationRestart, st.Name)
		}
	case target == TargetStopped:
		if st.Connector.State == connectapi.StateStopped {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonConnectorStopped, "the connector is stopped, as spec.state asks"
		} else {
			c.Reason, c.Message = v1alpha1.ReasonTasksPending, fmt.Sprintf("stopping: the connector is %s", st.Connector.State)
		}
	case target == TargetPaused:
		if st.Connector.State == connectapi.StatePaused {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonConnectorPaused, "the connector is paused, as spec.state asks"
		} else {
			c.Reason, c.Message = v1alpha1.ReasonTasksPending, fmt.Sprintf("pausing: the connector is %s", st.Connector.State)
		}
	default:
		running := 0
		for _, t := range st.Tasks {
			if t.State == connectapi.StateRunning {
				running++
			}
		}
		if st.Connector.State == connectapi.StateRunning && running == len(st.Tasks) && int32(running) >= effective {
			c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonConnectorRunning
			c.Message = fmt.Sprintf("the connector and its %d task(s) run", running)
		} else {
			c.Reason = v1alpha1.ReasonTasksPending
			c.Message = fmt.Sprintf("the connector is %s with %d of %d task(s) running", orUnknown(st.Connector.State), running, effective)
		}
	}
	return c
}

// StalledCondition is the TasksStalled condition of a worker's status
// answer: True while RUNNING tasks report a stall (a Conveyor extension of
// the task status), naming them with the worker's words.
func StalledCondition(st connectapi.ConnectorStateInfo, generation int64) metav1.Condition {
	var stalled []string
	for _, t := range st.Tasks {
		if t.State == connectapi.StateRunning && t.Stalled != "" {
			stalled = append(stalled, fmt.Sprintf("task %d on %s: %s", t.ID, t.WorkerID, t.Stalled))
		}
	}
	if len(stalled) == 0 {
		return metav1.Condition{Type: v1alpha1.KafkaConnectorTasksStalled, Status: metav1.ConditionFalse, ObservedGeneration: generation,
			Reason: v1alpha1.ReasonTasksProgressing, Message: "no running task is stalled"}
	}
	return metav1.Condition{Type: v1alpha1.KafkaConnectorTasksStalled, Status: metav1.ConditionTrue, ObservedGeneration: generation,
		Reason: v1alpha1.ReasonTasksStalled, Message: condition.Truncate(fmt.Sprintf("%d task(s) have work and make no progress: %s",
			len(stalled), strings.Join(stalled, "; ")), maxConditionMessage)}
}

// TasksLimitedCondition is the TasksLimited condition for requested tasks,
// the effective count and its reason.
func TasksLimitedCondition(requested, effective int32, reason plugin.Reason, generation int64) metav1.Condition {
	if reason == ReasonShareGroup {
		return metav1.Condition{Type: v1alpha1.KafkaConnectorTasksLimited, Status: metav1.ConditionFalse, ObservedGeneration: generation,
			Reason: v1alpha1.ReasonShareGroup, Message: fmt.Sprintf(
				"the connector runs %d task(s) as tasksMax asks: it consumes through a share group (consumer.group.type=share), so tasksMax limits its tasks, not its topics' partition count", effective)}
	}
	if !Limited(requested, effective) || reason == "" || reason == ReasonTasksMax {
		return metav1.Condition{Type: v1alpha1.KafkaConnectorTasksLimited, Status: metav1.ConditionFalse, ObservedGeneration: generation,
			Reason: v1alpha1.ReasonNotLimited, Message: fmt.Sprintf("the connector runs %d task(s) as tasksMax asks", effective)}
	}
	return metav1.Condition{Type: v1alpha1.KafkaConnectorTasksLimited, Status: metav1.ConditionTrue, ObservedGeneration: generation,
		Reason: string(reason), Message: fmt.Sprintf("the connector runs %d of the %d task(s) tasksMax asks for: %s", effective, requested, limitExplanation(reason))}
}

func limitExplanation(r plugin.Reason) string {
	switch r {
	case plugin.TopicPartitions:
		return "a sink cannot use more tasks than its topics have partitions"
	case plugin.Tables:
		return "one task per table at most"
	case plugin.Files:
		return "one task per file at most"
	case plugin.Ranges:
		return "one task per key range at most"
	case plugin.SingleReader:
		return "the source can only be read by one task"
	}
	return "the connector's natural limit"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if s == "" {
		return "no trace reported"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "not reported yet"
	}
	return s
}
