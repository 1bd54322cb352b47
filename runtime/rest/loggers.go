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
	"encoding/json"
	"fmt"
	"net/http"

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

// adminRoutes serves /admin/loggers when the worker has run-time levels.
// They change this worker only (Kafka's scope=worker): they are not
// forwarded to the leader.
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
		lg, ok := lv.Get(name)
		if !ok {
			lg = loglevel.Logger{Level: lv.Effective(name)}
		}
		writeJSON(w, http.StatusOK, levelOf(lg))
	})
	s.mux.HandleFunc("PUT /admin/loggers/{logger}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("logger")
		if scope := r.URL.Query().Get("scope"); scope != "" && scope != "worker" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("scope=%s is not supported: levels are set per worker (scope=worker); PUT the level on each worker", scope))
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
			// Kafka answers an unknown level with 404.
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		changed := lv.Set(name, level)
		s.log.Info("log level changed", "name", name, "level", loglevel.LevelName(level), "changed", changed)
		writeJSON(w, http.StatusOK, changed)
	})
}
