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

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const testToken = "s3cr3t-token"

// step is one request of a golden case.
type step struct {
	method, path, body string
	// auth: "" sends the right token, "none" no header, anything else
	// that header value.
	auth       string
	wantStatus int
}

type goldenCase struct {
	name  string
	setup func(h *memHerder, cfg *Config)
	steps []step
}

func get(path string, want int) step { return step{method: "GET", path: path, wantStatus: want} }

func req(method, path, body string, want int) step {
	return step{method: method, path: path, body: body, wantStatus: want}
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "root", steps: []step{get("/", 200)}},
		{name: "list_connectors", steps: []step{get("/connectors", 200), get("/connectors/", 200)}},
		{name: "list_connectors_empty", setup: func(h *memHerder, _ *Config) { clear(h.conns) },
			steps: []step{get("/connectors", 200), get("/connectors?expand=status", 200)}},
		{name: "list_connectors_expand_status", steps: []step{get("/connectors?expand=status", 200)}},
		{name: "list_connectors_expand_info_status", steps: []step{get("/connectors?expand=info&expand=status", 200)}},
		{name: "list_connectors_expand_unknown", steps: []step{get("/connectors?expand=everything", 200)}},

		{name: "create_connector", steps: []step{
			req("POST", "/connectors", `{"name":"sink-new","config":{"connector.class":"`+fakeSinkClass+`","tasks.max":3,"topics":"t1","file":"/tmp/f"}}`, 201),
			get("/connectors/sink-new/status", 200),
		}},
		{name: "create_connector_paused", steps: []step{
			req("POST", "/connectors/", `{"name":" src-new ","config":{"connector.class":"`+fakeSourceClass+`"},"initial_state":"paused"}`, 201),
			get("/connectors/src-new/status", 200),
		}},
		{name: "create_connector_stopped", steps: []step{
			req("POST", "/connectors", `{"name":"src-new","config":{"connector.class":"`+fakeSourceClass+`","name":"src-new"},"initial_state":"STOPPED"}`, 201),
			get("/connectors/src-new/status", 200),
		}},
		{name: "create_connector_exists", steps: []step{
			req("POST", "/connectors", `{"name":"sink-a","config":{"connector.class":"`+fakeSinkClass+`"}}`, 409),
		}},
		{name: "create_connector_no_name", steps: []step{
			req("POST", "/connectors", `{"config":{"connector.class":"`+fakeSinkClass+`"}}`, 400),
			req("POST", "/connectors", `{"name":"  ","config":{}}`, 400),
		}},
		{name: "create_connector_no_config", steps: []step{req("POST", "/connectors", `{"name":"x"}`, 400)}},
		{name: "create_connector_name_mismatch", steps: []step{
			req("POST", "/connectors", `{"name":"a","config":{"name":"b","connector.class":"`+fakeSinkClass+`"}}`, 400),
		}},
		{name: "create_connector_bad_initial_state", steps: []step{
			req("POST", "/connectors", `{"name":"a","config":{},"initial_state":"FAILED"}`, 400),
		}},
		{name: "create_connector_malformed_json", steps: []step{
			req("POST", "/connectors", `{"name":"a","config":{"password":"hunter2"`, 400),
			req("POST", "/connectors", `{"name":"a","config":{"password": hunter2}}`, 400),
			req("POST", "/connectors", ``, 400),
			req("POST", "/connectors", `{"name":"a","config":{}} {"again":1}`, 400),
			req("POST", "/connectors", `["hunter2"]`, 400),
		}},
		{name: "create_connector_unknown_field", steps: []step{
			req("POST", "/connectors", `{"name":"a","config":{},"colour":"hunter2"}`, 400),
		}},
		{name: "create_connector_wrong_types", steps: []step{
			req("POST", "/connectors", `{"name":7,"config":{}}`, 400),
			req("POST", "/connectors", `{"name":"a","config":{"password":{"value":"hunter2"}}}`, 400),
			req("POST", "/connectors", `{"name":"a","config":{"password":null}}`, 400),
		}},
		{name: "create_connector_rebalancing", setup: func(h *memHerder, _ *Config) { h.rebalance = true }, steps: []step{
			req("POST", "/connectors", `{"name":"x","config":{"connector.class":"`+fakeSinkClass+`"}}`, 409),
			req("PUT", "/connectors/sink-a/pause", ``, 409),
		}},

		{name: "get_connector", steps: []step{get("/connectors/sink-a", 200)}},
		{name: "get_connector_not_found", steps: []step{get("/connectors/nope", 404), get("/connectors/nope/status", 404)}},
		{name: "delete_connector", steps: []step{
			req("DELETE", "/connectors/sink-a", ``, 204),
			get("/connectors/sink-a", 404),
			req("DELETE", "/connectors/sink-a", ``, 404),
		}},

		{name: "get_config", steps: []step{get("/connectors/sink-a/config", 200)}},
		{name: "put_config_create_then_update", steps: []step{
			req("PUT", "/connectors/sink-b/config", `{"connector.class":"`+fakeSinkClass+`","tasks.max":"1","topics":"t","enabled":true}`, 201),
			req("PUT", "/connectors/sink-b/config", `{"connector.class":"`+fakeSinkClass+`","tasks.max":"2","topics":"t"}`, 200),
		}},
		{name: "put_config_name_mismatch", steps: []step{
			req("PUT", "/connectors/sink-a/config", `{"name":"other","connector.class":"`+fakeSinkClass+`"}`, 400),
		}},
		{name: "put_config_malformed", steps: []step{
			req("PUT", "/connectors/sink-a/config", `{"password":"hunter2",}`, 400),
			req("PUT", "/connectors/sink-a/config", `"hunter2"`, 400),
			req("PUT", "/connectors/sink-a/config", `null`, 400),
		}},
		{name: "patch_config", steps: []step{
			req("PATCH", "/connectors/sink-a/config", `{"tasks.max":"8","file":null}`, 200),
			req("PATCH", "/connectors/nope/config", `{"tasks.max":"1"}`, 404),
			req("PATCH", "/connectors/sink-a/config", `{"name":"other"}`, 400),
			req("PATCH", "/connectors/sink-a/config", `{"name":null}`, 400),
		}},

		{name: "status", steps: []step{get("/connectors/sink-a/status", 200), get("/connectors/source-b/status", 200)}},
		{name: "tasks", steps: []step{get("/connectors/sink-a/tasks", 200), get("/connectors/source-b/tasks", 200)}},
		{name: "task_status", steps: []step{
			get("/connectors/sink-a/tasks/1/status", 200),
			get("/connectors/sink-a/tasks/0/status", 200),
			get("/connectors/sink-a/tasks/9/status", 404),
			get("/connectors/sink-a/tasks/x/status", 404),
		}},
		{name: "task_restart", steps: []step{
			req("POST", "/connectors/sink-a/tasks/1/restart", ``, 204),
			get("/connectors/sink-a/tasks/1/status", 200),
			req("POST", "/connectors/sink-a/tasks/5/restart", ``, 404),
		}},
		{name: "restart", steps: []step{
			req("POST", "/connectors/sink-a/restart", ``, 204),
			req("POST", "/connectors/sink-a/restart?includeTasks=true", ``, 202),
			req("POST", "/connectors/sink-a/restart?includeTasks=true&onlyFailed=true", ``, 202),
			req("POST", "/connectors/sink-a/restart?onlyFailed=TRUE", ``, 202),
			req("POST", "/connectors/nope/restart", ``, 404),
		}},
		{name: "pause_resume_stop", steps: []step{
			req("PUT", "/connectors/sink-a/pause", ``, 202),
			get("/connectors/sink-a/status", 200),
			req("PUT", "/connectors/sink-a/resume", ``, 202),
			req("PUT", "/connectors/sink-a/stop", ``, 204),
			get("/connectors/sink-a/status", 200),
			req("PUT", "/connectors/nope/stop", ``, 404),
		}},

		{name: "offsets", steps: []step{
			get("/connectors/sink-a/offsets", 200),
			get("/connectors/source-b/offsets", 200),
		}},
		{name: "offsets_alter_not_stopped", steps: []step{
			req("PATCH", "/connectors/sink-a/offsets", `{"offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":7}}]}`, 400),
			req("DELETE", "/connectors/sink-a/offsets", ``, 400),
		}},
		{name: "offsets_alter_and_reset_stopped", steps: []step{
			req("PATCH", "/connectors/source-b/offsets", `{"offsets":[{"partition":{"range":"0-1000"},"offset":{"next":750}},{"partition":{"range":"1000-2000"},"offset":null}]}`, 200),
			get("/connectors/source-b/offsets", 200),
			req("DELETE", "/connectors/source-b/offsets", ``, 200),
			get("/connectors/source-b/offsets", 200),
		}},
		{name: "offsets_alter_bad_body", steps: []step{
			req("PATCH", "/connectors/source-b/offsets", `{"offsets":[]}`, 400),
			req("PATCH", "/connectors/source-b/offsets", `{}`, 400),
			req("PATCH", "/connectors/source-b/offsets", `{"offsets":[{"offset":{"next":1}}]}`, 400),
			req("PATCH", "/connectors/source-b/offsets", `{"offsets":[{"partition":{},"offset":{},"extra":1}]}`, 400),
		}},

		{name: "topics", steps: []step{
			get("/connectors/sink-a/topics", 200),
			req("PUT", "/connectors/sink-a/topics/reset", ``, 202),
			get("/connectors/sink-a/topics", 200),
			get("/connectors/nope/topics", 404),
		}},
		{name: "limits", steps: []step{
			get("/connectors/sink-a/limits", 200),
			req("PATCH", "/connectors/sink-a/config", `{"tasks.max":"10"}`, 200),
			get("/connectors/sink-a/limits", 200),
			get("/connectors/source-b/limits", 200),
			get("/connectors/nope/limits", 404),
		}},

		{name: "plugins", steps: []step{
			get("/connector-plugins", 200),
			get("/connector-plugins?connectorsOnly=false", 200),
		}},
		{name: "plugin_config", steps: []step{
			get("/connector-plugins/"+fakeSinkClass+"/config", 200),
			get("/connector-plugins/FileSink/config", 200),
			get("/connector-plugins/nope/config", 404),
		}},
		{name: "validate", steps: []step{
			req("PUT", "/connector-plugins/FileSink/config/validate", `{"connector.class":"`+fakeSinkClass+`","topics":"orders"}`, 200),
			req("PUT", "/connector-plugins/FileSink/config/validate", `{"connector.class":"org.conveyor.RangeSourceConnector"}`, 400),
			req("PUT", "/connector-plugins/nope/config/validate", `{}`, 404),
			req("PUT", "/connector-plugins/FileSink/config/validate", `{"topics":`, 400),
		}},

		{name: "unknown_path", steps: []step{get("/nope", 404), get("/connectors/a/b/c/d", 404)}},
		{name: "wrong_method", steps: []step{
			req("DELETE", "/connectors", ``, 405),
			req("GET", "/connectors/sink-a/pause", ``, 405),
			req("POST", "/connector-plugins", ``, 405),
		}},
		{name: "auth", setup: func(_ *memHerder, cfg *Config) { cfg.Token = testToken }, steps: []step{
			{method: "GET", path: "/connectors", auth: "none", wantStatus: 401},
			{method: "GET", path: "/connectors", auth: "Bearer wrong", wantStatus: 401},
			{method: "GET", path: "/connectors", auth: "Basic " + testToken, wantStatus: 401},
			{method: "GET", path: "/nope", auth: "none", wantStatus: 401},
			{method: "GET", path: "/connectors", auth: "bearer " + testToken, wantStatus: 200},
			{method: "GET", path: "/connectors", wantStatus: 200},
			{method: "GET", path: "/health", auth: "none", wantStatus: 200},
			{method: "GET", path: "/readyz", auth: "none", wantStatus: 200},
		}},
		{name: "readyz_not_ready", setup: func(h *memHerder, _ *Config) {
			h.notReady = fmt.Errorf("reading the config topic: at offset 3 of 10")
		}, steps: []step{get("/readyz", 503), get("/health", 200)}},
		{name: "body_too_large", setup: func(_ *memHerder, cfg *Config) { cfg.MaxBodyBytes = 64 }, steps: []step{
			req("PUT", "/connectors/sink-a/config", `{"connector.class":"`+fakeSinkClass+`","password":"hunter2","x":"yyyyyyyyyyyy"}`, 413),
		}},
		{name: "metrics", setup: func(_ *memHerder, cfg *Config) {
			cfg.Token = testToken
			reg := prometheus.NewRegistry()
			c := prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "kafka_connect_worker_connector_count", Help: "Connectors on this worker."}, []string{"state"})
			c.WithLabelValues("running").Add(2)
			reg.MustRegister(c)
			cfg.Gatherer = reg
		}, steps: []step{{method: "GET", path: "/metrics", wantStatus: 200}}},
		{name: "metrics_auth", setup: func(_ *memHerder, cfg *Config) {
			cfg.Token, cfg.Gatherer = testToken, prometheus.NewRegistry()
		}, steps: []step{
			{method: "GET", path: "/metrics", auth: "none", wantStatus: 401},
			{method: "GET", path: "/metrics", wantStatus: 200},
		}},
		{name: "metrics_absent", steps: []step{get("/metrics", 404)}},
	}
}

