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

package connectapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

func TestJSONShapesRenderEmptyListsAndOmitEmptyFields(t *testing.T) {
	dflt := "x"
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"connector info", ConnectorInfo{Name: "c", Type: TypeSink},
			`{"name":"c","config":{},"tasks":[],"type":"sink"}`},
		{"status without trace", ConnectorStateInfo{Name: "c", Connector: ConnectorState{State: StateRunning, WorkerID: "w:8083"}, Type: TypeSource},
			`{"name":"c","connector":{"state":"RUNNING","worker_id":"w:8083"},"tasks":[],"type":"source"}`},
		{"task with trace", TaskState{ID: 1, State: StateFailed, WorkerID: "w", Trace: "boom"},
			`{"id":1,"state":"FAILED","worker_id":"w","trace":"boom"}`},
		{"task info", TaskInfo{ID: ConnectorTaskID{"c", 0}},
			`{"id":{"connector":"c","task":0},"config":{}}`},
		{"active topics", map[string]ActiveTopicsInfo{"c": {Connector: "c"}},
			`{"c":{"topics":[]}}`},
		{"offsets", ConnectorOffsets{}, `{"offsets":[]}`},
		{"plugin without version", PluginInfo{Class: "a.B", Type: PluginSink},
			`{"class":"a.B","type":"sink"}`},
		{"config infos", ConfigInfos{Name: "p", Configs: []ConfigInfo{{
			Definition: ConfigKeyInfo{Name: "k", Type: "STRING", DefaultValue: &dflt},
			Value:      ConfigValueInfo{Name: "k"},
		}}},
			`{"name":"p","error_count":0,"groups":[],"configs":[{"definition":{"name":"k","type":"STRING","required":false,"default_value":"x","importance":"","documentation":"","group":"","width":"","display_name":"","dependents":[],"order":0},"value":{"name":"k","value":null,"recommended_values":[],"errors":[],"visible":false}}]}`},
		{"limits without natural limit", Limits{TasksMax: 3, EffectiveTasks: 3, Reason: "SingleReader"},
			`{"tasks_max":3,"natural_limit":null,"effective_tasks":3,"reason":"SingleReader"}`},
		{"create request", CreateConnectorRequest{Name: "c", Config: map[string]string{"a": "b"}},
			`{"name":"c","config":{"a":"b"}}`},
	}
	for _, tc := range cases {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, got, tc.want)
		}
	}
}

func TestStatusCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{NotFoundf("Connector %s not found", "c"), http.StatusNotFound},
		{fmt.Errorf("loading c: %w", ErrNotFound), http.StatusNotFound},
		{AlreadyExistsf("Connector c already exists"), http.StatusConflict},
		{RebalanceInProgressf(MessageRebalance), http.StatusConflict},
		{BadRequestf("bad"), http.StatusBadRequest},
		{Conflictf("busy"), http.StatusConflict},
		{&NotLeaderError{}, http.StatusConflict},
		{errors.New("disk on fire"), http.StatusInternalServerError},
		{ConnectorNotFound("c"), http.StatusNotFound},
		{ConnectorAlreadyExists("c"), http.StatusConflict},
		{TaskNotFound(ConnectorTaskID{"c", 1}), http.StatusNotFound},
		{OffsetsNotStopped("c"), http.StatusBadRequest},
		{RebalanceInProgress(), http.StatusConflict},
	}
	for _, tc := range cases {
		if got := StatusCode(tc.err); got != tc.want {
			t.Errorf("StatusCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if !errors.Is(NotFoundf("x"), ErrNotFound) {
		t.Error("NotFoundf does not match ErrNotFound")
	}
}

func TestParseInitialState(t *testing.T) {
	for in, want := range map[string]InitialState{"": "", "paused": InitialPaused, "STOPPED": InitialStopped, "Running": InitialRunning} {
		got, err := ParseInitialState(in)
		if err != nil || got != want {
			t.Errorf("ParseInitialState(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseInitialState("FAILED"); err == nil {
		t.Error("ParseInitialState(FAILED) succeeded, want an error")
	}
}

func TestPluginConversions(t *testing.T) {
	p := plugin.Plugin{
		Class: "dev.conveyor.test.NullSinkConnector", Kind: plugin.KindSink, Version: "1.2.3",
		Spec: plugin.ConfigSpec{Fields: []plugin.ConfigField{
			{Name: "path", Type: plugin.TypeString, Required: true, Group: "Null", Doc: "Where."},
			{Name: "secret", Type: plugin.TypePassword, Group: "Null", Doc: "Key."},
			{Name: "batch", Type: plugin.TypeInt, Default: "10", Group: "Null", Dependents: []string{"path"}, Max: 1000},
		}},
	}
	if got, _ := json.Marshal(PluginInfoOf(p)); string(got) != `{"class":"dev.conveyor.test.NullSinkConnector","type":"sink","version":"1.2.3"}` {
		t.Errorf("PluginInfoOf: %s", got)
	}
	keys := ConfigKeysOf(p.Spec)
	got, _ := json.Marshal(keys)
	want := `[{"name":"path","type":"STRING","required":true,"default_value":null,"importance":"MEDIUM","documentation":"Where.","group":"Null","width":"NONE","display_name":"path","dependents":[],"order":1},` +
		`{"name":"secret","type":"PASSWORD","required":false,"default_value":null,"importance":"MEDIUM","documentation":"Key.","group":"Null","width":"NONE","display_name":"secret","dependents":[],"order":2},` +
		`{"name":"batch","type":"INT","required":false,"default_value":"10","importance":"MEDIUM","documentation":"","group":"Null","width":"NONE","display_name":"batch","dependents":["path"],"order":3}]`
	if string(got) != want {
		t.Errorf("ConfigKeysOf:\n got  %s\n want %s", got, want)
	}

	res := ConfigInfosOf(plugin.ValidateConfig(context.Background(), p, map[string]string{
		"name": "n", "connector.class": p.Class, "topics": "t", "secret": "hunter2", "batch": "x",
	}))
	if res.Name != p.Class || res.ErrorCount != 2 || len(res.Configs) != len(p.FullSpec().Fields) {
		t.Fatalf("ConfigInfosOf: name %q, %d errors, %d configs; want %q, 2 errors (path missing, batch not an int), %d configs",
			res.Name, res.ErrorCount, len(res.Configs), p.Class, len(p.FullSpec().Fields))
	}
	body, _ := json.Marshal(res)
	if strings.Contains(string(body), "hunter2") {
		t.Errorf("validation result shows a password value: %s", body)
	}
	byName := map[string]ConfigInfo{}
	for _, c := range res.Configs {
		byName[c.Definition.Name] = c
	}
	if c := byName["path"]; len(c.Value.Errors) != 1 || c.Definition.Order != 1 || c.Definition.Group != "Null" {
		t.Errorf("path: %+v", c)
	}
	if c := byName["tasks.max"]; c.Value.Value == nil || *c.Value.Value != "1" || len(c.Value.Errors) != 0 {
		t.Errorf("tasks.max: %+v", c)
	}
}

func TestLimitsOf(t *testing.T) {
	cases := []struct {
		tasksMax, natural int
		reason            plugin.Reason
		effective         int
		want              string
	}{
		{10, 4, plugin.TopicPartitions, 4, `{"tasks_max":10,"natural_limit":4,"effective_tasks":4,"reason":"TopicPartitions"}`},
		{2, 4, plugin.TopicPartitions, 2, `{"tasks_max":2,"natural_limit":4,"effective_tasks":2,"reason":"TasksMax"}`},
		{3, plugin.NoLimit, plugin.TasksMax, 3, `{"tasks_max":3,"natural_limit":null,"effective_tasks":3,"reason":"TasksMax"}`},
		{5, 1, plugin.SingleReader, 1, `{"tasks_max":5,"natural_limit":1,"effective_tasks":1,"reason":"SingleReader"}`},
		{5, 0, plugin.Files, 0, `{"tasks_max":5,"natural_limit":0,"effective_tasks":0,"reason":"Files"}`},
	}
	for _, tc := range cases {
		got, _ := json.Marshal(LimitsOf(tc.tasksMax, tc.natural, tc.reason, tc.effective))
		if string(got) != tc.want {
			t.Errorf("LimitsOf(%d, %d, %s, %d) = %s, want %s", tc.tasksMax, tc.natural, tc.reason, tc.effective, got, tc.want)
		}
	}
}

func TestHeldByCrash(t *testing.T) {
	held := HeldTracePrefix + "task 0 ended the process of worker w1:8083 ..."
	cases := []struct {
		name string
		st   ConnectorStateInfo
		want bool
	}{
		{"running", ConnectorStateInfo{Connector: ConnectorState{State: StateRunning}, Tasks: []TaskState{{State: StateRunning}}}, false},
		{"failed task, other reason", ConnectorStateInfo{Connector: ConnectorState{State: StateRunning}, Tasks: []TaskState{{State: StateFailed, Trace: "boom"}}}, false},
		{"held task", ConnectorStateInfo{Connector: ConnectorState{State: StateRunning}, Tasks: []TaskState{{State: StateRunning}, {State: StateFailed, Trace: held}}}, true},
		{"held connector", ConnectorStateInfo{Connector: ConnectorState{State: StateFailed, Trace: held}}, true},
		{"the words in a running task's old trace", ConnectorStateInfo{Tasks: []TaskState{{State: StateRunning, Trace: held}}}, false},
	}
	for _, c := range cases {
		if got := HeldByCrash(c.st); got != c.want {
			t.Errorf("%s: HeldByCrash = %v, want %v", c.name, got, c.want)
		}
	}
}
