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

package workerclient

// These tests run the client against an httptest server that plays a worker
// (a test double answering with connectapi entities): they check the
// client's side of the contract (paths, auth header, retries, error
// decoding). The real worker's REST layer is tested in runtime/rest, and the
// two meet in the envtest suites.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

const token = "t0ken-for-tests"

var fastBackoff = Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 4}

type recorded struct {
	method, path, query, auth, contentType string
	body                                   []byte
}

// fakeWorker is a scripted worker: handler answers per request; every
// request is recorded.
type fakeWorker struct {
	mu   sync.Mutex
	reqs []recorded
	srv  *httptest.Server
}

func newFakeWorker(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, n int)) *fakeWorker {
	t.Helper()
	fw := &fakeWorker{}
	fw.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
		}
		fw.mu.Lock()
		fw.reqs = append(fw.reqs, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
		n := len(fw.reqs)
		fw.mu.Unlock()
		handler(w, r, n)
	}))
	t.Cleanup(fw.srv.Close)
	return fw
}

func (fw *fakeWorker) requests() []recorded {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return append([]recorded(nil), fw.reqs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func newClient(t *testing.T, urls ...string) *Client {
	t.Helper()
	c, err := New(urls, Options{Token: token, Backoff: fastBackoff, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAuthHeaderPathsAndBodies(t *testing.T) {
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			writeJSON(w, 401, connectapi.ErrorMessage{ErrorCode: 401, Message: "Authentication required"})
			return
		}
		switch {
		case r.Method == "PUT" && r.URL.Path == "/connectors/my sink/config":
			writeJSON(w, 201, connectapi.ConnectorInfo{Name: "my sink", Config: map[string]string{"a": "b"}, Type: connectapi.TypeSink})
		case r.Method == "POST" && r.URL.Path == "/connectors/my sink/restart":
			writeJSON(w, 202, connectapi.ConnectorStateInfo{Name: "my sink", Connector: connectapi.ConnectorState{State: "RESTARTING"}})
		case r.Method == "GET" && r.URL.Path == "/connectors/my sink/limits":
			_, _ = w.Write([]byte(`{"tasks_max":10,"natural_limit":4,"effective_tasks":4,"reason":"TopicPartitions"}`))
		case r.Method == "GET" && r.URL.Path == "/connectors/my sink/topics":
			_, _ = w.Write([]byte(`{"my sink":{"topics":["orders","refunds"]}}`))
		case r.Method == "PUT" && strings.HasPrefix(r.URL.Path, "/connectors/my sink/"):
			w.WriteHeader(202)
		case r.Method == "DELETE":
			w.WriteHeader(204)
		default:
			writeJSON(w, 404, connectapi.ErrorMessage{ErrorCode: 404, Message: "no route " + r.Method + " " + r.URL.Path})
		}
	})
	ctx := context.Background()
	c := newClient(t, fw.srv.URL)

	info, created, err := c.PutConnectorConfig(ctx, "my sink", map[string]string{"a": "b"})
	if err != nil || !created || info.Type != connectapi.TypeSink {
		t.Fatalf("PutConnectorConfig = %+v, %v, %v", info, created, err)
	}
	st, err := c.Restart(ctx, "my sink", true, true)
	if err != nil || st == nil || st.Connector.State != "RESTARTING" {
		t.Fatalf("Restart = %+v, %v", st, err)
	}
	lim, err := c.Limits(ctx, "my sink")
	if err != nil || lim.TasksMax != 10 || lim.NaturalLimit == nil || *lim.NaturalLimit != 4 || lim.EffectiveTasks != 4 || lim.Reason != "TopicPartitions" {
		t.Fatalf("Limits = %+v, %v", lim, err)
	}
	topics, err := c.Topics(ctx, "my sink")
	if err != nil || !reflect.DeepEqual(topics.Topics, []string{"orders", "refunds"}) {
		t.Fatalf("Topics = %+v, %v", topics, err)
	}
	for _, f := range []func(context.Context, string) error{c.Pause, c.Resume, c.Stop, c.DeleteConnector} {
		if err := f(ctx, "my sink"); err != nil {
			t.Fatal(err)
		}
	}

	reqs := fw.requests()
	want := []struct{ method, path, query string }{
		{"PUT", "/connectors/my%20sink/config", ""},
		{"POST", "/connectors/my%20sink/restart", "includeTasks=true&onlyFailed=true"},
		{"GET", "/connectors/my%20sink/limits", ""},
		{"GET", "/connectors/my%20sink/topics", ""},
		{"PUT", "/connectors/my%20sink/pause", ""},
		{"PUT", "/connectors/my%20sink/resume", ""},
		{"PUT", "/connectors/my%20sink/stop", ""},
		{"DELETE", "/connectors/my%20sink", ""},
	}
	if len(reqs) != len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(reqs), len(want), reqs)
	}
	for i, w := range want {
		r := reqs[i]
		if r.method != w.method || r.path != w.path || r.query != w.query {
			t.Errorf("request %d = %s %s?%s, want %s %s?%s", i, r.method, r.path, r.query, w.method, w.path, w.query)
		}
		if r.auth != "Bearer "+token {
			t.Errorf("request %d: Authorization %q", i, r.auth)
		}
	}
	if reqs[0].contentType != "application/json" || string(reqs[0].body) != `{"a":"b"}` {
		t.Errorf("PUT config body %q content type %q", reqs[0].body, reqs[0].contentType)
	}

	// Without a token: no header, and the worker's 401 comes back as an APIError.
	c2, _ := New([]string{fw.srv.URL}, Options{Backoff: fastBackoff})
	_, err = c2.Status(ctx, "x")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Message != "Authentication required" {
		t.Fatalf("unauthenticated Status error = %v", err)
	}
	if last := fw.requests()[len(fw.requests())-1]; last.auth != "" {
		t.Fatalf("client without token sent Authorization %q", last.auth)
	}
}

