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

package transforms

import (
	"fmt"
	"strings"
	"testing"
)

// An integer option above its bound is refused, naming the option's key
// and the bound; the bound itself is accepted.
func TestIntegerOptionsAreBounded(t *testing.T) {
	cfg := func(v string) map[string]string {
		return map[string]string{"transforms": "meta", "transforms.meta.type": "SetSchemaMetadata$Value", "transforms.meta.schema.version": v}
	}
	if errs := Validate(cfg("2147483647")); len(errs) != 0 {
		t.Fatalf("the bound refused: %v", errs)
	}
	errs := Validate(cfg("2147483648"))
	if len(errs) != 1 || errs[0].Name != "transforms.meta.schema.version" || !strings.Contains(errs[0].Message, "upper bound of schema.version") {
		t.Fatalf("above the bound: %s", fmt.Sprint(errs))
	}
}
