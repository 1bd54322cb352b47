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

// A connector whose transforms are misconfigured is refused by
// ValidateConfig (the herder's check at creation and the REST validate
// endpoint), with each error on its own key.
func TestValidateConfigChecksTransforms(t *testing.T) {
	base := map[string]string{"name": "s", "connector.class": "x", "file": "f", "topics": "a"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		config map[string]string
		key    string
		text   string
	}{
		{with("transforms", "x", "transforms.x.type", "com.example.Missing"), "transforms.x.type", "unknown transform type"},
		{with("transforms", "x"), "transforms.x.type", "has no type"},
		{with("transforms", "m", "transforms.m.type", "MaskField$Value"), "transforms.m.fields", "missing required option"},
		{with("transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "nope"), "transforms.f.predicate", "does not list"},
	}
	for _, tc := range cases {
		res := ValidateConfig(context.Background(), sinkPlugin(nil), tc.config)
		errs := res.Errors()
		if res.ErrorCount != 1 || errs[0].Name != tc.key || !strings.Contains(errs[0].Message, tc.text) {
			t.Errorf("%v: errors %+v, want one on %s containing %q", tc.config, errs, tc.key, tc.text)
		}
	}
	ok := with("transforms", "u", "transforms.u.type", "unwrap", "transforms.u.delete.handling.mode", "rewrite")
	if res := ValidateConfig(context.Background(), sinkPlugin(nil), ok); res.ErrorCount != 0 {
		t.Fatalf("valid transforms refused: %+v", res.Errors())
	}
}
