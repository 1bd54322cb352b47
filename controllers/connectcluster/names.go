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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
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

// DeploymentName is the worker Deployment's name (the ScaledObject's target).
func DeploymentName(cc *v1alpha1.ConnectCluster) string {
	return clusterkit.ChildName(cc.Name, "connect")
}

// ServiceName is the name of the Service in front of the workers.
func ServiceName(cc *v1alpha1.ConnectCluster) string { return clusterkit.ServiceName(cc) }

// ServiceAccountName is the worker pods' ServiceAccount.
func ServiceAccountName(cc *v1alpha1.ConnectCluster) string {
	return clusterkit.ChildName(cc.Name, "connect")
}

// PodDisruptionBudgetName is the name of the workers' PodDisruptionBudget.
func PodDisruptionBudgetName(cc *v1alpha1.ConnectCluster) string {
	return clusterkit.ChildName(cc.Name, "connect")
}

// NetworkPolicyName is the name of the workers' NetworkPolicy.
func NetworkPolicyName(cc *v1alpha1.ConnectCluster) string {
	return clusterkit.ChildName(cc.Name, "connect")
}

// ConfigMapName is the name of the ConfigMap holding worker.properties.
func ConfigMapName(cc *v1alpha1.ConnectCluster) string {
	return clusterkit.ChildName(cc.Name, "connect-config")
}

// RestURL is the in-cluster URL of the workers' REST API.
func RestURL(cc *v1alpha1.ConnectCluster) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", ServiceName(cc), cc.Namespace, v1alpha1.RestPort)
}

// Selector is clusterkit.SelectorLabels in string form, for status.selector.
func Selector(cc *v1alpha1.ConnectCluster) string {
	return labels.SelectorFromSet(clusterkit.SelectorLabels(cc)).String()
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
		Labels:          clusterkit.CommonLabels(cc),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(cc)},
	}
}
