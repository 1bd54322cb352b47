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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// TestResultRequeue: the next loop comes at the topic re-check, sooner when
// the autoscaler waits for KEDA, and after the backoff when the loop failed.
func TestResultRequeue(t *testing.T) {
	r := &Reconciler{opts: Options{TopicRecheckInterval: 5 * time.Minute, RetryBase: time.Second, RetryMax: time.Minute}, failures: map[types.NamespacedName]int{}}
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	for _, tc := range []struct {
		name string
		st   loopState
		want time.Duration
	}{
		{"converged", loopState{}, 5 * time.Minute},
		{"autoscaler settled", loopState{autoscaling: &clusterkit.AutoscalingResult{Active: true}}, 5 * time.Minute},
		{"autoscaler waits for KEDA", loopState{autoscaling: &clusterkit.AutoscalingResult{Active: true, RequeueAfter: 2 * time.Second}}, 2 * time.Second},
		{"failed loop: backoff", loopState{retry: true, autoscaling: &clusterkit.AutoscalingResult{RequeueAfter: 2 * time.Second}}, time.Second},
	} {
		if got := r.result(key, &tc.st).RequeueAfter; got != tc.want {
			t.Errorf("%s: requeue after %v, want %v", tc.name, got, tc.want)
		}
	}
}
