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

package rest

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

var jsonAlphabet = []string{"a", "b", `"`, `\`, ",", ":", "{", "}", "[", "]", " ", "é", "\n", "<", "1"}

func randomString(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(8) {
		b.WriteString(jsonAlphabet[rng.IntN(len(jsonAlphabet))])
	}
	return b.String()
}

func randomJSON(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(6); {
	case depth > 3 || k == 0:
		return randomString(rng)
	case k == 1:
		return json.Number("12.50")
	case k == 2:
		if rng.IntN(2) == 0 {
			return nil
		}
		return true
	case k == 3:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = randomJSON(rng, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[randomString(rng)] = randomJSON(rng, depth+1)
		}
		return m
	}
}

// scrubValue is the structural scrub scrubJSON must equal: every string,
// keys included (but top-level keys), through f(top).
func scrubValue(v any, top string, depth int, f func(top string) func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(top)(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = scrubValue(e, top, depth+1, f)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if depth == 0 {
				out[k] = scrubValue(e, k, depth+1, f)
			} else {
				out[f(top)(k)] = scrubValue(e, top, depth+1, f)
			}
		}
		return out
	default:
		return v
	}
}

// Over random JSON documents and a scrubber that replaces JSON syntax
// itself (quotes, commas, brackets), the answer stays valid JSON and says
// exactly what the document said with each string scrubbed on its own, by
// the scrubber chosen for its top-level key.
func TestScrubJSONPropertyStaysValidAndStructural(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 4))
	for i := range 3000 {
		doc := randomJSON(rng, 0)
		body, err := encodeJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		secret := randomString(rng)
		f := func(top string) func(string) string {
			return func(s string) string {
				if secret == "" || strings.HasPrefix(top, "a") {
					return s // another connector's entry: untouched
				}
				return strings.ReplaceAll(s, secret, "${secret:x:y}")
			}
		}
		out, err := scrubJSON(body, f)
		if err != nil {
			t.Fatalf("case %d: scrubJSON(%s): %v", i, body, err)
		}
		if !json.Valid(out) {
			t.Fatalf("case %d: invalid JSON out of %s (secret %q): %s", i, body, secret, out)
		}
		var got, want any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		wb, _ := encodeJSON(scrubValue(doc, "", 0, f))
		if err := json.Unmarshal(wb, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: scrubbed %s (secret %q)\n got  %s\n want %s", i, body, secret, out, wb)
		}
	}
	// Not JSON: scrubbed as text.
	if got := string(scrubBody([]byte("metric{a=\"s3cr3t\"} 1\n"), bodyScrubber{all: func(s string) string { return strings.ReplaceAll(s, "s3cr3t", "x") }, at: nil})); got != "metric{a=\"x\"} 1\n" {
		t.Fatalf("text body: %q", got)
	}
}
