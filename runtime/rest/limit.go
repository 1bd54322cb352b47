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
	"fmt"
	"net/http"
	"time"
)

// limitConcurrency lets at most Config.MaxConcurrent requests run at once
// (Kafka Connect's bound is its Jetty thread pool, whose excess requests
// queue). A request beyond the bound waits for a slot, as Kafka Connect's
// clients expect, for at most RequestTimeout; then it gets 503 with a
// Retry-After and a message naming rest.threads.max. Probes and scrapes
// (/health, /readyz, /metrics) are never held back, so a busy worker is
// not restarted for it.
func (s *Server) limitConcurrency(next http.Handler) http.Handler {
	n := s.cfg.MaxConcurrent
	if n <= 0 {
		return next
	}
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/readyz", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			start := time.Now()
			t := time.NewTimer(s.cfg.RequestTimeout)
			defer t.Stop()
			select {
			case slots <- struct{}{}:
			case <-r.Context().Done():
				return
			case <-t.C:
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusServiceUnavailable, fmt.Sprintf(
					"the worker is busy: %d REST requests are in progress (rest.threads.max=%d) and this one waited %s for a slot; retry later, or raise rest.threads.max",
					n, n, time.Since(start).Round(time.Millisecond)))
				return
			}
		}
		defer func() { <-slots }()
		next.ServeHTTP(w, r)
	})
}
