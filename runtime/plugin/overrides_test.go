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

import (
	"context"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
)

// Validation (the REST validate answer and connector creation) refuses a
// client override the table does not have and one the policy refuses,
// each naming the key (and the policy), hides a sasl.jaas.config value,
// and still accepts the keys of converters, transforms and predicates.
func TestValidateConfigChecksClientOverrides(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2"`
	cfg := map[string]string{"topics": "in", "name": "s", "connector.class": "TestSink", "file": "/f",
		"consumer.override.max.poll.record":       "5", // a typo
		"consumer.override.max.poll.records":      "5",
		"producer.override.linger.ms":             "5",
		"admin.override.sasl.jaas.config":         jaas, // no closing ';'
		"value.converter.schemas.enable":          "false",
		"transforms":                              "mask",
		"transforms.mask.type":                    "org.apache.kafka.connect.transforms.MaskField$Value",
		"transforms.mask.fields":                  "secret",
		"consumer.override.fetch.max.wait.ms":     "100",
		"consumer.override.auto.offset.reset":     "earliest",
		"consumer.override.isolation.level":       "read_committed",
		"producer.override.compression.type":      "zstd",
		"consumer.override.session.timeout.ms":    "10000",
		"consumer.override.heartbeat.interval.ms": "1000",
	}
	policy, err := clientconfig.ParsePolicy(clientconfig.PolicyAllowlist, []string{"max.poll.records", "sasl.jaas.config", "fetch.max.wait.ms",
		"auto.offset.reset", "isolation.level", "compression.type", "session.timeout.ms", "heartbeat.interval.ms"})
	if err != nil {
		t.Fatal(err)
	}
	res := ValidateConfig(context.Background(), sinkPlugin(nil), cfg, WithClientOverridePolicy(policy))
	got := map[string]string{}
	for _, c := range res.Configs {
		if len(c.Value.Errors) > 0 {
			got[c.Value.Name] = strings.Join(c.Value.Errors, "; ")
			if c.Value.Value != nil && strings.Contains(*c.Value.Value, "hunter2") {
				t.Errorf("%s shows the password in its value", c.Value.Name)
			}
			if strings.Contains(got[c.Value.Name], "hunter2") {
				t.Errorf("%s shows the password in its error", c.Value.Name)
			}
		}
	}
	want := map[string]string{
		"consumer.override.max.poll.record": "max.poll.record is not a consumer property Conveyor supports",
		"producer.override.linger.ms":       `the "Allowlist" policy (connector.client.config.override.policy=Allowlist) does not allow "producer.override.linger.ms"`,
		"admin.override.sasl.jaas.config":   "must end with ';'",
	}
	for k, w := range want {
		if !strings.Contains(got[k], w) {
			t.Errorf("%s: errors %q, want one containing %q", k, got[k], w)
		}
	}
	if len(got) != len(want) || res.ErrorCount != len(want) {
		t.Errorf("errors on %v (count %d), want exactly on %d keys", got, res.ErrorCount, len(want))
	}
	// Without a policy option: Kafka's default (All), and unknown keys are
	// still refused.
	res = ValidateConfig(context.Background(), sinkPlugin(nil), map[string]string{"topics": "in", "name": "s", "connector.class": "TestSink", "file": "/f", "producer.override.linger.ms": "5", "producer.override.lingerms": "5"})
	if errs := res.Errors(); len(errs) != 1 || errs[0].Name != "producer.override.lingerms" {
		t.Errorf("default policy: errors %v, want one on producer.override.lingerms", errs)
	}
}
