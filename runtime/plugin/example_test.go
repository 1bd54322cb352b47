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

package plugin_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// counter is a minimal source connector: each task counts from 0 and
// emits one record per number, resuming from its stored offset.
type counter struct{ config map[string]string }

func (c *counter) Validate(context.Context, map[string]string) []plugin.FieldError { return nil }
func (c *counter) Start(_ context.Context, _ plugin.ConnectorContext, config map[string]string) error {
	c.config = config
	return nil
}
func (c *counter) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	return 1, plugin.SingleReader, nil
}
func (c *counter) TaskConfigs(max int) ([]map[string]string, error) {
	return []map[string]string{c.config}, nil
}
func (c *counter) Stop() error { return nil }

type counterTask struct {
	plugin.NopCommitter
	topic string
	next  int64
}

var partition = map[string]any{"counter": "main"}

func (t *counterTask) Start(ctx context.Context, tc plugin.SourceTaskContext, config map[string]string) error {
	t.topic = config["topic"]
	off, err := tc.OffsetReader().Offset(ctx, partition)
	if err != nil {
		return err
	}
	if off != nil {
		t.next = int64(off["next"].(float64))
	}
	return nil
}

func (t *counterTask) Poll(context.Context) ([]*plugin.SourceRecord, error) {
	n := t.next
	t.next++
	return []*plugin.SourceRecord{{
		SourcePartition: partition,
		SourceOffset:    map[string]any{"next": t.next},
		Topic:           t.topic,
		ValueSchema:     data.StringSchema,
		Value:           strconv.FormatInt(n, 10),
	}}, nil
}

func (t *counterTask) Stop() error { return nil }

func Example() {
	reg := plugin.NewRegistry()
	reg.MustRegister(plugin.Plugin{
		Class:   "com.example.CounterConnector",
		Kind:    plugin.KindSource,
		Version: "1.0",
		Spec: plugin.ConfigSpec{Fields: []plugin.ConfigField{
			{Name: "topic", Type: plugin.TypeString, Required: true, Doc: "Topic to write to."},
		}},
		NewConnector:  func() plugin.Connector { return &counter{} },
		NewSourceTask: func() plugin.SourceTask { return &counterTask{} },
	})

	p, _ := reg.Lookup("Counter") // simple name without "Connector"
	res := plugin.ValidateConfig(context.Background(), p, map[string]string{
		"name": "count", "connector.class": "Counter", "tasks.max": "0",
	})
	for _, e := range res.Errors() {
		fmt.Println(e)
	}

	n, reason := plugin.EffectiveTasks(8, 1, plugin.SingleReader)
	fmt.Println(n, reason)
	// Output:
	// tasks.max: Invalid value 0 for configuration tasks.max: Value must be at least 1
	// topic: Missing required configuration "topic" which has no default value.
	// 1 SingleReader
}
