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

package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsOptions serves the operator's metrics. Secure (the default), they
// are HTTPS (a self-signed certificate unless one is mounted) behind
// controller-runtime's authentication and authorization filter: the caller's
// bearer token goes to a TokenReview, and a SubjectAccessReview must allow it
// "get" on the non-resource URL /metrics (the chart's metrics-reader
// ClusterRole). The operator's ServiceAccount needs "create" on tokenreviews
// and subjectaccessreviews for that (config/rbac/metrics_auth_role.yaml).
func MetricsOptions(addr string, secure bool) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: addr}
	if secure {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}
