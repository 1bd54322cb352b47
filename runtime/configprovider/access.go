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

package configprovider

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/conveyor-dev/conveyor/runtime/pathguard"
)

// Access is what a distributed worker's connectors may read through
// placeholders. The ConnectCluster's owner sets it (spec.connectorAccess,
// rendered into the worker config); a connector's author cannot widen it.
// ${secret:...} is always on: which Secrets it reaches is decided by the
// workers' Role, which lists only the Secrets the cluster's owner allowed.
type Access struct {
	// FilePaths are the files, or directories, that ${file:...} may read.
	// Empty turns ${file:...} off.
	FilePaths []string
	// EnvVariables are the environment variables that ${env:...} may read.
	// Empty turns ${env:...} off.
	EnvVariables []string
}

// Distributed returns the resolver of a distributed worker: the secret
// provider (when not nil), and ${file:} and ${env:} only within access.
// A placeholder of a provider that is off is refused by [Resolver.Check]
// and, at resolution, by the provider's absence (the placeholder stays
// unresolved, as Kafka leaves unknown providers).
func Distributed(secrets Provider, access Access) *Resolver {
	r := NewResolver(nil)
	r.strict = true
	if secrets != nil {
		r.Register("secret", secrets)
	}
	if len(access.FilePaths) > 0 {
		r.Register("file", FileProvider{AllowedPaths: slices.Clone(access.FilePaths), strict: true})
	}
	if len(access.EnvVariables) > 0 {
		r.Register("env", EnvProvider{Allowed: slices.Clone(access.EnvVariables)})
	}
	return r
}

// RefusedError says which config key holds a placeholder the worker may
// not resolve. It names the key and the provider, never a value.
type RefusedError struct {
	Key, Provider, Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("config key %q: ${%s:...} is not allowed on this cluster: %s", e.Key, e.Provider, e.Reason)
}

// Check returns a *RefusedError for the first config key (in key order)
// whose placeholder a distributed worker may not resolve: a ${file:} or
// ${env:} outside the access lists, or a well-known provider that is off.
// A resolver that is not strict (standalone mode) allows everything.
func (r *Resolver) Check(config map[string]string) error {
	if !r.strict {
		return nil
	}
	for _, k := range slices.Sorted(mapsKeys(config)) {
		for _, p := range Parse(config[k]) {
			if reason := r.refusal(p); reason != "" {
				return &RefusedError{Key: k, Provider: p.Provider, Reason: reason}
			}
		}
	}
	return nil
}

func (r *Resolver) refusal(p Placeholder) string {
	prov, ok := r.providers[p.Provider]
	switch {
	case !ok && (p.Provider == "file" || p.Provider == "env"):
		return "the ConnectCluster's spec.connectorAccess allows no " + map[string]string{"file": "filePaths", "env": "envVariables"}[p.Provider] + "; ask the cluster's owner to add it"
	case !ok:
		return ""
	}
	switch v := prov.(type) {
	case FileProvider:
		path := p.Path
		if path == "" {
			path = p.Key
		}
		if err := v.allowed(path); err != nil {
			return "the path is not under spec.connectorAccess.filePaths"
		}
	case EnvProvider:
		if p.Path != "" || !slices.Contains(v.Allowed, p.Key) {
			return "the variable is not in spec.connectorAccess.envVariables"
		}
	}
	return ""
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// NeverReadable are the directories ${file:} never reads in distributed
// mode, whatever the allow-list says: the worker's own credentials (its
// config, REST token and Kafka credentials under /etc/conveyor, the
// ServiceAccount token) and the process's view of itself (/proc/self/environ
// holds every variable). The ConnectCluster's CEL rules refuse such entries
// already; this holds for links too.
var NeverReadable = pathguard.WorkerOwn

// realAllowed is FileProvider.allowed for strict providers: the path and
// every allowed entry are compared after symbolic links are followed, so a
// link inside an allowed directory cannot reach a file outside it.
func realAllowed(path string, allowed []string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("file %s: only absolute paths are allowed", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("file %s does not exist", path)
		}
		return fmt.Errorf("file %s: %w", path, err)
	}
	for _, f := range NeverReadable {
		if real == f || within(f, real) {
			return fmt.Errorf("file %s is among the worker's own credentials or system files (%s), which connectors may never read", path, f)
		}
	}
	for _, a := range allowed {
		ra, err := filepath.EvalSymlinks(a)
		if err != nil {
			continue
		}
		if within(ra, real) {
			return nil
		}
	}
	return fmt.Errorf("file %s is outside the allowed paths", path)
}

func within(dir, path string) bool { return pathguard.Within(dir, path) }
