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
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/properties"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// spec.connectorClientOverrides reaches the workers as
// connector.client.config.override.policy and .allowlist, and the worker
// reads it back as the policy; without it the workers run Kafka 4.x's
// default (All). An allow-list naming a setting the workers do not support
// is refused naming the key.
func TestWorkerConfigCarriesTheClientOverridePolicy(t *testing.T) {
	for _, tc := range []struct {
		spec          *v1alpha1.ClientOverridePolicy
		wantPolicy    string
		wantAllowlist []string
	}{
		{nil, clientconfig.PolicyAll, nil},
		{&v1alpha1.ClientOverridePolicy{Policy: "None"}, clientconfig.PolicyNone, nil},
		{&v1alpha1.ClientOverridePolicy{Policy: "Principal"}, clientconfig.PolicyPrincipal, nil},
		{&v1alpha1.ClientOverridePolicy{Policy: "Allowlist", Allowlist: []string{"linger.ms", "sasl.jaas.config"}}, clientconfig.PolicyAllowlist, []string{"linger.ms", "sasl.jaas.config"}},
	} {
		cc := minimalCluster()
		cc.Spec.ConnectorClientOverrides = tc.spec
		cfg, err := BuildWorkerConfig(cc, WorkerConfigInputs{})
		if err != nil {
			t.Fatal(err)
		}
		rendered := BuildWorkerConfigMap(cc, cfg).Data[ConfigFileName]
		entries, err := properties.Parse(strings.NewReader(rendered))
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := workerconfig.Parse(properties.ToMap(entries))
		if err != nil {
			t.Fatalf("the worker refuses the rendered config: %v", err)
		}
		p, err := loaded.OverridePolicy()
		if err != nil || p.Name != tc.wantPolicy || strings.Join(p.Allowlist, ",") != strings.Join(tc.wantAllowlist, ",") {
			t.Errorf("%+v: the worker reads policy %+v (%v), want %s %v", tc.spec, p, err, tc.wantPolicy, tc.wantAllowlist)
		}
	}
	cc := minimalCluster()
	cc.Spec.ConnectorClientOverrides = &v1alpha1.ClientOverridePolicy{Policy: "Allowlist", Allowlist: []string{"lingerms"}}
	if _, err := BuildWorkerConfig(cc, WorkerConfigInputs{}); err == nil || !strings.Contains(err.Error(), `connector.client.config.override.allowlist: "lingerms" is not a client property`) {
		t.Errorf("an unknown allow-list entry: %v, want an error naming the key", err)
	}
}
