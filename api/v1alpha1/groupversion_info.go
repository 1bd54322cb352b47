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

// Package v1alpha1 holds the ConnectCluster and KafkaConnector API types of the
// connect.conveyor.dev group.
// +kubebuilder:object:generate=true
// +groupName=connect.conveyor.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Conveyor API.
	GroupVersion = schema.GroupVersion{Group: "connect.conveyor.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Conveyor types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Conveyor types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