// newTestServer serves a seeded memHerder; logs go to the returned buffer.
func newTestServer(t *testing.T, h connectapi.Herder, cfg Config) (*httptest.Server, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, logs
}

func do(t *testing.T, ts *httptest.Server, st step) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if st.body != "" {
		body = strings.NewReader(st.body)
	}
	r, err := http.NewRequest(st.method, ts.URL+st.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if st.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	switch st.auth {
	case "":
		r.Header.Set("Authorization", "Bearer "+testToken)
	case "none":
	default:
		r.Header.Set("Authorization", st.auth)
	}
	resp, err := ts.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// render is the golden form of one exchange: request line, status, the
// headers that matter, and the body (JSON indented, keys in the order the
// server wrote them, which is stable: struct order, sorted map keys).
func render(t *testing.T, st step, resp *http.Response, body []byte) string {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "> %s %s\n", st.method, st.path)
	fmt.Fprintf(&sb, "< %d\n", resp.StatusCode)
	for _, h := range []string{"Content-Type", "Location", "Allow", "WWW-Authenticate"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Fprintf(&sb, "< %s: %s\n", h, v)
		}
	}
	if len(body) > 0 {
		sb.WriteString("\n")
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			if !json.Valid(body) {
				t.Fatalf("%s %s: body is not valid JSON: %s", st.method, st.path, body)
			}
			var ind bytes.Buffer
			if err := json.Indent(&ind, body, "", "  "); err != nil {
				t.Fatal(err)
			}
			sb.Write(ind.Bytes())
			sb.WriteString("\n")
		} else {
			sb.Write(body)
		}
	}
	return sb.String()
}

