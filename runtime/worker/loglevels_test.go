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

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/loglevel"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// levelWorker is a test worker with run-time levels of its own (as each
// worker process has) and the log they filter.
type levelWorker struct {
	*testWorker
	logs *testkit.SyncBuffer
}

func startLevelWorker(t *testing.T, kafka string, extra map[string]string) *levelWorker {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	levels := loglevel.New(slog.LevelInfo)
	log := slog.New(levels.Handler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: loglevel.Lowest})))
	return &levelWorker{testWorker: startTestWorkerWith(t, Options{Config: workerConfig(t, kafka, extra), Logger: log, LogLevels: levels}), logs: logs}
}

type loggerJSON struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified"`
}

// loggers is the worker's GET /admin/loggers.
func (w *levelWorker) loggers(t *testing.T) map[string]loggerJSON {
	t.Helper()
	code, body := doAuth(t, w.token, http.MethodGet, w.url+"/admin/loggers", nil)
	var out map[string]loggerJSON
	if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil {
		t.Fatalf("GET %s/admin/loggers: %d %s (%v)", w.url, code, body, err)
	}
	return out
}

// probeLogged reports whether a GET /health now leaves the REST server's
// DEBUG request line in the worker's log: whether "rest" is at DEBUG.
func (w *levelWorker) probeLogged(t *testing.T) bool {
	t.Helper()
	before := strings.Count(w.logs.String(), "path=/health")
	if code, body := doJSON(t, http.MethodGet, w.url+"/health", nil); code != http.StatusOK {
		t.Fatalf("GET %s/health: %d %s", w.url, code, body)
	}
	return strings.Count(w.logs.String(), "path=/health") > before
}

// TestClusterLogLevelReachesEveryWorkerAndSurvivesRestart: PUT
// /admin/loggers/rest?scope=cluster on one worker (KIP-976) answers 204 with
// no body, and every worker applies the level from the config topic: its
// GET /admin/loggers shows it with the same last_modified (the record's
// timestamp) and its log shows the lines the level lets through. A
// worker-scope level changes one worker only and is lost when it restarts;
// the restarted worker reads the cluster's level back from the config
// topic. (Kafka Connect applies only records written after the worker
// started: a restart there drops cluster levels too.)
func TestClusterLogLevelReachesEveryWorkerAndSurvivesRestart(t *testing.T) {
	kafka := newKafka(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{workerconfig.KeyRestAuthTokenFile: tokenFile}
	ws := []*levelWorker{startLevelWorker(t, kafka, auth), startLevelWorker(t, kafka, auth), startLevelWorker(t, kafka, auth)}
	for _, w := range ws {
		if w.probeLogged(t) {
			t.Fatalf("worker %s logs the REST DEBUG line at INFO", w.id)
		}
	}

	// The admin endpoints keep the REST authentication.
	put := func(w *levelWorker, token, path, level string) (int, string) {
		t.Helper()
		code, body := doAuth(t, token, http.MethodPut, w.url+path, map[string]string{"level": level})
		return code, string(body)
	}
	if code, body := put(ws[0], "", "/admin/loggers/rest?scope=cluster", "DEBUG"); code != http.StatusUnauthorized {
		t.Fatalf("PUT scope=cluster without the token: %d %s, want 401", code, body)
	}

	start := time.Now()
	code, body := put(ws[0], ws[0].token, "/admin/loggers/rest?scope=cluster", "DEBUG")
	if code != http.StatusNoContent || body != "" {
		t.Fatalf("PUT /admin/loggers/rest?scope=cluster: %d %q, want 204 and no body", code, body)
	}
	var stamp int64
	for _, w := range ws {
		testkit.Eventually(t, 10*time.Second, "worker "+w.id+" shows rest DEBUG", func() (bool, string) {
			got := w.loggers(t)["rest"]
			return got.Level == "DEBUG" && got.LastModified != nil, fmt.Sprintf("%+v", got)
		})
		got := w.loggers(t)["rest"]
		if stamp == 0 {
			stamp = *got.LastModified
		}
		if *got.LastModified != stamp || stamp < start.Add(-time.Minute).UnixMilli() {
			t.Errorf("worker %s: rest last_modified %d, want the record's timestamp %d on every worker", w.id, *got.LastModified, stamp)
		}
		if !w.probeLogged(t) {
			t.Errorf("worker %s shows rest DEBUG but does not log the REST DEBUG line", w.id)
		}
	}
	t.Logf("scope=cluster applied on %d workers in %v", len(ws), time.Since(start).Round(time.Millisecond))

	// scope=worker (the default) changes one worker, answering the loggers
	// it changed.
	code, body = put(ws[1], ws[1].token, "/admin/loggers/rest", "WARN")
	if code != http.StatusOK || strings.TrimSpace(body) != `["rest"]` {
		t.Fatalf("PUT /admin/loggers/rest (scope=worker): %d %s, want 200 [\"rest\"]", code, body)
	}
	if got := ws[1].loggers(t)["rest"]; got.Level != "WARN" {
		t.Errorf("worker %s after scope=worker WARN: rest %+v", ws[1].id, got)
	}
	for _, w := range []*levelWorker{ws[0], ws[2]} {
		if got := w.loggers(t)["rest"]; got.Level != "DEBUG" {
			t.Errorf("worker %s: rest %+v after a scope=worker PUT on another worker, want DEBUG", w.id, got)
		}
	}

	// A restart drops the worker-scope level and applies the cluster's.
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ws[1].Shutdown(sctx); err != nil {
		t.Fatalf("stopping worker %s: %v", ws[1].id, err)
	}
	restarted := startLevelWorker(t, kafka, auth)
	got := restarted.loggers(t)
	if got["rest"].Level != "DEBUG" || got["rest"].LastModified == nil || *got["rest"].LastModified != stamp {
		t.Fatalf("restarted worker: GET /admin/loggers = %+v, want rest DEBUG last_modified %d (the cluster's level, not the worker-scope WARN)", got, stamp)
	}
	if !restarted.probeLogged(t) {
		t.Errorf("restarted worker shows rest DEBUG but does not log the REST DEBUG line")
	}
}
