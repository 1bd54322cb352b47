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

package v1alpha1

import "slices"

// MetricsAuthenticationEnabled reports whether scrapes of the metrics port
// need the metrics token (default true).
func (c *ConnectCluster) MetricsAuthenticationEnabled() bool {
	return c.MetricsEnabled() && boolOr(c.Spec.Metrics.Authentication.Enabled, true)
}

// MetricsTokenSecret is the Secret key holding the metrics bearer token:
// metrics.authentication.tokenSecret, or key "token" of the generated
// "<cluster>-metrics-token".
func (c *ConnectCluster) MetricsTokenSecret() SecretKeyRef {
	if s := c.Spec.Metrics.Authentication.TokenSecret; s != nil && s.Name != "" {
		return *s
	}
	return SecretKeyRef{Name: c.Name + "-metrics-token", Key: "token"}
}

// SecretAllowed reports whether connectorAccess.secrets lists name.
func (c *ConnectCluster) SecretAllowed(name string) bool {
	return c.Spec.ConnectorAccess != nil && slices.Contains(c.Spec.ConnectorAccess.Secrets, name)
}

// AllowedFilePaths is connectorAccess.filePaths (nil when none).
func (c *ConnectCluster) AllowedFilePaths() []string {
	if c.Spec.ConnectorAccess == nil {
		return nil
	}
	return c.Spec.ConnectorAccess.FilePaths
}

// AllowedEnvVariables is connectorAccess.envVariables (nil when none).
func (c *ConnectCluster) AllowedEnvVariables() []string {
	if c.Spec.ConnectorAccess == nil {
		return nil
	}
	return c.Spec.ConnectorAccess.EnvVariables
}

// PodMonitorEnabled reports whether metrics.podMonitor.enabled is true.
func (c *ConnectCluster) PodMonitorEnabled() bool {
	return c.Spec.Metrics.PodMonitor != nil && c.Spec.Metrics.PodMonitor.Enabled
}

// FileConnectorPaths are the directories of connectorAccess.fileConnectors.
func (c *ConnectCluster) FileConnectorPaths() []string {
	if c.Spec.ConnectorAccess == nil {
		return nil
	}
	var out []string
	for _, v := range c.Spec.ConnectorAccess.FileConnectors {
		out = append(out, v.Path)
	}
	return out
}

// AmbientCloudCredentialsAllowed reports connectorAccess.ambientCloudCredentials.
func (c *ConnectCluster) AmbientCloudCredentialsAllowed() bool {
	return c.Spec.ConnectorAccess != nil && c.Spec.ConnectorAccess.AmbientCloudCredentials
}

// ClientOverridePolicy is connectorClientOverrides: the policy ("" when
// absent: the workers' default, All) and its allow-list.
func (c *ConnectCluster) ClientOverridePolicy() (policy string, allowlist []string) {
	if o := c.Spec.ConnectorClientOverrides; o != nil {
		return o.Policy, o.Allowlist
	}
	return "", nil
}
