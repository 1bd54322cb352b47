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
	corev1 "k8s.io/api/core/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// AllowedSecretNames is clusterkit.ConnectorSecretNames limited to the Secrets the
// cluster's spec.connectorAccess.secrets lists: exactly the resourceNames of
// the workers' Role. A connector naming any other Secret gets no grant (its
// own status says SecretNotAllowed), so naming a Secret is never enough to
// be given it.
func AllowedSecretNames(cc *v1alpha1.ConnectCluster, kcs ...v1alpha1.KafkaConnector) []string {
	var out []string
	for _, n := range clusterkit.ConnectorSecretNames(kcs...) {
		if cc.SecretAllowed(n) {
			out = append(out, n)
		}
	}
	return out
}

// GeneratesMetricsToken reports whether the operator keeps the cluster's
// metrics token Secret (metrics authentication on, no user Secret named).
func GeneratesMetricsToken(cc *v1alpha1.ConnectCluster) bool {
	return cc.MetricsAuthenticationEnabled() && cc.Spec.Metrics.Authentication.TokenSecret == nil
}

// BuildMetricsTokenSecret builds the generated metrics token Secret
// ("<cluster>-metrics-token", key "token"), given its token as
// BuildRestTokenSecret is.
func BuildMetricsTokenSecret(cc *v1alpha1.ConnectCluster, token string) *corev1.Secret {
	return buildTokenSecret(cc, cc.MetricsTokenSecret(), token)
}
