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
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/condition"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// runtimeState is a runtime status: the connector's state and one state per task.
func runtimeState(connector string, tasks ...string) *connectapi.ConnectorStateInfo {
	st := &connectapi.ConnectorStateInfo{Name: "orders-sink", Connector: connectapi.ConnectorState{State: connector, WorkerID: "w0:8083"}}
	for i, s := range tasks {
		st.Tasks = append(st.Tasks, connectapi.TaskState{ID: i, State: s, WorkerID: "w0:8083"})
	}
	return st
}

// limitsOf is what observeLimits records for requested tasks and a natural limit (nil: none).
func limitsOf(requested int32, natural *int32, reason plugin.Reason, stopped bool) *observedLimits {
	tl := TaskLimit{Natural: natural, Reason: reason, Source: LimitFromRuntime}
	n, r := EffectiveTasks(requested, tl)
	eff := n
	if stopped {
		eff = 0
	}
	return &observedLimits{limit: tl, tasks: n, reason: r, effective: eff}
}

func TestComputeStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Hour))
	base := func(mutate ...func(kc *v1alpha1.KafkaConnector)) *v1alpha1.KafkaConnector {
		kc := &v1alpha1.KafkaConnector{
			ObjectMeta: metav1.ObjectMeta{Name: "orders-sink", Namespace: "ns", Generation: 3},
			Spec: v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: "c1"}, Class: "FileSink", TasksMax: ptr.To[int32](2),
				Config: map[string]string{"topics": "orders"}, State: v1alpha1.ConnectorTargetRunning},
			// What an earlier pass left: running, Ready since t0.
			Status: v1alpha1.KafkaConnectorStatus{State: v1alpha1.ConnectorStateRunning, EffectiveTasks: 2, SecretsHash: "old",
				Conditions: []metav1.Condition{{Type: v1alpha1.KafkaConnectorReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonConnectorRunning, LastTransitionTime: t0, ObservedGeneration: 2}}},
		}
		for _, m := range mutate {
			m(kc)
		}
		return kc
	}
	running2 := func() *connectorLoop {
		return &connectorLoop{runtime: runtimeState("RUNNING", "RUNNING", "RUNNING"), limits: limitsOf(2, nil, "", false), done: true}
	}
	long := strings.Repeat("ü", 2*maxConditionMessage) // 2 bytes each

	type want struct {
		ready, limited             metav1.ConditionStatus
		readyReason, limitedReason string
		readyHas                   string
		state                      v1alpha1.ConnectorState
		effective, restarts        int32
		readySince                 metav1.Time
		check                      func(t *testing.T, s *v1alpha1.KafkaConnectorStatus)
	}
	for _, tc := range []struct {
		name string
		kc   *v1alpha1.KafkaConnector
		loop *connectorLoop
		want want
	}{
		{
			name: "ready: connector and tasks run",
			kc:   base(),
			loop: running2(),
			want: want{ready: metav1.ConditionTrue, readyReason: v1alpha1.ReasonConnectorRunning, readyHas: "its 2 task(s) run",
				limited: metav1.ConditionFalse, limitedReason: v1alpha1.ReasonNotLimited, state: "RUNNING", effective: 2,
				readySince: t0, // no transition: the condition keeps its time
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if len(s.Tasks) != 2 || s.Tasks[1].State != "RUNNING" || s.WorkerID != "w0:8083" || s.TaskLimit != nil {
						t.Fatalf("tasks %+v worker %q limit %+v", s.Tasks, s.WorkerID, s.TaskLimit)
					}
				}},
		},
		{
			name: "tasks limited by topic partitions",
			kc:   base(func(kc *v1alpha1.KafkaConnector) { kc.Spec.TasksMax = ptr.To[int32](10) }),
			loop: &connectorLoop{runtime: runtimeState("RUNNING", "RUNNING", "RUNNING", "RUNNING", "RUNNING"),
				limits: limitsOf(10, ptr.To[int32](4), plugin.TopicPartitions, false), done: true},
			want: want{ready: metav1.ConditionTrue, readyReason: v1alpha1.ReasonConnectorRunning, limited: metav1.ConditionTrue,
				limitedReason: string(plugin.TopicPartitions), state: "RUNNING", effective: 4, readySince: t0,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if s.TasksMax != 10 || s.TaskLimit == nil || s.TaskLimit.Value != 4 || s.TaskLimit.Reason != "TopicPartitions" {
						t.Fatalf("tasksMax %d limit %+v", s.TasksMax, s.TaskLimit)
					}
				}},
		},
		{
			name: "secrets not granted yet: nothing else observed, nothing else changes",
			kc:   base(),
			loop: &connectorLoop{problem: condition.Problemf(ReasonSecretsNotGranted, "waiting for Role c1-secrets to list Secret db")},
			want: want{ready: metav1.ConditionFalse, readyReason: ReasonSecretsNotGranted, readyHas: "c1-secrets", state: "RUNNING", effective: 2, readySince: now,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if s.SecretsHash != "old" || meta.FindStatusCondition(s.Conditions, v1alpha1.KafkaConnectorTasksLimited) != nil {
						t.Fatalf("a pass that observed nothing changed the hash (%q) or set TasksLimited", s.SecretsHash)
					}
				}},
		},
		{
			name: "a FAILED task",
			kc:   base(),
			loop: &connectorLoop{runtime: runtimeState("RUNNING", "RUNNING", "FAILED"), limits: limitsOf(2, nil, "", false), done: true},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonTasksFailed, readyHas: "task(s) 1 of 2 failed",
				limited: metav1.ConditionFalse, limitedReason: v1alpha1.ReasonNotLimited, state: "RUNNING", effective: 2, readySince: now},
		},
		{
			name: "a task held FAILED for crashing a worker",
			kc:   base(),
			loop: &connectorLoop{runtime: func() *connectapi.ConnectorStateInfo {
				st := runtimeState("RUNNING", "RUNNING", "FAILED")
				st.Tasks[1].Trace = connectapi.HeldTracePrefix + "task 1 ended the process of worker w1:8083 ..."
				return st
			}(), limits: limitsOf(2, nil, "", false), done: true},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonTasksFailed, readyHas: "task(s) 1 of 2 held FAILED: the connector's code crashed a worker process, so no automatic restart",
				limited: metav1.ConditionFalse, limitedReason: v1alpha1.ReasonNotLimited, state: "RUNNING", effective: 2, readySince: now},
		},
		{
			// The broker refusing a connector's own principal
			// (runtime/worker/identity_acl_test.go) reaches the
			// KafkaConnector: the task's trace, and Ready.
			name: "a task FAILED by the broker's ACLs",
			kc:   base(),
			loop: &connectorLoop{runtime: func() *connectapi.ConnectorStateInfo {
				st := runtimeState("RUNNING", "RUNNING", "FAILED")
				st.Tasks[1].Trace = "consuming: unable to join group session: GROUP_AUTHORIZATION_FAILED: Not authorized to access group: Group authorization failed."
				return st
			}(), limits: limitsOf(2, nil, "", false), done: true},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonTasksFailed, readyHas: "task(s) 1 of 2 failed",
				limited: metav1.ConditionFalse, limitedReason: v1alpha1.ReasonNotLimited, state: "RUNNING", effective: 2, readySince: now,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if len(s.Tasks) != 2 || !strings.Contains(s.Tasks[1].Trace, "GROUP_AUTHORIZATION_FAILED") {
						t.Fatalf("tasks %+v: task 1's trace lacks the broker's error", s.Tasks)
					}
				}},
		},
		{
			name: "the connector FAILED by the broker's ACLs",
			kc:   base(),
			loop: &connectorLoop{runtime: func() *connectapi.ConnectorStateInfo {
				st := runtimeState("FAILED")
				st.Connector.Trace = `connector "billing-ledger": computing its natural task limit: natural limit: reading partition counts of [ledger]: TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed.]`
				return st
			}(), limits: limitsOf(2, nil, "", false), done: true},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonConnectorFailed, readyHas: "reading partition counts of [ledger]: TOPIC_AUTHORIZATION_FAILED",
				limited: metav1.ConditionFalse, limitedReason: v1alpha1.ReasonNotLimited, state: "FAILED", effective: 2, readySince: now},
		},
		{
			name: "paused as asked",
			kc:   base(func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetPaused }),
			loop: &connectorLoop{runtime: runtimeState("PAUSED", "PAUSED", "PAUSED"), limits: limitsOf(2, nil, "", false), done: true},
			want: want{ready: metav1.ConditionTrue, readyReason: v1alpha1.ReasonConnectorPaused, limited: metav1.ConditionFalse,
				limitedReason: v1alpha1.ReasonNotLimited, state: "PAUSED", effective: 2,
				readySince: t0}, // Ready stays True: a new reason is no transition
		},
		{
			name: "stopped as asked: no tasks count",
			kc:   base(func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetStopped }),
			loop: &connectorLoop{runtime: runtimeState("STOPPED"), limits: limitsOf(2, nil, "", true), done: true},
			want: want{ready: metav1.ConditionTrue, readyReason: v1alpha1.ReasonConnectorStopped, limited: metav1.ConditionFalse,
				limitedReason: v1alpha1.ReasonNotLimited, state: "STOPPED", effective: 0, readySince: t0,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if s.Tasks != nil {
						t.Fatalf("tasks of a stopped connector: %+v", s.Tasks)
					}
				}},
		},
		{
			name: "stopping: asked, not there yet",
			kc:   base(func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetStopped }),
			loop: &connectorLoop{runtime: runtimeState("RUNNING", "RUNNING"), action: StateStop, limits: limitsOf(2, nil, "", true), done: true, requeue: time.Second},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonTasksPending, readyHas: "stopping", limited: metav1.ConditionFalse,
				limitedReason: v1alpha1.ReasonNotLimited, state: "RUNNING", effective: 0, readySince: now},
		},
		{
			name: "the cluster is not ready",
			kc:   base(),
			loop: &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonClusterNotReady, "cannot reach the workers of ConnectCluster c1: no Ready worker")},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonClusterNotReady, readyHas: "no Ready worker", state: "RUNNING", effective: 2, readySince: now},
		},
		{
			name: "the cluster does not exist",
			kc:   base(),
			loop: &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonClusterNotFound, `ConnectCluster "c1" does not exist in namespace ns`)},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonClusterNotFound, readyHas: "does not exist", state: "RUNNING", effective: 2, readySince: now},
		},
		{
			name: "a validation error, cut on a rune boundary",
			kc:   base(),
			loop: &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonConfigInvalid, "topics: Missing required configuration; %s", long)},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonConfigInvalid, readyHas: "topics: Missing required configuration", state: "RUNNING", effective: 2, readySince: now,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					m := meta.FindStatusCondition(s.Conditions, v1alpha1.KafkaConnectorReady).Message
					if len(m) > maxConditionMessage || !utf8.ValidString(m) || !strings.HasSuffix(m, " ...") {
						t.Fatalf("message of %d bytes, valid UTF-8 %v, ends %q", len(m), utf8.ValidString(m), m[max(len(m)-8, 0):])
					}
				}},
		},
		{
			name: "a Secret the cluster does not allow",
			kc:   base(),
			loop: &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonSecretNotAllowed, `config key "db.password" references Secret "other", which ConnectCluster c1 does not allow: ask the cluster's owner to add it to spec.connectorAccess.secrets`)},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonSecretNotAllowed, readyHas: `config key "db.password"`, state: "RUNNING", effective: 2, readySince: now},
		},
		{
			name: "a ${file:} the cluster does not allow",
			kc:   base(),
			loop: &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonProviderNotAllowed, `config key "file" uses ${file:...} outside the paths ConnectCluster c1 allows`)},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonProviderNotAllowed, readyHas: `config key "file"`, state: "RUNNING", effective: 2, readySince: now},
		},
		{
			name: "autoRestart in backoff: failed, the count kept, no restart sent",
			kc: base(func(kc *v1alpha1.KafkaConnector) {
				kc.Spec.AutoRestart = v1alpha1.AutoRestartSpec{Enabled: ptr.To(true)}
				kc.Status.Restarts, kc.Status.LastRestartTime = 2, &t0
			}),
			loop: &connectorLoop{runtime: runtimeState("FAILED"), restartCount: ptr.To[int32](2), limits: limitsOf(2, nil, "", false), done: true, requeue: 3 * time.Second},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonConnectorFailed, readyHas: "the connector failed", limited: metav1.ConditionFalse,
				limitedReason: v1alpha1.ReasonNotLimited, state: "FAILED", effective: 2, restarts: 2, readySince: now,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if s.LastRestartTime == nil || !s.LastRestartTime.Equal(&t0) {
						t.Fatalf("lastRestartTime = %v, want the recorded %v", s.LastRestartTime, t0)
					}
				}},
		},
		{
			name: "autoRestart sent: the count and the time move",
			kc: base(func(kc *v1alpha1.KafkaConnector) {
				kc.Spec.AutoRestart = v1alpha1.AutoRestartSpec{Enabled: ptr.To(true)}
				kc.Status.Restarts, kc.Status.LastRestartTime = 2, &t0
			}),
			loop: &connectorLoop{runtime: runtimeState("FAILED"), restartCount: ptr.To[int32](3), restarts: []sentRestart{{kind: restartAuto, at: now.Time, attempt: 3}},
				limits: limitsOf(2, nil, "", false), done: true, requeue: time.Second},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonConnectorFailed, limited: metav1.ConditionFalse,
				limitedReason: v1alpha1.ReasonNotLimited, state: "FAILED", effective: 2, restarts: 3, readySince: now,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if s.LastRestartTime == nil || !s.LastRestartTime.Equal(&now) {
						t.Fatalf("lastRestartTime = %v, want %v", s.LastRestartTime, now)
					}
				}},
		},
		{
			name: "restart limit reached: the runtime status is still mirrored",
			kc: base(func(kc *v1alpha1.KafkaConnector) {
				kc.Spec.AutoRestart = v1alpha1.AutoRestartSpec{Enabled: ptr.To(true), MaxRestarts: ptr.To[int32](3)}
				kc.Status.Restarts = 3
			}),
			loop: &connectorLoop{runtime: runtimeState("RUNNING", "FAILED"), restartCount: ptr.To[int32](3), limits: limitsOf(2, nil, "", false), done: true,
				problem: condition.Problemf(v1alpha1.ReasonRestartLimitReached, "the connector failed again after 3 automatic restarts")},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonRestartLimitReached, readyHas: "after 3 automatic restarts", limited: metav1.ConditionFalse,
				limitedReason: v1alpha1.ReasonNotLimited, state: "RUNNING", effective: 2, restarts: 3, readySince: now,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if len(s.Tasks) != 1 || s.Tasks[0].State != "FAILED" {
						t.Fatalf("tasks %+v", s.Tasks)
					}
				}},
		},
		{
			name: "a sink group conflict",
			kc:   base(),
			loop: &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonSinkGroupConflict, "consumer group connect-orders-sink is used by sink other/orders-sink of ConnectCluster c2")},
			want: want{ready: metav1.ConditionFalse, readyReason: v1alpha1.ReasonSinkGroupConflict, readyHas: "other/orders-sink", state: "RUNNING", effective: 2, readySince: now},
		},
		{
			name: "restart annotation handled: recorded, the automatic count reset",
			kc: base(func(kc *v1alpha1.KafkaConnector) {
				kc.Annotations = map[string]string{AnnotationRestart: "2"}
				kc.Status.Restarts, kc.Status.LastRestartAnnotation = 4, "1"
			}),
			loop: func() *connectorLoop {
				l := running2()
				req := &RestartRequest{IncludeTasks: true, Annotation: AnnotationRestart, Value: "2"}
				l.handled, l.restartCount = &HandledRestarts{Restart: "2"}, ptr.To[int32](0)
				l.restarts = []sentRestart{{kind: restartRequested, at: now.Time, request: req}}
				l.secretsHash, l.topics, l.lagRead, l.lag = ptr.To("new"), &[]string{"orders"}, true, ptr.To[int64](7)
				return l
			}(),
			want: want{ready: metav1.ConditionTrue, readyReason: v1alpha1.ReasonConnectorRunning, limited: metav1.ConditionFalse,
				limitedReason: v1alpha1.ReasonNotLimited, state: "RUNNING", effective: 2, restarts: 0, readySince: t0,
				check: func(t *testing.T, s *v1alpha1.KafkaConnectorStatus) {
					if s.LastRestartAnnotation != "2" || s.LastRestartTime == nil || !s.LastRestartTime.Equal(&now) ||
						s.SecretsHash != "new" || len(s.Topics) != 1 || s.Lag == nil || *s.Lag != 7 {
						t.Fatalf("status %+v", s)
					}
				}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.kc.DeepCopy()
			s := computeStatus(tc.kc, tc.loop, now)
			if !equalKC(before, tc.kc) {
				t.Fatal("computeStatus changed the KafkaConnector")
			}
			if s.ObservedGeneration != 3 || s.TasksMax != tc.kc.RequestedTasksMax() {
				t.Fatalf("observedGeneration %d tasksMax %d", s.ObservedGeneration, s.TasksMax)
			}
			ready := meta.FindStatusCondition(s.Conditions, v1alpha1.KafkaConnectorReady)
			if ready == nil || ready.Status != tc.want.ready || ready.Reason != tc.want.readyReason || !strings.Contains(ready.Message, tc.want.readyHas) ||
				ready.ObservedGeneration != 3 || !ready.LastTransitionTime.Equal(&tc.want.readySince) {
				t.Fatalf("Ready = %+v; want %s %s containing %q since %v", ready, tc.want.ready, tc.want.readyReason, tc.want.readyHas, tc.want.readySince)
			}
			limited := meta.FindStatusCondition(s.Conditions, v1alpha1.KafkaConnectorTasksLimited)
			switch {
			case tc.want.limited == "" && limited != nil:
				t.Fatalf("TasksLimited = %+v, want none", limited)
			case tc.want.limited != "" && (limited == nil || limited.Status != tc.want.limited || limited.Reason != tc.want.limitedReason):
				t.Fatalf("TasksLimited = %+v, want %s %s", limited, tc.want.limited, tc.want.limitedReason)
			}
			if s.State != tc.want.state || s.EffectiveTasks != tc.want.effective || s.Restarts != tc.want.restarts {
				t.Fatalf("state %q effective %d restarts %d; want %q %d %d", s.State, s.EffectiveTasks, s.Restarts, tc.want.state, tc.want.effective, tc.want.restarts)
			}
			if tc.want.check != nil {
				tc.want.check(t, s)
			}
		})
	}
}

