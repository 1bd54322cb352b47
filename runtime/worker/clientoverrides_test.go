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

package worker

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
)

// A worker with connector.client.config.override.policy=Principal answers
// a connector config that overrides linger.ms, or names an override it
// does not support, with 400 naming the key and the policy, in both PUT
// /connectors/{c}/config and the validate endpoint; the connector's own
// login it accepts. A worker on PLAINTEXT refuses a login without
// security.protocol.
func TestRESTRefusesClientOverridesByPolicy(t *testing.T) {
	w := startTestWorker(t, newKafka(t), map[string]string{clientconfig.KeyPolicy: "Principal"})
	base := rangeConnector("tuned", 1)
	login := `org.apache.kafka.common.security.plain.PlainLoginModule required username="orders" password="orders-pw";`
	for _, tc := range []struct {
		key, value string
		mentions   []string // empty: accepted
	}{
		{"producer.override.linger.ms", "5", []string{`"producer.override.linger.ms"`, `"Principal" policy`, "connector.client.config.override.policy=Principal"}},
		{"producer.override.linger.msx", "5", []string{"producer.override.linger.msx", "linger.msx is not a producer property Conveyor supports"}},
		{"producer.override.sasl.jaas.config", login, []string{"producer.override.security.protocol", "security.protocol=PLAINTEXT does not use SASL"}},
	} {
		cfg := map[string]string{}
		for k, v := range base {
			cfg[k] = v
		}
		cfg[tc.key] = tc.value
		code, body := doJSON(t, http.MethodPut, w.url+"/connectors/tuned/config", cfg)
		var answer struct {
			Message string `json:"message"`
		}
		if code != http.StatusBadRequest || json.Unmarshal(body, &answer) != nil {
			t.Fatalf("%s: PUT config answered %d %s, want 400", tc.key, code, body)
		}
		for _, m := range tc.mentions {
			if !strings.Contains(answer.Message, m) {
				t.Errorf("%s: PUT config answer %q does not mention %s", tc.key, answer.Message, m)
			}
		}
		if strings.Contains(string(body), "orders-pw") {
			t.Errorf("%s: the answer shows the password: %s", tc.key, body)
		}
		code, body = doJSON(t, http.MethodPut, w.url+"/connector-plugins/RangeSourceConnector/config/validate", cfg)
		var infos struct {
			ErrorCount int `json:"error_count"`
			Configs    []struct {
				Value struct {
					Name   string   `json:"name"`
					Errors []string `json:"errors"`
				} `json:"value"`
			} `json:"configs"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &infos) != nil {
			t.Fatalf("%s: validate answered %d %s", tc.key, code, body)
		}
		var errs []string
		for _, c := range infos.Configs {
			for _, e := range c.Value.Errors {
				errs = append(errs, c.Value.Name+": "+e)
			}
		}
		joined := strings.Join(errs, "\n")
		for _, m := range tc.mentions {
			if !strings.Contains(joined, m) {
				t.Errorf("%s: validate errors %q do not mention %s", tc.key, joined, m)
			}
		}
	}
	// The connector's own login, with its protocol, is what Principal allows.
	cfg := map[string]string{}
	for k, v := range base {
		cfg[k] = v
	}
	cfg["producer.override.security.protocol"] = "SASL_PLAINTEXT"
	cfg["producer.override.sasl.jaas.config"] = login
	code, body := doJSON(t, http.MethodPut, w.url+"/connector-plugins/RangeSourceConnector/config/validate", cfg)
	if code != http.StatusOK || !strings.Contains(string(body), `"error_count":0`) {
		t.Fatalf("the Principal policy refused a connector's own login: %d %s", code, body)
	}
}