func TestGoldenResponses(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := newMemHerder().seed()
			cfg := Config{}
			if tc.setup != nil {
				tc.setup(h, &cfg)
			}
			ts, logs := newTestServer(t, h, cfg)
			var got strings.Builder
			for i, st := range tc.steps {
				resp, body := do(t, ts, st)
				if resp.StatusCode != st.wantStatus {
					t.Errorf("step %d %s %s: status %d, want %d; body %s", i, st.method, st.path, resp.StatusCode, st.wantStatus, body)
				}
				if resp.StatusCode >= 400 && st.path != "/readyz" { // /readyz answers HealthStatus
					assertErrorShape(t, resp, body)
				}
				// Bodies hold credentials: no answer and no log line may echo one.
				for _, secret := range []string{"hunter2", testToken} {
					if bytes.Contains(body, []byte(secret)) {
						t.Errorf("step %d %s %s: response echoes %q: %s", i, st.method, st.path, secret, body)
					}
				}
				if i > 0 {
					got.WriteString("\n")
				}
				got.WriteString(render(t, st, resp, body))
			}
			for _, secret := range []string{"hunter2", testToken} {
				if strings.Contains(logs.String(), secret) {
					t.Errorf("logs hold %q:\n%s", secret, logs)
				}
			}
			testkit.Golden(t, filepath.Join("testdata", tc.name+".golden"), []byte(got.String()))
		})
	}
}

