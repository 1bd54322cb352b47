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
	"log/slog"
	"net/http"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// BacklogFunc reads one connector's backlog (herder.Backlog).
type BacklogFunc func(ctx context.Context, connector string) (plugin.Backlog, error)

// backlogTimeout bounds one backlog read: KEDA's HTTP client gives up after
// its own global timeout (3 s by default), and a source database that does not
// answer must not hold the request longer.
const backlogTimeout = 10 * time.Second

// backlogHandler serves GET /backlog/{connector}: 200 with the figure, 404
// for an unknown connector or one without a figure, 500 when the source
// system or Kafka did not answer (KEDA then counts a failed read; see
// controllers/autoscaling/composite.go).
func backlogHandler(backlog BacklogFunc, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), backlogTimeout)
		defer cancel()
		name := r.PathValue("connector")
		b, err := backlog(ctx, name)
		if err != nil {
			code := connectapi.StatusCode(err)
			if code >= 500 {
				log.Warn("reading a connector's backlog failed", "connector", name, "error", err)
			}
			writeError(w, code, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, b)
	})
}
