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

// KEDA's annotations on the derived ScaledObject.
//
// KEDA reads its pause controls from the ScaledObject's annotations, which
// the operator owns, so the user sets them on the ConnectCluster, as Strimzi
// users set strimzi.io/pause-reconciliation on theirs: the operator copies
// the ones KEDA 2.21 reads onto the ScaledObject, with their values as
// written, and removes them from it when they go from the ConnectCluster (the
// ScaledObject is applied server-side by the operator's field manager, so an
// annotation it stops sending is deleted). An annotation another field
// manager wrote on the ScaledObject itself (kubectl annotate) is left alone.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// PassedAnnotations are the annotations KEDA 2.21 reads on a ScaledObject
// (apis/keda/v1alpha1/scaledobject_types.go) that a ConnectCluster passes to
// its derived ScaledObject.
var PassedAnnotations = []string{
	kedav1alpha1.PausedAnnotation,
	kedav1alpha1.PausedReplicasAnnotation,
	kedav1alpha1.PausedScaleInAnnotation,
	kedav1alpha1.PausedScaleOutAnnotation,
	kedav1alpha1.ForceActivationAnnotation,
}

// kedaAnnotationPrefix is the prefix of KEDA's ScaledObject annotations.
const kedaAnnotationPrefix = "autoscaling.keda.sh/"

// ScaledObjectAnnotations are the cluster's annotations that go onto its
// ScaledObject (PassedAnnotations); nil when it has none.
func ScaledObjectAnnotations(cc *v1alpha1.ConnectCluster) map[string]string {
	var out map[string]string
	for _, k := range PassedAnnotations {
		if v, ok := cc.Annotations[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// annotationNotes say what became of the cluster's KEDA annotations, for the
// Autoscaling condition's message: which were passed (or could not be, with
// no ScaledObject), which keys under autoscaling.keda.sh/ KEDA does not read
// (a typo would otherwise be ignored without a word), and a paused-replicas
// value that KEDA cannot parse.
func annotationNotes(annotations map[string]string, scaledObject bool) string {
	var passed, unknown, notes []string
	for k, v := range annotations {
		switch {
		case slices.Contains(PassedAnnotations, k):
			passed = append(passed, fmt.Sprintf("%s=%q", k, v))
		case strings.HasPrefix(k, kedaAnnotationPrefix):
			unknown = append(unknown, k)
		}
	}
	sort.Strings(passed)
	sort.Strings(unknown)
	if len(passed) > 0 {
		if scaledObject {
			notes = append(notes, "KEDA annotations passed to the ScaledObject: "+strings.Join(passed, ", "))
		} else {
			notes = append(notes, "KEDA annotations not applied, as there is no ScaledObject: "+strings.Join(passed, ", "))
		}
	}
	if v, ok := annotations[kedav1alpha1.PausedReplicasAnnotation]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 0 {
			notes = append(notes, fmt.Sprintf("annotation %s=%q is not a whole number of workers, which KEDA refuses: set it to a count such as \"2\", or use %s=\"true\" to pause at the current count",
				kedav1alpha1.PausedReplicasAnnotation, v, kedav1alpha1.PausedAnnotation))
		}
	}
	if len(unknown) > 0 {
		notes = append(notes, fmt.Sprintf("annotation(s) %s not passed to the ScaledObject: KEDA 2.21 reads only %s",
			strings.Join(unknown, ", "), strings.Join(PassedAnnotations, ", ")))
	}
	return strings.Join(notes, "; ")
}