func equalKC(a, b *v1alpha1.KafkaConnector) bool {
	return a.Status.State == b.Status.State && len(a.Status.Conditions) == len(b.Status.Conditions) &&
		a.Status.Restarts == b.Status.Restarts && a.Status.SecretsHash == b.Status.SecretsHash && a.Status.EffectiveTasks == b.Status.EffectiveTasks
}

// TestProblemPolicies: how soon a pass that stopped on a problem looks again.
func TestProblemPolicies(t *testing.T) {
	r := &Reconciler{Resync: 20 * time.Second}
	for _, tc := range []struct {
		name string
		loop *connectorLoop
		want time.Duration
	}{
		{"secrets not granted retries soon", &connectorLoop{problem: condition.Problemf(ReasonSecretsNotGranted, "")}, secretsGrantRetry},
		{"cluster not ready retries", &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonClusterNotReady, "")}, maxNotReadyRetry},
		{"invalid config waits for a change", &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonConfigInvalid, "")}, 0},
		{"a Secret not allowed waits for a change of the cluster", &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonSecretNotAllowed, "")}, 0},
		{"a provider not allowed waits for a change of the cluster", &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonProviderNotAllowed, "")}, 0},
		{"missing cluster waits for its watch", &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonClusterNotFound, "")}, 0},
		{"a finished pass resyncs even with a problem", &connectorLoop{done: true, requeue: 7 * time.Second, problem: condition.Problemf(v1alpha1.ReasonRestartLimitReached, "")}, 7 * time.Second},
		{"a concurrent creation looks again", &connectorLoop{again: true}, lookAgain},
	} {
		if got := r.requeue(tc.loop); got != tc.want {
			t.Errorf("%s: requeue %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestEmitEventsOnTransitions: a problem warns once, when Ready turns
// False with it; the same problem on the next pass emits nothing, and a
// wait (SecretsNotGranted) never warns.
func TestEmitEventsOnTransitions(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	now := metav1.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	kc := &v1alpha1.KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Generation: 1},
		Spec: v1alpha1.KafkaConnectorSpec{TasksMax: ptr.To[int32](4)}}
	pass := func(l *connectorLoop) []string {
		s := computeStatus(kc, l, now)
		r.emitEvents(kc, s, l)
		kc.Status = *s
		var got []string
		for {
			select {
			case e := <-rec.Events:
				got = append(got, e)
			default:
				return got
			}
		}
	}
	invalid := &connectorLoop{problem: condition.Problemf(v1alpha1.ReasonConfigInvalid, "topics: Missing required configuration")}
	if got := pass(invalid); len(got) != 1 || !strings.HasPrefix(got[0], "Warning ConfigInvalid") {
		t.Fatalf("first invalid pass emitted %q", got)
	}
	if got := pass(invalid); len(got) != 0 {
		t.Fatalf("the same problem again emitted %q", got)
	}
	if got := pass(&connectorLoop{problem: condition.Problemf(ReasonSecretsNotGranted, "waiting")}); len(got) != 0 {
		t.Fatalf("a wait emitted %q", got)
	}
	limited := &connectorLoop{runtime: runtimeState("RUNNING", "RUNNING"), limits: limitsOf(4, ptr.To[int32](1), plugin.TopicPartitions, false), done: true}
	if got := pass(limited); len(got) != 1 || !strings.HasPrefix(got[0], "Normal TasksLimited") {
		t.Fatalf("first limited pass emitted %q", got)
	}
	if got := pass(limited); len(got) != 0 {
		t.Fatalf("still limited emitted %q", got)
	}
}

func TestStalledCondition(t *testing.T) {
	st := connectapi.ConnectorStateInfo{Name: "c", Tasks: []connectapi.TaskState{
		{ID: 0, State: connectapi.StateRunning, WorkerID: "w1"},
		{ID: 1, State: connectapi.StateRunning, WorkerID: "w2", Stalled: "no progress for 1m5s with 500 records of work"},
		{ID: 2, State: connectapi.StateUnassigned, WorkerID: "w3", Stalled: "stale"},
	}}
	c := StalledCondition(st, 3)
	if c.Type != v1alpha1.KafkaConnectorTasksStalled || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonTasksStalled || c.ObservedGeneration != 3 {
		t.Fatalf("condition %+v, want TasksStalled True", c)
	}
	if !strings.Contains(c.Message, "task 1 on w2: no progress for 1m5s") || strings.Contains(c.Message, "task 2") {
		t.Errorf("message %q: want task 1 named and the unassigned task 2 left out", c.Message)
	}
	st.Tasks[1].Stalled = ""
	if c := StalledCondition(st, 3); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonTasksProgressing {
		t.Errorf("without stalls: %+v, want False TasksProgressing", c)
	}
}