// assertErrorShape checks that an error answer is exactly
// {"error_code": <status>, "message": "<non-empty>"}.
func assertErrorShape(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error answer %d has Content-Type %q, want application/json", resp.StatusCode, ct)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var e connectapi.ErrorMessage
	if err := dec.Decode(&e); err != nil {
		t.Errorf("error answer %d is not the error shape: %v: %s", resp.StatusCode, err, body)
		return
	}
	if e.ErrorCode != resp.StatusCode || e.Message == "" {
		t.Errorf("error answer %d has error_code %d and message %q", resp.StatusCode, e.ErrorCode, e.Message)
	}
}

// TestEveryGoldenFileHasACase keeps testdata free of stale files.
func TestEveryGoldenFileHasACase(t *testing.T) {
	names := map[string]bool{}
	for _, tc := range goldenCases() {
		if names[tc.name] {
			t.Errorf("two golden cases named %s", tc.name)
		}
		names[tc.name] = true
	}
	files, err := filepath.Glob("testdata/*.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if n := strings.TrimSuffix(filepath.Base(f), ".golden"); !names[n] {
			t.Errorf("%s has no golden case: delete it", f)
		}
	}
}

func TestCreatePassesNormalizedRequestToHerder(t *testing.T) {
	h := newMemHerder()
	ts, _ := newTestServer(t, h, Config{})
	resp, body := do(t, ts, req("POST", "/connectors",
		`{"name":" n1 ","config":{"connector.class":"`+fakeSourceClass+`","tasks.max":2,"flag":false}}`, 201))
	if resp.StatusCode != 201 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	want := map[string]string{"name": "n1", "connector.class": fakeSourceClass, "tasks.max": "2", "flag": "false"}
	if fmt.Sprint(h.lastConfig) != fmt.Sprint(want) {
		t.Errorf("herder got config %v, want %v", h.lastConfig, want)
	}
	if loc := resp.Header.Get("Location"); loc != "/connectors/n1" {
		t.Errorf("Location %q, want /connectors/n1", loc)
	}
}

