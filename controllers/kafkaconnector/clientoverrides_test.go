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

package kafkaconnector

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// policyHerder adds the worker's own check of client overrides
// (plugin.ValidateConfig under a policy) to the herder double's validation.
type policyHerder struct {
	*memHerder
	policy clientconfig.Policy
}

func (h policyHerder) ValidateConfig(ctx context.Context, class string, cfg map[string]string) (connectapi.ConfigInfos, error) {
	infos, err := h.memHerder.ValidateConfig(ctx, class, cfg)
	if err != nil {
		return infos, err
	}
	res := plugin.ValidateConfig(ctx, plugin.Plugin{Class: class, Kind: plugin.KindSink}, cfg, plugin.WithClientOverridePolicy(h.policy))
	for _, c := range res.Configs {
		if clientconfig.IsOverride(c.Value.Name) && len(c.Value.Errors) > 0 {
			infos.ErrorCount += len(c.Value.Errors)
			infos.Configs = append(infos.Configs, connectapi.ConfigInfo{Definition: connectapi.ConfigKeyInfo{Name: c.Value.Name},
				Value: connectapi.ConfigValueInfo{Name: c.Value.Name, Errors: c.Value.Errors}})
		}
	}
	return infos, nil
}

// A KafkaConnector whose client override the cluster's policy refuses, or
// that names an override the workers do not support, is not created, and
// its Ready condition names the key and the policy.
func TestReadyNamesARefusedClientOverride(t *testing.T) {
	policy, err := clientconfig.ParsePolicy(clientconfig.PolicyPrincipal, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(h *memHerder) connectapi.Herder { return policyHerder{memHerder: h, policy: policy} })
	e.apply("tuned", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["consumer.override.max.poll.records"] = "50" })
	e.apply("typo", func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["consumer.override.max.pol.records"] = "50" })
	e.apply("own-login", func(kc *v1alpha1.KafkaConnector) {
		kc.Spec.Config["consumer.override.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required username="orders" password="orders-pw";`
	})
	for _, n := range []string{"tuned", "typo", "own-login"} {
		e.reconcile(n)
	}
	for name, mentions := range map[string][]string{
		"tuned": {"consumer.override.max.poll.records", `"Principal" policy`, "connector.client.config.override.policy=Principal"},
		"typo":  {"consumer.override.max.pol.records", "max.pol.records is not a consumer property Conveyor supports"},
	} {
		c := e.ready(name)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonConfigInvalid {
			t.Fatalf("%s: Ready = %+v, want False with reason %s", name, c, v1alpha1.ReasonConfigInvalid)
		}
		for _, m := range mentions {
			if !strings.Contains(c.Message, m) {
				t.Errorf("%s: Ready message %q does not mention %q", name, c.Message, m)
			}
		}
		if _, err := e.herder.ConnectorConfig(e.ctx, name); err == nil {
			t.Errorf("%s was created despite a refused override", name)
		}
	}
	if c := e.ready("own-login"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("the Principal policy refused a connector's own login: %+v", c)
	}
}
