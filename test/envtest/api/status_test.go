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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestConnectorStatus writes a KafkaConnector status through the status subresource, reads it
// back, checks that kubectl get shows it in the printer columns, and that a status listing one
// task id twice is refused (tasks are a map keyed by id).
func TestConnectorStatus(t *testing.T) {
	ns := newNamespace(t)
	kc := validConnector(ns, "orders-sink")
	kc.Spec.TasksMax = ptr(int32(10))
	if err := k8sClient.Create(ctx(t), kc); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	kc.Status = v1.KafkaConnectorStatus{
		ObservedGeneration: kc.Generation,
		State:              v1.ConnectorStateRunning,
		WorkerID:           "10.0.0.7:8083",
		Tasks: []v1.TaskStatus{
			{ID: 0, State: v1.ConnectorStateRunning, WorkerID: "10.0.0.7:8083"},
			{ID: 1, State: v1.ConnectorStateRunning, WorkerID: "10.0.0.8:8083"},
			{ID: 2, State: v1.ConnectorStateFailed, WorkerID: "10.0.0.8:8083", Trace: "java.lang.IllegalStateException: disk full"},
			{ID: 3, State: v1.ConnectorStateRunning, WorkerID: "10.0.0.9:8083"},
		},
		TasksMax:       10,
		EffectiveTasks: 4,
		TaskLimit:      &v1.TaskLimit{Value: 4, Reason: "TopicPartitions"},
		Topics:         []string{"orders"},
		Lag:            ptr(int64(1234)),
		Conditions: []metav1.Condition{
			{Type: v1.KafkaConnectorReady, Status: metav1.ConditionFalse, Reason: v1.ReasonTasksFailed, Message: "task 2 failed", LastTransitionTime: now, ObservedGeneration: kc.Generation},
			{Type: v1.KafkaConnectorTasksLimited, Status: metav1.ConditionTrue, Reason: "TopicPartitions", Message: "tasksMax 10, topic orders has 4 partitions", LastTransitionTime: now, ObservedGeneration: kc.Generation},
		},
	}
	if err := k8sClient.Status().Update(ctx(t), kc); err != nil {
		t.Fatalf("writing status: %v", err)
	}
	var got v1.KafkaConnector
	if err := k8sClient.Get(ctx(t), key(ns, "orders-sink"), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.EffectiveTasks != 4 || got.Status.TaskLimit == nil || got.Status.TaskLimit.Reason != "TopicPartitions" ||
		len(got.Status.Tasks) != 4 || got.Status.Tasks[2].Trace == "" || got.Status.Lag == nil || *got.Status.Lag != 1234 {
		t.Errorf("status read back = %+v", got.Status)
	}

	out, err := runKubectl(t, "get", "kctr", "orders-sink", "-n", ns, "-o", "wide")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 2 {
		t.Fatalf("kubectl get printed %d lines:\n%s", len(rows), out)
	}
	for _, w := range []string{"RUNNING", "False", "10", "4", "TopicPartitions", "1234"} {
		if !strings.Contains(rows[1], w) {
			t.Errorf("kubectl get row %q lacks %q", rows[1], w)
		}
	}

	got.Status.Tasks = append(got.Status.Tasks, v1.TaskStatus{ID: 1, State: v1.ConnectorStateRunning})
	requireRefused(t, k8sClient.Status().Update(ctx(t), &got), "status.tasks[4]", "Duplicate value")
}
