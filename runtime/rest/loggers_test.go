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
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/loglevel"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestLoggersChangeWhatTheLogShows: PUT /admin/loggers/{logger} (Kafka's
// KIP-495 shapes) changes a level at run time, and the log then shows the
// lines the new level lets through: the REST server's DEBUG line for a
// probe is absent at INFO and present after "rest" is set to DEBUG.
func TestLoggersChangeWhatTheLogShows(t *testing.T) {
	logs := &testkit.SyncBuffer{}
	levels := loglevel.New(slog.LevelInfo)
	cfg := Config{Token: testToken, Loggers: levels,
		Logger: slog.New(levels.Handler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: loglevel.Lowest})))}
	s, err := New(newMemHerder().seed(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	do(t, ts, get("/health", 200))
	if strings.Contains(logs.String(), "path=/health") {
		t.Fatalf("a probe's DEBUG request line is logged at INFO:\n%s", logs)
	}
	resp, body := do(t, ts, get("/admin/loggers/rest", 200))
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"level":"INFO"}` {
		t.Fatalf("GET /admin/loggers/rest: %d %s, want {\"level\":\"INFO\"} (root's)", resp.StatusCode, body)
	}

	resp, body = do(t, ts, req("PUT", "/admin/loggers/rest", `{"level": "debug"}`, 200))
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `["rest"]` {
		t.Fatalf("PUT /admin/loggers/rest DEBUG: %d %s, want 200 [\"rest\"]", resp.StatusCode, body)
	}
	do(t, ts, get("/health", 200))
	if !strings.Contains(logs.String(), "path=/health") {
		t.Fatalf("after PUT /admin/loggers/rest DEBUG the probe's request line is not logged:\n%s", logs)
	}
	t.Logf("log after the change:\n%s", logs)

	resp, body = do(t, ts, get("/admin/loggers", 200))
	var all map[string]struct {
		Level        string `json:"level"`
		LastModified *int64 `json:"last_modified"`
	}
	if err := json.Unmarshal(body, &all); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /admin/loggers: %d %s (%v)", resp.StatusCode, body, err)
	}
	if all["rest"].Level != "DEBUG" || all["rest"].LastModified == nil || all["root"].Level != "INFO" || all["root"].LastModified != nil || len(all) != 2 {
		t.Fatalf("GET /admin/loggers: %s, want rest DEBUG with last_modified and root INFO without", body)
	}

	// Refusals name the parameter and what it takes: no level 400 (as
	// Kafka), an unknown level 400 (Kafka: 404), an unknown scope 400
	// (Kafka sets the worker's level), a logger that no record carries
	// 400; nothing changes.
	for _, c := range []struct {
		path, body string
		has        []string
	}{
		{"/admin/loggers/rest", `{}`, []string{"'level' parameter was not specified"}},
		{"/admin/loggers/rest", `{"level":"LOUD"}`, []string{"parameter 'level'", "LOUD", "ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF"}},
		{"/admin/loggers/rest", `[1]`, []string{"must be a JSON object"}},
		{"/admin/loggers/rest?scope=everywhere", `{"level":"INFO"}`, []string{"'scope'", "everywhere", "worker", "cluster"}},
		{"/admin/loggers/rest?scope=", `{"level":"INFO"}`, []string{"'scope'", "worker", "cluster"}},
		{"/admin/loggers/io.debezium", `{"level":"INFO"}`, []string{"io.debezium", "use root"}},
		// This server has no config topic (the worker's has: see
		// runtime/worker's TestClusterLogLevel...).
		{"/admin/loggers/rest?scope=cluster", `{"level":"INFO"}`, []string{"scope=worker"}},
	} {
		resp, body := do(t, ts, req("PUT", c.path, c.body, 400))
		for _, h := range c.has {
			if resp.StatusCode != 400 || !strings.Contains(string(body), h) {
				t.Errorf("PUT %s %s: %d %s, want 400 with %q", c.path, c.body, resp.StatusCode, body, h)
			}
		}
	}
	if lg, _ := levels.Get("rest"); loglevel.LevelName(lg.Level) != "DEBUG" {
		t.Errorf("rest is %s after refused PUTs, want DEBUG", loglevel.LevelName(lg.Level))
	}
	// Kafka's name of the REST server is the worker's "rest"; a level it
	// already has changes nothing (Kafka 4 answers only changed loggers).
	resp, body = do(t, ts, req("PUT", "/admin/loggers/org.apache.kafka.connect.runtime.rest?scope=WORKER", `{"level":"DEBUG"}`, 200))
	if strings.TrimSpace(string(body)) != `[]` {
		t.Errorf("PUT /admin/loggers/org.apache.kafka.connect.runtime.rest DEBUG: %d %s, want [] (rest is DEBUG already)", resp.StatusCode, body)
	}
	resp, body = do(t, ts, get("/admin/loggers/org.apache.kafka.connect.runtime.rest", 200))
	if !strings.Contains(string(body), `"level":"DEBUG"`) {
		t.Errorf("GET /admin/loggers/org.apache.kafka.connect.runtime.rest: %d %s, want rest's DEBUG", resp.StatusCode, body)
	}

	// root sets every logger (as Kafka's): the probe line goes again.
	resp, body = do(t, ts, req("PUT", "/admin/loggers/root", `{"level":"WARN"}`, 200))
	if strings.TrimSpace(string(body)) != `["rest","root"]` {
		t.Fatalf("PUT /admin/loggers/root WARN: %d %s, want [\"rest\",\"root\"]", resp.StatusCode, body)
	}
	before := strings.Count(logs.String(), "path=/health")
	do(t, ts, get("/health", 200))
	if n := strings.Count(logs.String(), "path=/health"); n != before {
		t.Errorf("root at WARN still logs the probe's DEBUG line")
	}
}

// plainGet is GET path with the token, for goroutines (no t.Fatal); 0 on
// a transport error.
func plainGet(ts *httptest.Server, path string) int {
	r, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
	if err != nil {
		return 0
	}
	r.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := ts.Client().Do(r)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// gatedHerder holds ListConnectors until gate closes (or its context
// ends, unless deaf).
type gatedHerder struct {
	*memHerder
	gate    chan struct{}
	deaf    bool
	mu      sync.Mutex
	entered int
}

func (g *gatedHerder) ListConnectors(ctx context.Context) ([]string, error) {
	g.mu.Lock()
	g.entered++
	g.mu.Unlock()
	done := ctx.Done()
	if g.deaf {
		done = nil
	}
	select {
	case <-g.gate:
	case <-done:
		return nil, ctx.Err()
	}
	return g.memHerder.ListConnectors(context.Background())
}

func (g *gatedHerder) inside() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.entered
}

// TestConcurrencyBound: with rest.threads.max=2, two slow requests hold
// both slots; a third waits (it is not refused at once) and is served as
// soon as a slot frees; one that waits longer than the request timeout
// gets 503 naming rest.threads.max. Probes are never held.
func TestConcurrencyBound(t *testing.T) {
	h := &gatedHerder{memHerder: newMemHerder().seed(), gate: make(chan struct{})}
	ts, _ := newTestServer(t, h, Config{Token: testToken, MaxConcurrent: 2, RequestTimeout: 3 * time.Second})
	codes := make(chan int, 3)
	call := func() { codes <- plainGet(ts, "/connectors") }
	go call()
	go call()
	testkit.EventuallyTrue(t, 10*time.Second, "two requests in the herder", func() bool { return h.inside() == 2 })
	go call()
	// The third waits for a slot: it never reaches the herder while both are held.
	testkit.Consistently(t, 300*time.Millisecond, "the third request waits for a slot", func() (bool, string) {
		return h.inside() == 2 && len(codes) == 0, fmt.Sprintf("%d in the herder, %d answered", h.inside(), len(codes))
	})
	if resp, _ := do(t, ts, get("/health", 200)); resp.StatusCode != 200 {
		t.Fatalf("/health while the REST slots are full: %d, want 200 at once", resp.StatusCode)
	}
	close(h.gate)
	for range 3 {
		select {
		case c := <-codes:
			if c != 200 {
				t.Fatalf("a request got %d once slots freed, want 200", c)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("requests not served after the slots freed")
		}
	}

	// Beyond the wait: 503 in Kafka's error shape.
	h2 := &gatedHerder{memHerder: newMemHerder().seed(), gate: make(chan struct{}), deaf: true}
	defer close(h2.gate)
	ts2, _ := newTestServer(t, h2, Config{Token: testToken, MaxConcurrent: 1, RequestTimeout: 400 * time.Millisecond})
	go plainGet(ts2, "/connectors")
	testkit.EventuallyTrue(t, 10*time.Second, "one request in the herder", func() bool { return h2.inside() == 1 })
	resp, body := do(t, ts2, get("/connectors", 503))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "rest.threads.max=1") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("request beyond the bound: %d %s (Retry-After %q), want 503 naming rest.threads.max", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	assertErrorShape(t, resp, body)
	t.Logf("beyond the bound: %d %s", resp.StatusCode, body)
}
