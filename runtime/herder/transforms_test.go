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

package herder

import (
	"context"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// A connector with a bad transform is refused at creation, the error naming
// the key; a good chain is accepted and reaches the tasks with the
// connector config. GET /connector-plugins?connectorsOnly=false lists the
// transformations and predicates.
func TestConnectorTransformsValidatedAtCreation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := sinkConfig("bad", "TestSink", 1)
	bad["transforms"] = "x"
	bad["transforms.x.type"] = "org.example.NoSuchTransform"
	_, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "bad", Config: bad})
	if err == nil || !strings.Contains(err.Error(), "transforms.x.type") {
		t.Fatalf("creating a connector with an unknown transform type: err = %v", err)
	}
	if _, err := e.h.ConnectorInfo(ctx, "bad"); err == nil {
		t.Fatal("the refused connector exists")
	}
	good := sinkConfig("good", "TestSink", 1)
	good["transforms"] = "route"
	good["transforms.route.type"] = "RegexRouter"
	good["transforms.route.regex"] = "(.*)"
	good["transforms.route.replacement"] = "copy-$1"
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "good", Config: good}); err != nil {
		t.Fatal(err)
	}
	plugins, err := e.h.Plugins(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	found := map[connectapi.PluginType]bool{}
	for _, p := range plugins {
		if p.Class == "org.apache.kafka.connect.transforms.RegexRouter" || p.Class == "org.apache.kafka.connect.transforms.predicates.TopicNameMatches" {
			found[p.Type] = true
		}
	}
	if !found[connectapi.PluginTransformation] || !found[connectapi.PluginPredicate] {
		t.Fatalf("plugins list lacks the transformations or predicates: %v", found)
	}
}
