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

package bundled

import (
	"strconv"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Every number key of every bundled connector (its own and the common
// ones) has an upper bound, and a value just above it is refused by the
// connector's validation with a message naming the key and the bound.
func TestEveryBundledNumberKeyIsBounded(t *testing.T) {
	checked := 0
	for _, p := range Plugins() {
		for _, f := range p.FullSpec().Fields {
			if f.Type != plugin.TypeInt && f.Type != plugin.TypeLong && f.Type != plugin.TypeDouble {
				continue
			}
			if f.Max <= 0 {
				t.Errorf("%s: %s has no upper bound", p.Class, f.Name)
				continue
			}
			over := strconv.FormatFloat(f.Max+1, 'f', -1, 64)
			if f.Type == plugin.TypeDouble {
				over = strconv.FormatFloat(f.Max*2, 'g', -1, 64)
			}
			var vals []string
			for _, v := range p.FullSpec().Validate(map[string]string{f.Name: over}) {
				if v.Name == f.Name {
					vals = v.Errors
				}
			}
			want := "the upper bound of " + f.Name
			if !strings.Contains(strings.Join(vals, "\n"), want) {
				t.Errorf("%s: %s=%s: errors %q do not say %q", p.Class, f.Name, over, vals, want)
			}
			checked++
		}
	}
	t.Logf("%d number keys of %d bundled plugins bounded", checked, len(Plugins()))
	if checked < 40 {
		t.Errorf("only %d number keys found", checked)
	}
}
