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
	"strings"
	"testing"
)

// A number field without an upper bound is refused at registration, so no
// plugin can offer a size or count a tenant may set to anything.
func TestRegisterRefusesNumberFieldWithoutMax(t *testing.T) {
	for _, typ := range []FieldType{TypeInt, TypeLong, TypeDouble} {
		p := sinkPlugin(nil)
		p.Spec = ConfigSpec{Fields: []ConfigField{{Name: "buffer.size", Type: typ, Default: "10"}}}
		err := NewRegistry().Register(p)
		if err == nil || !strings.Contains(err.Error(), `"buffer.size" has no upper bound`) {
			t.Errorf("%s field without Max: got %v, want a refusal naming buffer.size", typ, err)
		}
		p.Spec.Fields[0].Max = 100
		if err := NewRegistry().Register(p); err != nil {
			t.Errorf("%s field with Max: %v", typ, err)
		}
	}
	p := sinkPlugin(nil)
	p.Spec = ConfigSpec{Fields: []ConfigField{{Name: "name.format", Type: TypeString, Max: 3}}}
	if err := NewRegistry().Register(p); err == nil || !strings.Contains(err.Error(), "Max is for number fields") {
		t.Errorf("Max on a STRING field: got %v", err)
	}
	// The common fields are bounded too (tasks.max, the retry times).
	p.Spec = ConfigSpec{}
	if err := NewRegistry().Register(p); err != nil {
		t.Fatal(err)
	}
	p.Kind = KindSource
	p.NewSourceTask = func() SourceTask { return nil }
	if err := NewRegistry().Register(p); err != nil {
		t.Fatal(err)
	}
}

// Validation refuses a value above Max with a message naming the key and
// the bound, accepts the bound itself, and Parse fails the same way.
func TestValidateRefusesAboveMax(t *testing.T) {
	spec := ConfigSpec{Fields: []ConfigField{
		{Name: "batch.size", Type: TypeInt, Default: "10", Validator: AtLeast(1), Max: 100_000},
		{Name: "rate", Type: TypeDouble, Default: "0", Max: 1e9},
	}}
	cases := []struct {
		config map[string]string
		bad    string // the key refused, or ""
		bound  string
	}{
		{map[string]string{"batch.size": "100000"}, "", ""},
		{map[string]string{"batch.size": "100001"}, "batch.size", "100000"},
		{map[string]string{"batch.size": "2147483647"}, "batch.size", "100000"},
		{map[string]string{"rate": "1e12"}, "rate", "1000000000"},
		{map[string]string{"batch.size": "0"}, "batch.size", ""}, // the Validator's lower bound still holds
	}
	for _, c := range cases {
		_, err := spec.Parse(c.config)
		if c.bad == "" {
			if err != nil {
				t.Errorf("%v: %v", c.config, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v: accepted", c.config)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "configuration "+c.bad) || (c.bound != "" && !strings.Contains(msg, "at most "+c.bound+", the upper bound of "+c.bad)) {
			t.Errorf("%v: %q does not name the key %s and its bound %s", c.config, msg, c.bad, c.bound)
		}
	}
	// tasks.max is bounded like the KafkaConnector's spec.tasksMax.
	p := sinkPlugin(nil)
	res := ValidateConfig(t.Context(), p, map[string]string{KeyConnectorClass: p.Class, KeyTopics: "a", KeyTasksMax: "1000000"})
	if res.ErrorCount == 0 {
		t.Fatal("tasks.max=1000000 accepted")
	}
}
