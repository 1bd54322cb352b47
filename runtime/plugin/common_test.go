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

import "testing"

func TestSinkTaskConfigsAreIndependentCopies(t *testing.T) {
	cfg := map[string]string{"topics": "a", "file": "/out"}
	got := SinkTaskConfigs(cfg, 3)
	if len(got) != 3 {
		t.Fatalf("%d task configs, want 3", len(got))
	}
	got[0]["file"] = "/changed"
	if cfg["file"] != "/out" || got[1]["file"] != "/out" || got[2]["topics"] != "a" {
		t.Fatalf("task configs share state: %v, connector config %v", got, cfg)
	}
	if empty := SinkTaskConfigs(nil, 1); empty[0] == nil {
		t.Fatal("a nil config gives a nil task config, want an empty one")
	}
}
