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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

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

// Fixed names of ports, volumes and files in the worker pods.
const (
	RestPortName    = "rest"
	MetricsPortName = "metrics"
	ContainerName   = "worker"

	// ConfigDir is where the worker ConfigMap is mounted.
	ConfigDir = "/etc/conveyor"
	// ConfigFileName is the worker properties file inside ConfigDir.
	ConfigFileName = "worker.properties"
	// ConfigPath is the file that conveyor-worker --config reads.
	ConfigPath = ConfigDir + "/" + ConfigFileName
)

// maxNameLength keeps child names valid as Service names (DNS-1035 labels).
const maxNameLength = 63

// childName is "<cluster>-<suffix>", shortened with a hash of the full name
// when it would be longer than a Service name may be.
func childName(clusterName, suffix string) string {
	full := clusterName + "-" + suffix
	if len(full) <= maxNameLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	h := hex.EncodeToString(sum[:])[:8]
	keep := maxNameLength - len(suffix) - len(h) - 2
	return strings.TrimRight(clusterName[:keep], "-.") + "-" + h + "-" + suffix
}

// labelValue returns name if it is a valid label value length, else a
// shortened form with a hash of the full name.
func labelValue(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:54], "-._") + "-" + hex.EncodeToString(sum[:])[:8]
}

// DeploymentName is the worker Deployment's name (the ScaledObject's target).
func DeploymentName(cc *v1alpha1.ConnectCluster) string { return childName(cc.Name, "connect") }

// ServiceName is the name of the Service in front of the workers.
func ServiceName(cc *v1alpha1.ConnectCluster) string { return childName(cc.Name, "connect") }

// ServiceAccountName is the worker pods' ServiceAccount.
func ServiceAccountName(cc *v1alpha1.ConnectCluster) string { return childName(cc.Name, "connect") }

// PodDisruptionBudgetName is the name of the workers' PodDisruptionBudget.
func PodDisruptionBudgetName(cc *v1alpha1.ConnectCluster) string {
	return childName(cc.Name, "connect")
}

// NetworkPolicyName is the name of the workers' NetworkPolicy.
func NetworkPolicyName(cc *v1alpha1.ConnectCluster) string { return childName(cc.Name, "connect") }

// ConfigMapName is the name of the ConfigMap holding worker.properties.
func ConfigMapName(cc *v1alpha1.ConnectCluster) string { return childName(cc.Name, "connect-config") }

// RestURL is the in-cluster URL of the workers' REST API.
func RestURL(cc *v1alpha1.ConnectCluster) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", ServiceName(cc), cc.Namespace, v1alpha1.RestPort)
}

// SelectorLabels select the worker pods of a cluster; they never change for
// the life of the cluster (a Deployment's selector is immutable).
func SelectorLabels(cc *v1alpha1.ConnectCluster) map[string]string {
	return map[string]string{
		LabelName:    WorkerAppName,
		LabelCluster: labelValue(cc.Name),
	}
}

// Selector is SelectorLabels in string form, for status.selector.
func Selector(cc *v1alpha1.ConnectCluster) string {
	return labels.SelectorFromSet(SelectorLabels(cc)).String()
}

// CommonLabels are put on every child of a cluster.
func CommonLabels(cc *v1alpha1.ConnectCluster) map[string]string {
	l := SelectorLabels(cc)
	l[LabelInstance] = labelValue(cc.Name)
	l[LabelComponent] = ComponentWorker
	l[LabelManagedBy] = ManagedBy
	return l
}

// OwnerReference makes a child owned (and garbage-collected) by its cluster.
func OwnerReference(cc *v1alpha1.ConnectCluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         v1alpha1.GroupVersion.String(),
		Kind:               "ConnectCluster",
		Name:               cc.Name,
		UID:                cc.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// objectMeta is the metadata every child starts from.
func objectMeta(cc *v1alpha1.ConnectCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       cc.Namespace,
		Labels:          CommonLabels(cc),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(cc)},
	}
}
