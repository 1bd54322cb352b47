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
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// Field indexes the reconcilers share. Register them once, with SetupIndexes.
const (
	// ConnectorClusterRefIndex indexes KafkaConnectors by spec.clusterRef.name.
	ConnectorClusterRefIndex = "spec.clusterRef.name"
	// ClusterGroupIDIndex indexes ConnectClusters by their resolved group id.
	ClusterGroupIDIndex = "connect.conveyor.dev/groupId"
)

// SetupIndexes registers the field indexes of ConnectClusters and
// KafkaConnectors. Call it once per manager, before the reconcilers start.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.KafkaConnector{}, ConnectorClusterRefIndex, ClusterRefOf); err != nil {
		return fmt.Errorf("indexing KafkaConnectors by %s: %w", ConnectorClusterRefIndex, err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.ConnectCluster{}, ClusterGroupIDIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.ConnectCluster).GroupID()}
	}); err != nil {
		return fmt.Errorf("indexing ConnectClusters by group id: %w", err)
	}
	return nil
}

// ClusterRefOf is the ConnectorClusterRefIndex function: the name of the
// ConnectCluster a KafkaConnector runs on.
func ClusterRefOf(o client.Object) []string {
	kc, ok := o.(*v1alpha1.KafkaConnector)
	if !ok || kc.Spec.ClusterRef.Name == "" {
		return nil
	}
	return []string{kc.Spec.ClusterRef.Name}
}