func TestRetriesRebalanceConflict(t *testing.T) {
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= 2 {
			writeJSON(w, 409, connectapi.ErrorMessage{ErrorCode: 409, Message: connectapi.MessageRebalance})
			return
		}
		writeJSON(w, 200, connectapi.ConnectorStateInfo{Name: "s", Connector: connectapi.ConnectorState{State: "RUNNING", WorkerID: "10.0.0.1:8083"}})
	})
	st, err := newClient(t, fw.srv.URL).Status(context.Background(), "s")
	if err != nil || st.Connector.State != "RUNNING" {
		t.Fatalf("Status after two 409s = %+v, %v", st, err)
	}
	if n := len(fw.requests()); n != 3 {
		t.Fatalf("%d requests, want 3 (two 409s, then success)", n)
	}
}

func TestRetryIsBounded(t *testing.T) {
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 409, connectapi.ErrorMessage{ErrorCode: 409, Message: connectapi.MessageNoLeader})
	})
	err := newClient(t, fw.srv.URL).Pause(context.Background(), "s")
	if !errors.Is(err, connectapi.ErrRebalanceInProgress) {
		t.Fatalf("error %v does not unwrap to ErrRebalanceInProgress", err)
	}
	if n := len(fw.requests()); n != fastBackoff.Attempts {
		t.Fatalf("%d attempts, want the bound %d", n, fastBackoff.Attempts)
	}
}

func TestErrorDecodingAndNoRetryOnClientErrors(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		sentinel error
	}{
		{"already exists", 409, `{"error_code":409,"message":"Connector s already exists"}`, connectapi.ErrAlreadyExists},
		{"not found", 404, `{"error_code":404,"message":"Connector s not found"}`, connectapi.ErrNotFound},
		{"bad request", 400, `{"error_code":400,"message":"Connector configuration is invalid and contains the following 1 error(s):\ntopics: Missing required configuration"}`, connectapi.ErrBadRequest},
		{"server error", 500, `{"error_code":500,"message":"boom"}`, nil},
		{"non-JSON error", 500, `<html>proxy</html>`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			_, err := newClient(t, fw.srv.URL).CreateConnector(context.Background(), "s", map[string]string{"connector.class": "X"}, connectapi.InitialStopped)
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v is not an *APIError", err)
			}
			if apiErr.Status != tc.status || apiErr.Method != "POST" || apiErr.Path != "/connectors" {
				t.Errorf("APIError = %+v", apiErr)
			}
			var em connectapi.ErrorMessage
			if json.Unmarshal([]byte(tc.body), &em) == nil {
				if apiErr.ErrorCode != em.ErrorCode || apiErr.Message != em.Message {
					t.Errorf("error_code/message = %d %q, want %d %q", apiErr.ErrorCode, apiErr.Message, em.ErrorCode, em.Message)
				}
			} else if apiErr.Message != "" || !strings.Contains(err.Error(), "Internal Server Error") {
				t.Errorf("undecodable body: message %q, error %q", apiErr.Message, err)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.sentinel)
			}
			if n := len(fw.requests()); n != 1 {
				t.Errorf("%d attempts for a non-retryable answer, want 1", n)
			}
			if !strings.Contains(string(fw.requests()[0].body), `"initial_state":"STOPPED"`) {
				t.Errorf("create body %s lacks initial_state", fw.requests()[0].body)
			}
		})
	}
}

