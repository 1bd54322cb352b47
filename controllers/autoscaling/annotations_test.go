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
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func TestScaledObjectAnnotationsAndNotes(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		in          ConditionInput
		want        map[string]string
		message     string
	}{
		{
			name:        "none",
			annotations: map[string]string{"example.com/owner": "team"},
			in:          ConditionInput{Enabled: true, KEDAServed: true, Triggers: 1, ScaledObjectReady: &metav1.Condition{Status: metav1.ConditionTrue}},
			message:     "KEDA scales the workers on the summed lag of 1 trigger(s)",
		},
		{
			name:        "paused",
			annotations: map[string]string{"autoscaling.keda.sh/paused": "true", "autoscaling.keda.sh/force-activation": "false", "example.com/owner": "team"},
			in:          ConditionInput{Enabled: true, KEDAServed: true, Triggers: 1, ScaledObjectReady: &metav1.Condition{Status: metav1.ConditionTrue}},
			want:        map[string]string{"autoscaling.keda.sh/paused": "true", "autoscaling.keda.sh/force-activation": "false"},
			message:     `KEDA scales the workers on the summed lag of 1 trigger(s). KEDA annotations passed to the ScaledObject: autoscaling.keda.sh/force-activation="false", autoscaling.keda.sh/paused="true"`,
		},
		{
			name:        "no ScaledObject",
			annotations: map[string]string{"autoscaling.keda.sh/paused-replicas": "2"},
			in:          ConditionInput{Enabled: false},
			want:        map[string]string{"autoscaling.keda.sh/paused-replicas": "2"},
			message:     `autoscaling.enabled is false; the cluster runs spec.replicas workers. KEDA annotations not applied, as there is no ScaledObject: autoscaling.keda.sh/paused-replicas="2"`,
		},
		{
			name:        "typo and a bad count",
			annotations: map[string]string{"autoscaling.keda.sh/pause": "true", "autoscaling.keda.sh/paused-replicas": "two"},
			in:          ConditionInput{Enabled: true, KEDAServed: true, Triggers: 1},
			want:        map[string]string{"autoscaling.keda.sh/paused-replicas": "two"},
			message: `waiting for KEDA to report on the ScaledObject. KEDA annotations passed to the ScaledObject: autoscaling.keda.sh/paused-replicas="two"; ` +
				`annotation autoscaling.keda.sh/paused-replicas="two" is not a whole number of workers, which KEDA refuses: set it to a count such as "2", or use autoscaling.keda.sh/paused="true" to pause at the current count; ` +
				`annotation(s) autoscaling.keda.sh/pause not passed to the ScaledObject: KEDA 2.21 reads only autoscaling.keda.sh/paused, autoscaling.keda.sh/paused-replicas, autoscaling.keda.sh/paused-scale-in, autoscaling.keda.sh/paused-scale-out, autoscaling.keda.sh/force-activation`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Annotations: c.annotations}}
			if got := ScaledObjectAnnotations(cc); !maps.Equal(got, c.want) {
				t.Errorf("ScaledObject annotations %v, want %v", got, c.want)
			}
			c.in.Annotations = c.annotations
			if got := AutoscalingCondition(c.in, 1).Message; got != c.message {
				t.Errorf("message\n got %s\nwant %s", got, c.message)
			}
		})
	}
}
