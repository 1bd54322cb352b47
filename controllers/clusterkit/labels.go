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
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// Labels and annotations the operator puts on the objects it builds.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelCluster carries the ConnectCluster's name on every child and worker pod.
	LabelCluster = "connect.conveyor.dev/cluster"

	// WorkerAppName is the app.kubernetes.io/name of worker pods.
	WorkerAppName = "conveyor-worker"
	// ComponentWorker is the app.kubernetes.io/component of worker pods.
	ComponentWorker = "worker"
	// ManagedBy is the app.kubernetes.io/managed-by of every child.
	ManagedBy = "conveyor-operator"

	// AnnotationConfigHash on the pod template is the hash of everything that
	// needs a restart to take effect (the rendered worker config first), so that
	// a change rolls the workers.
	AnnotationConfigHash = "connect.conveyor.dev/config-hash"

	// FieldManager is the server-side apply field manager of the operator.
	FieldManager = "conveyor-operator"
)

// maxNameLength keeps child names valid as Service names (DNS-1035 labels).
const maxNameLength = 63

// ServiceName is the name of the Service in front of a cluster's workers.
func ServiceName(cc *v1alpha1.ConnectCluster) string { return ChildName(cc.Name, "connect") }

// ChildName is "<cluster>-<suffix>", shortened with a hash of the full name
// when it would be longer than a Service name may be.
func ChildName(clusterName, suffix string) string {
	full := clusterName + "-" + suffix
	if len(full) <= maxNameLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	h := hex.EncodeToString(sum[:])[:8]
	keep := maxNameLength - len(suffix) - len(h) - 2
	return strings.TrimRight(clusterName[:keep], "-.") + "-" + h + "-" + suffix
}

// LabelValue returns name if it is a valid label value length, else a
// shortened form with a hash of the full name.
func LabelValue(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:54], "-._") + "-" + hex.EncodeToString(sum[:])[:8]
}

// SelectorLabels select the worker pods of a cluster; they never change for
// the life of the cluster (a Deployment's selector is immutable).
func SelectorLabels(cc *v1alpha1.ConnectCluster) map[string]string {
	return map[string]string{
		LabelName:    WorkerAppName,
		LabelCluster: LabelValue(cc.Name),
	}
}

// CommonLabels are put on every child of a cluster.
func CommonLabels(cc *v1alpha1.ConnectCluster) map[string]string {
	l := SelectorLabels(cc)
	l[LabelInstance] = LabelValue(cc.Name)
	l[LabelComponent] = ComponentWorker
	l[LabelManagedBy] = ManagedBy
	return l
}
