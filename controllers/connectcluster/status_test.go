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
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/condition"
)

func TestWorkersReady(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		gen, observed        int64
		want, updated, ready int32
		wantReady            bool
		msgHas               string
	}{
		{"all ready", 2, 2, 3, 3, 3, true, "3 of 3 workers ready"},
		{"rolling out", 3, 2, 3, 3, 3, false, "rolling out"},
		{"old pods", 2, 2, 3, 1, 3, false, "1 of 3 workers run the current config"},
		{"some ready", 2, 2, 3, 3, 2, false, "2 of 3 workers ready"},
		{"scaled to zero", 1, 1, 0, 0, 0, false, "scaled to 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, msg := workersReady(tc.gen, tc.observed, tc.want, tc.updated, tc.ready)
			if ok != tc.wantReady || !strings.Contains(msg, tc.msgHas) {
				t.Fatalf("workersReady = %v, %q; want %v and %q", ok, msg, tc.wantReady, tc.msgHas)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	cc := minimalCluster()
	cc.Generation = 4
	readyDep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 7},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 7, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3},
	}
	okTopics := topicsOutcome{state: "ok", reason: v1alpha1.ReasonTopicsReady, message: "fine"}

	type want struct {
		ready, reconciled, conflict, capacity metav1.ConditionStatus
		readyReason, reconciledReason         string
		replicas, desired                     int32
	}
	for _, tc := range []struct {
		name string
		st   *loopState
		want want
	}{
		{
			name: "healthy",
			st:   &loopState{deployment: readyDep, topics: okTopics, capacity: DesiredReplicas(3, 8, 8), totals: clusterkit.Totals{Connectors: 2, Tasks: 8}},
			want: want{metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonWorkersReady, v1alpha1.ReasonReconcileSucceeded, 3, 3},
		},
		{
			name: "floor raised",
			st:   &loopState{deployment: readyDep, topics: okTopics, capacity: DesiredReplicas(2, 24, 8)},
			want: want{metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionTrue, v1alpha1.ReasonWorkersReady, v1alpha1.ReasonReconcileSucceeded, 3, 3},
		},
		{
			name: "kafka down before the first Deployment",
			st: &loopState{topics: topicsOutcome{state: "failed", reason: v1alpha1.ReasonKafkaUnreachable, message: "dial refused"},
				problem: &condition.Problem{Reason: v1alpha1.ReasonKafkaUnreachable, Message: "dial refused"}, capacity: DesiredReplicas(2, 0, 8)},
			want: want{metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonKafkaUnreachable, v1alpha1.ReasonKafkaUnreachable, 0, 2},
		},
		{
			name: "group conflict",
			st:   &loopState{deployment: readyDep, conflict: &GroupConflict{Message: "group taken by a/b"}},
			want: want{metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, "", v1alpha1.ReasonGroupInUse, v1alpha1.ReasonGroupInUse, 0, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := computeStatus(cc, tc.st, now)
			check := func(typ string, status metav1.ConditionStatus, reason string) {
				t.Helper()
				c := meta.FindStatusCondition(s.Conditions, typ)
				if status == "" {
					if c != nil {
						t.Errorf("condition %s set to %s, want it absent", typ, c.Status)
					}
					return
				}
				if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || c.ObservedGeneration != 4 {
					t.Errorf("condition %s = %+v, want status %s reason %q at generation 4", typ, c, status, reason)
				}
			}
			check(v1alpha1.ConnectClusterReady, tc.want.ready, tc.want.readyReason)
			check(v1alpha1.ConnectClusterReconciled, tc.want.reconciled, tc.want.reconciledReason)
			check(v1alpha1.ConnectClusterGroupConflict, tc.want.conflict, "")
			check(v1alpha1.ConnectClusterCapacityRaised, tc.want.capacity, "")
			if s.Replicas != tc.want.replicas || s.DesiredReplicas != tc.want.desired {
				t.Errorf("replicas %d desired %d, want %d and %d", s.Replicas, s.DesiredReplicas, tc.want.replicas, tc.want.desired)
			}
			if s.ObservedGeneration != 4 || s.GroupID != "data.orders" || s.Selector != "app.kubernetes.io/name=conveyor-worker,connect.conveyor.dev/cluster=orders" ||
				s.RestURL != "http://orders-connect.data.svc:8083" {
				t.Errorf("status fields %+v", s)
			}
			if cc.Status.Conditions != nil {
				t.Fatal("computeStatus changed its input")
			}
		})
	}
}

