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

package clusterkit

import (
	"strings"
	"testing"
)

func TestChildNamesStayValid(t *testing.T) {
	long := strings.Repeat("a", 80)
	for _, n := range []string{ChildName(long, "connect"), ChildName(long, "connect-config")} {
		if len(n) > 63 || !strings.HasSuffix(n, "-connect") && !strings.HasSuffix(n, "-connect-config") {
			t.Errorf("child name %q is too long or lost its suffix", n)
		}
	}
	if ChildName(long, "connect") == ChildName(long+"b", "connect") {
		t.Error("two long names map to the same child name")
	}
	if v := LabelValue(long); len(v) > 63 {
		t.Errorf("label value %q too long", v)
	}
}
