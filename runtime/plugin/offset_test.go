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
	"encoding/json"
	"strings"
	"testing"
)

func TestOffsetInt64(t *testing.T) {
	for _, v := range []any{int64(42), 42, int32(42), float64(42), json.Number("42")} {
		if n, err := OffsetInt64(v); err != nil || n != 42 {
			t.Errorf("OffsetInt64(%#v) = %d, %v; want 42", v, n, err)
		}
	}
	for v, want := range map[any]string{1.5: "not an integer", "42": "is not a number", nil: "is not a number", json.Number("4.2"): "4.2"} {
		if _, err := OffsetInt64(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OffsetInt64(%#v): error %v, want one containing %q", v, err, want)
		}
	}
}
