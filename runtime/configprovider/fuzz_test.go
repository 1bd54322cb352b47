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
	"context"
	"strings"
	"testing"
)

// FuzzPlaceholders: Parse, Check, Resolve and Scrub take any config value
// without a panic; every placeholder Parse returns is a substring of the
// input; a scrubbed message never holds a resolved value.
func FuzzPlaceholders(f *testing.F) {
	for _, s := range []string{"${secret:db:pw}", "${secret:Bad_Name}", "${file:/a:b:c}${env:X}", "${", "$${x:}}", "${secret:a:b", "${a:${b:c}}", "${file:../../etc/passwd}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, p := range Parse(v) {
			if !strings.Contains(v, p.Raw) || p.Provider == "" {
				t.Fatalf("placeholder %+v not from %q", p, v)
			}
		}
		r := Distributed(ProviderFunc(func(_ context.Context, _ string, keys []string) (map[string]string, error) {
			out := map[string]string{}
			for _, k := range keys {
				out[k] = "resolved-marker-" + k
			}
			return out, nil
		}), Access{})
		_ = r.Check(map[string]string{"k": v})
		if _, err := r.Resolve(context.Background(), map[string]string{"k": v}); err != nil {
			return
		}
		if got := r.Scrub("msg " + v + " resolved-marker-"); strings.Contains(got, "resolved-marker-x") {
			t.Fatalf("scrub kept a value: %q", got)
		}
	})
}
