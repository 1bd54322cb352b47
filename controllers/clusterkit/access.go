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
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/configprovider"
)

// AccessProblem is why a connector config may not run on a cluster.
type AccessProblem struct {
	// Reason is v1alpha1.ReasonSecretNotAllowed or ReasonProviderNotAllowed.
	Reason string
	// Message names the config key and the fix, never a value.
	Message string
}

// ConnectorAccessProblem checks every placeholder of a connector config
// against the cluster's spec.connectorAccess: a ${secret:} Secret must be
// listed in secrets, a ${file:} path must lie under one of filePaths (a
// lexical check; the worker checks again with links followed), and an
// ${env:} variable must be listed in envVariables. It returns nil when all
// are allowed, else the first refusal in key order.
func ConnectorAccessProblem(cc *v1alpha1.ConnectCluster, config map[string]string) *AccessProblem {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, p := range configprovider.Parse(config[k]) {
			switch p.Provider {
			case "secret":
				if !cc.SecretAllowed(p.Path) {
					return &AccessProblem{Reason: v1alpha1.ReasonSecretNotAllowed, Message: fmt.Sprintf(
						"config key %q references Secret %q, which ConnectCluster %s does not allow: ask the cluster's owner to add it to spec.connectorAccess.secrets; the workers are given no access to it until then",
						k, p.Path, cc.Name)}
				}
			case "file":
				f := p.Path
				if f == "" {
					f = p.Key
				}
				if !fileAllowed(f, cc.AllowedFilePaths()) {
					return &AccessProblem{Reason: v1alpha1.ReasonProviderNotAllowed, Message: fmt.Sprintf(
						"config key %q uses ${file:...} outside the paths ConnectCluster %s allows: ask the cluster's owner to add the path to spec.connectorAccess.filePaths, or use a ${secret:<name>:<key>} the cluster allows", k, cc.Name)}
				}
			case "env":
				if p.Path != "" || !slices.Contains(cc.AllowedEnvVariables(), p.Key) {
					return &AccessProblem{Reason: v1alpha1.ReasonProviderNotAllowed, Message: fmt.Sprintf(
						"config key %q uses ${env:...} with a variable ConnectCluster %s does not allow: ask the cluster's owner to add it to spec.connectorAccess.envVariables", k, cc.Name)}
				}
			}
		}
	}
	return nil
}

func fileAllowed(p string, allowed []string) bool {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for _, a := range allowed {
		if p == a || (len(p) > len(a) && p[:len(a)] == a && p[len(a)] == '/') {
			return true
		}
	}
	return false
}
