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
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewMetricsServer serves gatherer at /metrics, and nothing else, for a
// listener of its own (metrics.port). With auth enabled every scrape must
// carry "Authorization: Bearer <token>" (Prometheus: authorization.credentials_file);
// others get 401. scrub, when not nil, rewrites the body (metric labels
// can carry topic names that came from placeholders).
//
// With backlog set it also serves GET /backlog/{connector}, behind the same
// token: {"backlog": N, "unit": "rows"}, the connector's backlog as
// herder.Backlog reads it, for KEDA's metrics-api trigger (the operator
// derives one per connector, valueLocation "backlog"). The metrics token,
// not the REST token, guards it: whoever reads it (KEDA) can read figures
// and change nothing.
func NewMetricsServer(gatherer prometheus.Gatherer, auth *TokenCheck, scrub func(string) string, log *slog.Logger, backlog BacklogFunc) *http.Server {
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	if backlog != nil {
		mux.Handle("GET /backlog/{connector}", backlogHandler(backlog, log))
	}
	var h http.Handler = mux
	if auth.Enabled() {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !auth.Accepts(r.Header.Get("Authorization")) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="conveyor-metrics"`)
				writeError(w, http.StatusUnauthorized, "Authentication required: send 'Authorization: Bearer <token>' with the cluster's metrics token")
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	return &http.Server{
		Handler:           scrubResponses(scrub, nil, h),
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      time.Minute,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