func TestConfigHashFollowsTheConfig(t *testing.T) {
	a := minimalCluster()
	b := minimalCluster()
	b.Spec.Config = map[string]string{"offset.flush.interval.ms": "2000"}
	ca, err := BuildChildren(a, ChildInputs{Image: testImage, Replicas: ptr.To[int32](1)})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := BuildChildren(b, ChildInputs{Image: testImage, Replicas: ptr.To[int32](1)})
	if err != nil {
		t.Fatal(err)
	}
	ha := ca.Deployment.Spec.Template.Annotations[clusterkit.AnnotationConfigHash]
	hb := cb.Deployment.Spec.Template.Annotations[clusterkit.AnnotationConfigHash]
	if ha == "" || ha == hb {
		t.Fatalf("config hash %q vs %q: a config change must change the pod template", ha, hb)
	}
	// Replicas are not config: scaling must not roll the pods.
	cc, _ := BuildChildren(a, ChildInputs{Image: testImage, Replicas: ptr.To[int32](5)})
	if cc.Deployment.Spec.Template.Annotations[clusterkit.AnnotationConfigHash] != ha {
		t.Fatal("scaling changed the config hash")
	}
}

func TestInvalidWorkerConfigNamesTheKey(t *testing.T) {
	cc := minimalCluster()
	cc.Spec.Config = map[string]string{"offset.flush.interval.ms": "soon"}
	if _, err := BuildChildren(cc, ChildInputs{Image: testImage}); err == nil || !strings.Contains(err.Error(), "offset.flush.interval.ms") {
		t.Fatalf("error %v does not name the bad key", err)
	}
}

func TestGoMemLimit(t *testing.T) {
	if got := GoMemLimit(autoscalingCluster().Spec.Resources); got != "483183819" {
		t.Fatalf("GOMEMLIMIT for 512Mi = %s, want 483183819 (90%%, rounded down)", got)
	}
	if got := GoMemLimit(minimalCluster().Spec.Resources); got != "" {
		t.Fatalf("GOMEMLIMIT without a limit = %q, want none", got)
	}
}

// TestComputeStatusCutsLongMessagesOnRunes: a problem message beyond the
// API's bound (here of 2-byte runes, so a byte cut would split one) is cut
// to valid UTF-8 within the bound.
func TestComputeStatusCutsLongMessagesOnRunes(t *testing.T) {
	cc := minimalCluster()
	msg := "x" + strings.Repeat("é", condition.MaxMessage) // the bound falls inside a rune
	s := computeStatus(cc, &loopState{problem: &condition.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: msg}}, metav1.Now())
	for _, typ := range []string{v1alpha1.ConnectClusterReconciled, v1alpha1.ConnectClusterReady} {
		c := meta.FindStatusCondition(s.Conditions, typ)
		if c == nil {
			t.Fatalf("no %s condition", typ)
		}
		if len(c.Message) > condition.MaxMessage || !utf8.ValidString(c.Message) || !strings.HasSuffix(c.Message, " ...") {
			t.Fatalf("%s: %d bytes, valid UTF-8 %v", typ, len(c.Message), utf8.ValidString(c.Message))
		}
	}
}

func TestUnmanagedEventListsAFewNames(t *testing.T) {
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("connector-with-a-long-name-%04d", i))
	}
	got := namesForEvent(names)
	if len(got) > 700 || !strings.Contains(got, "connector-with-a-long-name-0009") || strings.Contains(got, "-0010") || !strings.Contains(got, "and 290 more") {
		t.Fatalf("namesForEvent = %q (%d characters)", got, len(got))
	}
	if got := namesForEvent(names[:3]); got != strings.Join(names[:3], ", ") {
		t.Fatalf("namesForEvent of 3 = %q", got)
	}
}
