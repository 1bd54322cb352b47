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
	"context"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Which bundled sinks take consumer.group.type=share (with their default
// settings), and that the others are refused at validation with an error
// on that key saying why. The reasons are in each connector's
// ToleratesShareGroup and in docs/share-groups.md.
func TestBundledSinksShareMode(t *testing.T) {
	want := map[string]string{ // simple class name → "" (accepted) or part of the refusal
		"FileSinkConnector":          "",
		"ElasticsearchSinkConnector": "",
		"PostgresSinkConnector":      "", // insert.mode=insert, pk.mode=none
		"MySqlSinkConnector":         "does not declare that it tolerates records out of order",
		"RedisSinkConnector":         "last write of a key wins",
		"S3SinkConnector":            "consecutive offsets of one partition",
	}
	seen := 0
	for _, p := range Plugins() {
		if p.Kind != plugin.KindSink {
			continue
		}
		name := p.Class[strings.LastIndexByte(p.Class, '.')+1:]
		w, ok := want[name]
		if !ok {
			t.Errorf("bundled sink %s: decide whether it takes share mode and add it here", p.Class)
			continue
		}
		seen++
		cfg := map[string]string{plugin.KeyName: "s", plugin.KeyConnectorClass: p.Class, plugin.KeyTopics: "in", plugin.KeyConsumerGroupType: plugin.GroupTypeShare,
			"connection.url": "postgres://u:p@127.0.0.1:1/db"} // the PostgreSQL sink parses its settings to answer
		fes := plugin.ValidateShareMode(p.NewConnector(), cfg)
		switch {
		case w == "" && len(fes) > 0:
			t.Errorf("%s refuses share mode: %v", name, fes)
		case w != "" && (len(fes) != 1 || fes[0].Name != plugin.KeyConsumerGroupType || !strings.Contains(fes[0].Message, w)):
			t.Errorf("%s: refusal %v, want one error on %s containing %q", name, fes, plugin.KeyConsumerGroupType, w)
		}
		if len(plugin.ValidateShareMode(p.NewConnector(), map[string]string{plugin.KeyTopics: "in"})) != 0 {
			t.Errorf("%s: the default consumer.group.type=consumer was refused", name)
		}
	}
	if seen != len(want) {
		t.Errorf("checked %d bundled sinks, want %d", seen, len(want))
	}
}

// The refusal reaches the validate endpoint's answer (ValidateConfig) on
// the key, for a sink whose own fields are valid.
func TestShareModeRefusedAtValidation(t *testing.T) {
	r := Registry()
	p, ok := r.Lookup("RedisSink")
	if !ok {
		t.Fatal("RedisSink is not registered")
	}
	cfg := map[string]string{plugin.KeyName: "r", plugin.KeyConnectorClass: p.Class, plugin.KeyTopics: "in",
		"redis.url": "redis://127.0.0.1:1", plugin.KeyConsumerGroupType: "share"}
	res := plugin.ValidateConfig(context.Background(), p, cfg)
	for _, fe := range res.Errors() {
		if fe.Name == plugin.KeyConsumerGroupType && strings.Contains(fe.Message, "consumer.group.type=share") {
			return
		}
	}
	t.Fatalf("want an error on %s, got %v", plugin.KeyConsumerGroupType, res.Errors())
}
