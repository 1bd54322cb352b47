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

package properties

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: any input parses or fails with an error, never a panic, and
// whatever parses writes back to the same entries.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a=b\n", "k: v\\\n  more\n", "# c\n!x\n  =\n", "\\u00e9=\\u12", "a\\\n", "=\n:\n \t\f", "k=v\\u0041\\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		entries, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, entries); err != nil {
			return
		}
		again, err := Parse(&b)
		if err != nil {
			t.Fatalf("written entries do not parse: %v (%q)", err, b.String())
		}
		if len(again) != len(entries) {
			t.Fatalf("%d entries came back as %d", len(entries), len(again))
		}
	})
}
