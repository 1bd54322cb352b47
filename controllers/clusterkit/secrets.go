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
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// SecretRef is one ${secret:<name>:<key>} placeholder of a connector config:
// a key of a Secret in the connector's namespace.
type SecretRef struct {
	Name string
	Key  string
}

// secretPlaceholder matches ${secret:<name>:<key>}; name and key are checked
// separately so that a malformed reference gets a precise message.
var secretPlaceholder = regexp.MustCompile(`\$\{secret:([^}]*)\}`)

// SecretRefs returns every Secret reference in a connector config, sorted
// and de-duplicated, or an error naming the config key whose placeholder is
// malformed. Values are never echoed, only key names.
func SecretRefs(config map[string]string) ([]SecretRef, error) {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[SecretRef]bool{}
	var refs []SecretRef
	for _, k := range keys {
		for _, m := range secretPlaceholder.FindAllStringSubmatch(config[k], -1) {
			name, key, ok := strings.Cut(m[1], ":")
			if !ok || name == "" || key == "" {
				return nil, fmt.Errorf("config key %q: a secret placeholder must be ${secret:<secret-name>:<key>}", k)
			}
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return nil, fmt.Errorf("config key %q: secret name %q is not valid: %s", k, name, strings.Join(errs, "; "))
			}
			if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
				return nil, fmt.Errorf("config key %q: key %q of secret %q is not valid: %s", k, key, name, strings.Join(errs, "; "))
			}
			ref := SecretRef{Name: name, Key: key}
			if !seen[ref] {
				seen[ref] = true
				refs = append(refs, ref)
			}
		}
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Name != refs[j].Name {
			return refs[i].Name < refs[j].Name
		}
		return refs[i].Key < refs[j].Key
	})
	return refs, nil
}

// SecretNames is the sorted, de-duplicated list of Secret names that refs
// use: exactly the resourceNames the workers' Role must allow.
func SecretNames(refs ...[]SecretRef) []string {
	seen := map[string]bool{}
	var out []string
	for _, rs := range refs {
		for _, r := range rs {
			if !seen[r.Name] {
				seen[r.Name] = true
				out = append(out, r.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ConnectorSecretNames is the sorted list of Secrets that the connectors
// reference through ${secret:<name>:<key>} placeholders. A connector with a
// malformed placeholder contributes nothing (its own status says why, and
// the operator does not create it).
func ConnectorSecretNames(kcs ...v1alpha1.KafkaConnector) []string {
	var all [][]SecretRef
	for i := range kcs {
		if refs, err := SecretRefs(kcs[i].Spec.Config); err == nil {
			all = append(all, refs)
		}
	}
	return SecretNames(all...)
}

// SecretsRoleName names the Role, and its RoleBinding, that let a cluster's
// workers read the Secrets its connectors reference.
func SecretsRoleName(cc *v1alpha1.ConnectCluster) string {
	return ChildName(cc.Name, "connect-secrets")
}
