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

package clientconfig

import (
	"fmt"
	"slices"
	"strings"
)

// Worker configuration keys of the override policy (Kafka's names).
const (
	// KeyPolicy is connector.client.config.override.policy.
	KeyPolicy = "connector.client.config.override.policy"
	// KeyAllowlist is connector.client.config.override.allowlist (KIP-1188):
	// the properties the Allowlist policy lets connectors override.
	KeyAllowlist = "connector.client.config.override.allowlist"
)

// The policies, by Kafka's aliases.
const (
	// PolicyNone refuses every override.
	PolicyNone = "None"
	// PolicyPrincipal allows only a client's identity: security.protocol,
	// sasl.mechanism and sasl.jaas.config (Kafka 4.2 deprecates it in favour
	// of Allowlist).
	PolicyPrincipal = "Principal"
	// PolicyAll allows every property of the table. Kafka's default since
	// 3.0 (KIP-722) and still in 4.x; KIP-1188 makes Allowlist the default
	// in 5.0.
	PolicyAll = "All"
	// PolicyAllowlist allows the properties of the allow-list (KIP-1188,
	// Kafka 4.2); with an empty list it refuses every override.
	PolicyAllowlist = "Allowlist"
	// DefaultPolicy is Kafka 4.x's default.
	DefaultPolicy = PolicyAll
)

// Policies lists the policies.
var Policies = []string{PolicyNone, PolicyPrincipal, PolicyAll, PolicyAllowlist}

// Policy decides which client properties connectors may override.
type Policy struct {
	// Name is one of Policies; "" is DefaultPolicy.
	Name string
	// Allowlist holds the properties PolicyAllowlist allows (names without
	// prefix; each applies to every client kind, as in Kafka).
	Allowlist []string
}

// ParsePolicy reads a policy by Kafka's alias (None, Principal, All,
// Allowlist, any case) or class name
// (org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy),
// with its allow-list. "" is DefaultPolicy. An allow-list naming a
// property the table does not have, or given to another policy, is an
// error naming the key.
func ParsePolicy(name string, allowlist []string) (Policy, error) {
	alias := strings.TrimSpace(name)
	alias = strings.TrimPrefix(alias, "org.apache.kafka.connect.connector.policy.")
	alias = strings.TrimSuffix(alias, "ConnectorClientConfigOverridePolicy")
	p := Policy{Name: DefaultPolicy}
	if alias != "" {
		i := slices.IndexFunc(Policies, func(s string) bool { return strings.EqualFold(s, alias) })
		if i < 0 {
			return Policy{}, fmt.Errorf("%s=%q: use %s", KeyPolicy, name, strings.Join(Policies, ", "))
		}
		p.Name = Policies[i]
	}
	if len(allowlist) > 0 && p.Name != PolicyAllowlist {
		return Policy{}, fmt.Errorf("%s is set but %s=%s does not read it; use %s=%s or remove the list", KeyAllowlist, KeyPolicy, p.Name, KeyPolicy, PolicyAllowlist)
	}
	for _, n := range allowlist {
		if _, ok := Lookup(n); !ok {
			return Policy{}, fmt.Errorf("%s: %q is not a client property Conveyor supports; supported: %s", KeyAllowlist, n, strings.Join(Names(Producer|Consumer|Admin), ", "))
		}
	}
	p.Allowlist = slices.Clone(allowlist)
	return p, nil
}

// Allows reports whether connectors may override the property name.
func (p Policy) Allows(name string) bool {
	switch p.Name {
	case PolicyNone:
		return false
	case PolicyPrincipal:
		prop, ok := Lookup(name)
		return ok && prop.Principal
	case PolicyAllowlist:
		return slices.Contains(p.Allowlist, name)
	}
	return true // All, and the default
}

// Refusal is the message for an override key the policy refuses: it names
// the key and the policy.
func (p Policy) Refusal(key string) string {
	name := p.Name
	if name == "" {
		name = DefaultPolicy
	}
	msg := fmt.Sprintf("the %q policy (%s=%s) does not allow %q to be overridden in the connector configuration", name, KeyPolicy, name, key)
	switch name {
	case PolicyPrincipal:
		msg += "; it allows only security.protocol, sasl.mechanism and sasl.jaas.config"
	case PolicyAllowlist:
		if len(p.Allowlist) == 0 {
			msg += "; its allow-list (" + KeyAllowlist + ") is empty"
		} else {
			msg += "; its allow-list (" + KeyAllowlist + ") holds " + strings.Join(p.Allowlist, ", ")
		}
	}
	return msg + ". Remove the key, or ask the cluster's owner to allow it"
}
