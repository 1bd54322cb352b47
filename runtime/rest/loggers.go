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
	"net/http"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/loglevel"
)

// loggerLevel is Kafka's body for one logger (KIP-495; last_modified from
// KIP-976, only for a level set at run time).
type loggerLevel struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified,omitempty"`
}

func levelOf(lg loglevel.Logger) loggerLevel {
	out := loggerLevel{Level: loglevel.LevelName(lg.Level)}
	if !lg.LastModified.IsZero() {
		ms := lg.LastModified.UnixMilli()
		out.LastModified = &ms
	}
	return out
}

// Scopes of PUT /admin/loggers/{logger} (KIP-976).
const (
	scopeWorker  = "worker"
	scopeCluster = "cluster"
)

// adminRoutes serves /admin/loggers when the worker has run-time levels.
// scope=worker (the default) changes this worker's levels and answers the
// loggers it changed; scope=cluster writes the level to the config topic,
// from which every worker applies it, and answers 204. Neither is
// forwarded to the leader: Kafka Connect's worker writes the record
// itself.
func (s *Server) adminRoutes() {
	lv := s.cfg.Loggers
	if lv == nil {
		return
	}
	for _, base := range []string{"/admin/loggers", "/admin/loggers/{$}"} {
		s.mux.HandleFunc("GET "+base, func(w http.ResponseWriter, _ *http.Request) {
			out := map[string]loggerLevel{}
			for n, lg := range lv.All() {
				out[n] = levelOf(lg)
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	s.mux.HandleFunc("GET /admin/loggers/{logger}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("logger")
		if own, err := loglevel.Name(name); err == nil {
			name = own
		}
		lg, ok := lv.Get(name)
		if !ok {
			lg = loglevel.Logger{Level: lv.Effective(name)}
		}
		writeJSON(w, http.StatusOK, levelOf(lg))
	})
	s.mux.HandleFunc("PUT /admin/loggers/{logger}", func(w http.ResponseWriter, r *http.Request) {
		scope := scopeWorker
		if q := r.URL.Query(); q.Has("scope") {
			scope = strings.ToLower(q.Get("scope"))
		}
		if scope != scopeWorker && scope != scopeCluster {
			// Kafka Connect logs a warning and sets the worker's level: a
			// typo would quietly change one worker instead of all.
			writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid scope %q: the query parameter 'scope' must be %q (this worker, the default) or %q (every worker)",
				r.URL.Query().Get("scope"), scopeWorker, scopeCluster))
			return
		}
		body, err := readBody(r, s.cfg.MaxBodyBytes)
		if err != nil {
			s.writeErr(w, err)
			return
		}
		var req map[string]string
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, `the body must be a JSON object such as {"level": "DEBUG"}`)
			return
		}
		raw, ok := req["level"]
		if !ok {
			writeError(w, http.StatusBadRequest, "Desired 'level' parameter was not specified in request.")
			return
		}
		level, err := loglevel.ParseLevel(raw)
		if err != nil {
			// Kafka answers 404 (the level is not a resource): a client
			// mistake is a 400 here, naming the parameter.
			writeError(w, http.StatusBadRequest, "parameter 'level': "+err.Error())
			return
		}
		name, err := loglevel.Name(r.PathValue("logger"))
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if scope == scopeCluster {
			if s.cfg.ClusterLoggers == nil {
				writeError(w, http.StatusBadRequest, "scope=cluster needs the worker's config topic, which this server has not: use scope=worker")
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			if err := s.cfg.ClusterLoggers(ctx, name, level); err != nil {
				s.log.Error("writing a cluster log level failed", "name", name, "err", err)
				writeError(w, http.StatusInternalServerError, fmt.Sprintf("writing the level of logger %q to the config topic failed: %v", name, err))
				return
			}
			s.log.Info("cluster log level written", "name", name, "level", loglevel.LevelName(level))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		changed := lv.Set(name, level)
		s.log.Info("log level changed", "name", name, "level", loglevel.LevelName(level), "changed", changed)
		writeJSON(w, http.StatusOK, changed)
	})
}
