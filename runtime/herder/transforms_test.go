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

// GET /connector-plugins/{plugin}/config answers for transformations,
// predicates and converters too (KIP-769), by class or alias, with each
// key's type, default and whether it is required.
func TestPluginConfigOfTransformsPredicatesAndConverters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	find := func(plugin, key string) connectapi.ConfigKeyInfo {
		t.Helper()
		keys, err := e.h.PluginConfig(ctx, plugin)
		if err != nil {
			t.Fatalf("config of %s: %v", plugin, err)
		}
		for _, k := range keys {
			if k.Name == key {
				return k
			}
		}
		t.Fatalf("config of %s lacks %s: %+v", plugin, key, keys)
		return connectapi.ConfigKeyInfo{}
	}
	if k := find("ReplaceField$Value", "exclude"); k.Type != "LIST" || k.Required || k.Documentation == "" {
		t.Errorf("ReplaceField exclude: %+v", k)
	}
	if k := find("org.apache.kafka.connect.transforms.RegexRouter", "regex"); k.Type != "STRING" || !k.Required || k.DefaultValue != nil {
		t.Errorf("RegexRouter regex: %+v", k)
	}
	if k := find("unwrap", "drop.tombstones"); k.Type != "BOOLEAN" || k.DefaultValue == nil || *k.DefaultValue != "true" {
		t.Errorf("unwrap drop.tombstones: %+v", k)
	}
	if k := find("TopicNameMatches", "pattern"); !k.Required {
		t.Errorf("TopicNameMatches pattern: %+v", k)
	}
	if k := find("org.apache.kafka.connect.json.JsonConverter", "schemas.enable"); k.Type != "BOOLEAN" || k.DefaultValue == nil || *k.DefaultValue != "true" {
		t.Errorf("JsonConverter schemas.enable: %+v", k)
	}
	if keys, err := e.h.PluginConfig(ctx, "ByteArrayConverter"); err != nil || len(keys) != 0 {
		t.Errorf("ByteArrayConverter: %v, %v; want no keys", keys, err)
	}
	if _, err := e.h.PluginConfig(ctx, "org.example.Nothing"); err == nil {
		t.Error("an unknown plugin has a config")
	}
}
