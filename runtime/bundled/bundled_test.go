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
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

func TestRegistry(t *testing.T) {
	r := Registry()
	list := r.List()
	if len(list) != 3 {
		t.Fatalf("%d plugins", len(list))
	}
	for name, kind := range map[string]plugin.Kind{
		"FileSource": plugin.KindSource, "FileSinkConnector": plugin.KindSink, "RangeSource": plugin.KindSource,
		"org.apache.kafka.connect.file.FileStreamSourceConnector": plugin.KindSource,
		"FileStreamSink": plugin.KindSink,
		"dev.conveyor.connect.range.RangeSourceConnector": plugin.KindSource,
	} {
		p, ok := r.Lookup(name)
		if !ok || p.Kind != kind || p.Version == "" {
			t.Errorf("%s: %+v %v", name, p, ok)
		}
	}
}
