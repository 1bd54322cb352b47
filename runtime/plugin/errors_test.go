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
)

// The errors.* keys are validated like Kafka's: each bad value is reported
// on its own key, and a sink may not send its dead letters to a topic it
// consumes.
func TestValidateErrorHandling(t *testing.T) {
	base := func(extra ...string) map[string]string {
		m := map[string]string{"name": "s", "connector.class": "x", "file": "f", "topics": "in"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	cases := []struct {
		name string
		cfg  map[string]string
		key  string // the key the only error names; "" for none
		msg  string
	}{
		{"defaults", base(), "", ""},
		{"tolerance all", base(KeyErrorsTolerance, "all", KeyDLQTopicName, "dlq", KeyDLQReplication, "1"), "", ""},
		{"tolerance is case-insensitive", base(KeyErrorsTolerance, "ALL"), "", ""},
		{"bad tolerance", base(KeyErrorsTolerance, "some"), KeyErrorsTolerance, "none, all"},
		{"retry timeout below -1", base(KeyErrorsRetryTimeout, "-2"), KeyErrorsRetryTimeout, "at least -1"},
		{"retry timeout not a number", base(KeyErrorsRetryTimeout, "soon"), KeyErrorsRetryTimeout, ""},
		{"max delay zero", base(KeyErrorsRetryMaxDelay, "0"), KeyErrorsRetryMaxDelay, "at least 1"},
		{"log enable not a boolean", base(KeyErrorsLogEnable, "yes please"), KeyErrorsLogEnable, ""},
		{"replication factor zero", base(KeyDLQReplication, "0"), KeyDLQReplication, "-1"},
		{"dlq is a consumed topic", base(KeyDLQTopicName, "in"), KeyDLQTopicName, "consumed topics"},
		{"dlq matches topics.regex", map[string]string{"name": "s", "connector.class": "x", "file": "f", KeyTopicsRegex: "in.*", KeyDLQTopicName: "in-dlq"},
			KeyDLQTopicName, KeyTopicsRegex},
	}
	for _, tc := range cases {
		res := ValidateConfig(context.Background(), sinkPlugin(nil), tc.cfg)
		errs := res.Errors()
		if tc.key == "" {
			if res.ErrorCount != 0 {
				t.Errorf("%s: unexpected errors %+v", tc.name, errs)
			}
			continue
		}
		if res.ErrorCount != 1 || errs[0].Name != tc.key || !strings.Contains(errs[0].Message, tc.msg) {
			t.Errorf("%s: want one error on %s containing %q, got %+v", tc.name, tc.key, tc.msg, errs)
		}
	}
}

// The dead letter queue keys exist for sinks only.
func TestErrorHandlingKeysPerKind(t *testing.T) {
	has := func(kind Kind, key string) bool { return CommonSpec(kind).Field(key) != nil }
	for _, k := range []string{KeyErrorsRetryTimeout, KeyErrorsRetryMaxDelay, KeyErrorsTolerance, KeyErrorsLogEnable, KeyErrorsLogIncludeMessage} {
		if !has(KindSource, k) || !has(KindSink, k) {
			t.Errorf("%s: want it for sources and sinks", k)
		}
	}
	for _, k := range []string{KeyDLQTopicName, KeyDLQReplication, KeyDLQHeaders} {
		if has(KindSource, k) || !has(KindSink, k) {
			t.Errorf("%s: want it for sinks only", k)
		}
	}
}
