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

package plugin

import "context"

// AmbientCredentialsHint tells a connector's author what to do when the
// cluster does not lend its cloud identity.
const AmbientCredentialsHint = "this cluster does not let connectors use the workers' ambient cloud credentials (the pod's or node's role, the environment): give the connector its own keys through ${secret:...} placeholders, or ask the cluster's owner to set spec.connectorAccess.ambientCloudCredentials: true (worker key cloud.ambient.credentials.enabled)"

type ambientKey struct{}

// WithAmbientCredentials returns ctx saying whether connectors may fall
// back to the workers' ambient cloud credentials (the AWS environment
// variables, the instance's or pod's role). The runtime sets it on the
// contexts of Validate, connector Start and task Start.
func WithAmbientCredentials(ctx context.Context, allowed bool) context.Context {
	return context.WithValue(ctx, ambientKey{}, allowed)
}

// AmbientCredentialsAllowed reports whether ctx allows ambient cloud
// credentials; a context without the setting allows them (standalone mode,
// where whoever runs the worker owns its identity).
func AmbientCredentialsAllowed(ctx context.Context) bool {
	allowed, ok := ctx.Value(ambientKey{}).(bool)
	return !ok || allowed
}

// Grants are what a distributed worker's owner lends its connectors beyond
// their own config: the files they may open and whether they may use the
// workers' ambient cloud credentials. The runtime puts them on the context
// of Validate, connector Start and task Start ([Grants.Context]). Nil
// Grants (standalone mode) restrict nothing.
type Grants struct {
	// Files confines the paths file connectors open.
	Files *FileAccess
	// AmbientCredentials lets connectors fall back to the workers' cloud
	// identity when their config has no keys.
	AmbientCredentials bool
}

// Context returns ctx carrying the grants; nil grants leave it as it is.
func (g *Grants) Context(ctx context.Context) context.Context {
	if g == nil {
		return ctx
	}
	return WithAmbientCredentials(WithFileAccess(ctx, g.Files), g.AmbientCredentials)
}

// WithGrants makes ValidateConfig run the connector's Validate with the
// worker's grants in its context.
func WithGrants(g *Grants) ValidateOption {
	return func(o *validateOptions) { o.grants = g }
}