func TestTransportFailureMovesToNextWorker(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from now on
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, []string{"a", "b"})
	})
	c := newClient(t, deadURL, fw.srv.URL)
	names, err := c.ListConnectors(context.Background())
	if err != nil || !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("ListConnectors = %v, %v", names, err)
	}
	// The client keeps using the worker that answered.
	if _, err := c.ListConnectors(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(fw.requests()); n != 2 {
		t.Fatalf("live worker got %d requests, want 2", n)
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var calls atomic.Int32
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if calls.Add(1) == 1 {
			select { // hang past the client's per-attempt timeout
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		writeJSON(w, 200, connectapi.ServerInfo{Version: "4.1.0", Commit: "c", KafkaClusterID: "k"})
	})
	c, _ := New([]string{fw.srv.URL}, Options{Token: token, Backoff: fastBackoff, RequestTimeout: 100 * time.Millisecond})
	info, err := c.ServerInfo(context.Background())
	if err != nil || info.Version != "4.1.0" {
		t.Fatalf("ServerInfo after a timeout = %+v, %v", info, err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls, want 2", calls.Load())
	}
}

func TestContextCancelStopsRetrying(t *testing.T) {
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 503, connectapi.ErrorMessage{ErrorCode: 503, Message: "starting"})
	})
	c, _ := New([]string{fw.srv.URL}, Options{Backoff: Backoff{Initial: time.Hour, Max: time.Hour, Attempts: 3}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Resume(ctx, "s")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Resume = %v after %v, want a prompt deadline error", err, time.Since(start))
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("the last worker answer is lost from %v", err)
	}
}

func TestDeleteOfMissingConnectorIsNoError(t *testing.T) {
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 404, connectapi.ErrorMessage{ErrorCode: 404, Message: "Connector s not found"})
	})
	if err := newClient(t, fw.srv.URL).DeleteConnector(context.Background(), "s"); err != nil {
		t.Fatalf("DeleteConnector of a missing connector = %v", err)
	}
}

func TestValidateAndRestartWithoutTasks(t *testing.T) {
	fw := newFakeWorker(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/connector-plugins/PostgresSink/config/validate":
			msg := "Missing required configuration"
			writeJSON(w, 200, connectapi.ConfigInfos{Name: "PostgresSink", ErrorCount: 1, Configs: []connectapi.ConfigInfo{
				{Definition: connectapi.ConfigKeyInfo{Name: "connection.url"}, Value: connectapi.ConfigValueInfo{Name: "connection.url", Errors: []string{msg}}},
			}})
		case "/connectors/s/restart":
			w.WriteHeader(204)
		}
	})
	c := newClient(t, fw.srv.URL)
	infos, err := c.Validate(context.Background(), "PostgresSink", map[string]string{"topics": "t"})
	if err != nil || infos.ErrorCount != 1 || infos.Configs[0].Value.Errors[0] != "Missing required configuration" {
		t.Fatalf("Validate = %+v, %v", infos, err)
	}
	st, err := c.Restart(context.Background(), "s", false, false)
	if err != nil || st != nil {
		t.Fatalf("Restart answered 204 = %+v, %v; want nil, nil", st, err)
	}
	if q := fw.requests()[1].query; q != "includeTasks=false&onlyFailed=false" {
		t.Fatalf("restart query %q", q)
	}
}

func TestNewWithoutEndpoints(t *testing.T) {
	if _, err := New(nil, Options{}); !errors.Is(err, ErrNoWorkers) {
		t.Fatalf("New(nil) = %v, want ErrNoWorkers", err)
	}
}
