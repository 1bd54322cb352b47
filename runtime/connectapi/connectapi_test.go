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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
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