func TestForwardsWritesFromFollowerToLeader(t *testing.T) {
	leader := newMemHerder().seed()
	leaderTS, _ := newTestServer(t, leader, Config{Token: testToken})
	follower := newMemHerder().seed()
	follower.leader, follower.leaderURL = false, leaderTS.URL
	followerTS, _ := newTestServer(t, follower, Config{Token: testToken})

	// A write on the follower runs on the leader, with the caller's token.
	resp, body := do(t, followerTS, req("PUT", "/connectors/sink-a/pause", ``, 202))
	if resp.StatusCode != 202 {
		t.Fatalf("pause through the follower: status %d: %s", resp.StatusCode, body)
	}
	resp, body = do(t, followerTS, req("POST", "/connectors/sink-a/restart?includeTasks=true", ``, 202))
	if resp.StatusCode != 202 || !bytes.Contains(body, []byte(`"RESTARTING"`)) {
		t.Fatalf("restart through the follower: status %d: %s", resp.StatusCode, body)
	}
	resp, body = do(t, followerTS, req("POST", "/connectors", `{"name":"n","config":{"connector.class":"`+fakeSinkClass+`"}}`, 201))
	if resp.StatusCode != 201 || resp.Header.Get("Location") != "/connectors/n" {
		t.Fatalf("create through the follower: status %d, Location %q: %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	// Errors come back as the leader wrote them.
	resp, body = do(t, followerTS, req("DELETE", "/connectors/nope", ``, 404))
	if resp.StatusCode != 404 || !bytes.Contains(body, []byte(`"error_code":404`)) {
		t.Fatalf("delete of an unknown connector through the follower: status %d: %s", resp.StatusCode, body)
	}
	if got, want := fmt.Sprint(leader.writes), "[PAUSED sink-a restart sink-a create n delete nope]"; got != want {
		t.Errorf("leader saw writes %s, want %s", got, want)
	}
	if len(follower.writes) != 0 {
		t.Errorf("follower ran writes itself: %v", follower.writes)
	}
	// Without the token the leader refuses the forwarded request too.
	resp, _ = do(t, leaderTS, step{method: "PUT", path: "/connectors/sink-a/resume", auth: "none"})
	if resp.StatusCode != 401 {
		t.Errorf("leader without token: status %d, want 401", resp.StatusCode)
	}
	// Reads stay local.
	if resp, _ := do(t, followerTS, get("/connectors/n", 404)); resp.StatusCode != 404 {
		t.Errorf("read on the follower: status %d, want 404 (served locally)", resp.StatusCode)
	}
}

func TestForwardingWhenTheHerderSaysNotLeader(t *testing.T) {
	// IsLeader said yes, but the herder learned otherwise while handling
	// the write: the REST layer forwards on the NotLeaderError.
	leader := newMemHerder().seed()
	leaderTS, _ := newTestServer(t, leader, Config{})
	stale := &staleLeader{memHerder: newMemHerder().seed()}
	stale.memHerder.leader, stale.memHerder.leaderURL = false, leaderTS.URL
	staleTS, _ := newTestServer(t, stale, Config{})
	resp, body := do(t, staleTS, req("PUT", "/connectors/sink-a/stop", ``, 204))
	if resp.StatusCode != 204 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if fmt.Sprint(leader.writes) != "[STOPPED sink-a]" {
		t.Errorf("leader saw %v", leader.writes)
	}
}

// staleLeader claims to lead but its herder calls say otherwise.
type staleLeader struct{ *memHerder }

func (staleLeader) IsLeader() bool { return true }

func TestForwardingRefusals(t *testing.T) {
	cases := []struct {
		name      string
		leaderURL string
		path      string
		want      string
	}{
		{"no leader known", "", "/connectors/sink-a/pause", connectapi.MessageNoLeader},
		{"already forwarded", "http://127.0.0.1:1", "/connectors/sink-a/pause?forward=false", connectapi.MessageForwardLoop},
		{"leader unreachable", "http://127.0.0.1:1", "/connectors/sink-a/pause", "IO Error trying to forward REST request to the leader at http://127.0.0.1:1"},
		{"leader URL invalid", "10.0.0.1:8083", "/connectors/sink-a/pause", "The leader's advertised REST URL is not valid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newMemHerder().seed()
			h.leader, h.leaderURL = false, tc.leaderURL
			ts, _ := newTestServer(t, h, Config{})
			resp, body := do(t, ts, req("PUT", tc.path, ``, 0))
			assertErrorShape(t, resp, body)
			var e connectapi.ErrorMessage
			_ = json.Unmarshal(body, &e)
			if !strings.HasPrefix(e.Message, tc.want) {
				t.Errorf("message %q, want prefix %q", e.Message, tc.want)
			}
			if len(h.writes) != 0 {
				t.Errorf("follower ran the write: %v", h.writes)
			}
		})
	}
}

func TestForwardURL(t *testing.T) {
	r := httptest.NewRequest("POST", "/connectors/a%2Fb/restart?includeTasks=true", nil)
	got, err := forwardURL("http://10.0.0.7:8083/", r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://10.0.0.7:8083/connectors/a%2Fb/restart?forward=false&includeTasks=true"; got != want {
		t.Errorf("forwardURL = %s, want %s", got, want)
	}
}

func TestRequestTimeoutIs500(t *testing.T) {
	h := newMemHerder().seed()
	h.block = true
	ts, _ := newTestServer(t, h, Config{RequestTimeout: 50 * time.Millisecond})
	start := time.Now()
	resp, body := do(t, ts, get("/connectors", 500))
	if resp.StatusCode != 500 || !bytes.Contains(body, []byte(`"Request timed out"`)) {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
}

func TestRequestLogHasNoBodies(t *testing.T) {
	h := newMemHerder().seed()
	ts, logs := newTestServer(t, h, Config{Token: testToken})
	do(t, ts, req("PUT", "/connectors/sink-c/config", `{"connector.class":"`+fakeSinkClass+`","password":"hunter2"}`, 201))
	do(t, ts, req("PUT", "/connectors/sink-c/config", `{"password":"hunter2"`, 400))
	out := logs.String()
	if !strings.Contains(out, "path=/connectors/sink-c/config") || !strings.Contains(out, "status=201") || !strings.Contains(out, "status=400") {
		t.Errorf("request log lacks method/path/status:\n%s", out)
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, testToken) {
		t.Errorf("request log holds a secret:\n%s", out)
	}
}

func TestPanicIs500InErrorShape(t *testing.T) {
	ts, logs := newTestServer(t, panicky{}, Config{})
	resp, body := do(t, ts, get("/", 500))
	if resp.StatusCode != 500 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	assertErrorShape(t, resp, body)
	if !strings.Contains(logs.String(), "panic=boom") {
		t.Errorf("panic not logged:\n%s", logs)
	}
}

type panicky struct{ connectapi.Herder }

func (panicky) ServerInfo(context.Context) (connectapi.ServerInfo, error) { panic("boom") }

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	if err := os.WriteFile(p, []byte("  abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := ReadTokenFile(p); err != nil || tok != "abc" {
		t.Errorf("ReadTokenFile = %q, %v; want abc", tok, err)
	}
	if err := os.WriteFile(p, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(p); err == nil {
		t.Error("empty token file accepted")
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing token file accepted")
	}
}

func TestServeAndShutdown(t *testing.T) {
	s, err := New(newMemHerder().seed(), Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	l, err := listenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/connectors")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v after Shutdown, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after Shutdown")
	}
}

func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func TestConnectorNamesAreUnescapedFromThePath(t *testing.T) {
	h := newMemHerder()
	ts, _ := newTestServer(t, h, Config{})
	resp, body := do(t, ts, req("POST", "/connectors", `{"name":"team a/orders","config":{"connector.class":"`+fakeSinkClass+`"}}`, 201))
	if resp.StatusCode != 201 || resp.Header.Get("Location") != "/connectors/team%20a%2Forders" {
		t.Fatalf("create: status %d, Location %q: %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	resp, body = do(t, ts, get("/connectors/team%20a%2Forders/status", 200))
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"name":"team a/orders"`)) {
		t.Errorf("status of an escaped name: %d: %s", resp.StatusCode, body)
	}
}

// taskHerder takes task configs from followers.
type taskHerder struct {
	*memHerder
	got map[string][]map[string]string
}

func (h *taskHerder) PutTaskConfigs(_ context.Context, name string, cfgs []map[string]string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.conns[name]; !ok {
		return connectapi.NotFoundf("Connector %s not found", name)
	}
	h.got[name] = cfgs
	return nil
}

func TestSendTaskConfigsReachesTheLeader(t *testing.T) {
	leader := &taskHerder{memHerder: newMemHerder().seed(), got: map[string][]map[string]string{}}
	leaderTS, _ := newTestServer(t, leader, Config{Token: testToken})
	follower := newMemHerder().seed()
	follower.leader, follower.leaderURL = false, leaderTS.URL
	followerTS, _ := newTestServer(t, follower, Config{Token: testToken})
	ctx := context.Background()
	cfgs := []map[string]string{{"task.n": "0", "secret": "${file:/s:pw}"}, {"task.n": "1"}}

	// Straight to the leader, and through a follower.
	for _, to := range []string{leaderTS.URL, followerTS.URL} {
		leader.got = map[string][]map[string]string{}
		if err := SendTaskConfigs(ctx, http.DefaultClient, nil, to, testToken, "sink-a", cfgs); err != nil && to == leaderTS.URL {
			t.Fatalf("to the leader: %v", err)
		} else if err != nil {
			// A follower refuses a request already marked forwarded.
			if !strings.Contains(err.Error(), "409") {
				t.Fatalf("to a follower: %v, want a 409 (no second hop)", err)
			}
			continue
		}
		if fmt.Sprint(leader.got["sink-a"]) != fmt.Sprint(cfgs) {
			t.Errorf("leader got %v, want %v", leader.got["sink-a"], cfgs)
		}
	}
	// A client's PUT on a follower is forwarded once.
	resp, body := do(t, followerTS, req("PUT", "/connectors/sink-a/tasks", `[{"task.n":"7"}]`, 204))
	if resp.StatusCode != 204 || leader.got["sink-a"][0]["task.n"] != "7" {
		t.Fatalf("PUT tasks through a follower: %d %s, leader got %v", resp.StatusCode, body, leader.got)
	}
	// Wrong token, unknown connector, bad body.
	if err := SendTaskConfigs(ctx, http.DefaultClient, nil, leaderTS.URL, "wrong", "sink-a", cfgs); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v, want 401", err)
	}
	if err := SendTaskConfigs(ctx, http.DefaultClient, nil, leaderTS.URL, testToken, "nope", cfgs); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown connector: %v, want 404", err)
	}
	if resp, body := do(t, leaderTS, req("PUT", "/connectors/sink-a/tasks", `[{"a":null}]`, 400)); resp.StatusCode != 400 {
		t.Errorf("null value: %d %s, want 400", resp.StatusCode, body)
	}
	if err := SendTaskConfigs(ctx, http.DefaultClient, nil, "", testToken, "sink-a", cfgs); err == nil || !strings.Contains(err.Error(), "no leader") {
		t.Errorf("no leader: %v", err)
	}
	// A request already forwarded once is not forwarded again.
	if resp, _ := do(t, followerTS, req("PUT", "/connectors/sink-a/tasks?forward=false", `[]`, 409)); resp.StatusCode != 409 {
		t.Errorf("forwarded request on a follower: %d, want 409", resp.StatusCode)
	}
}
