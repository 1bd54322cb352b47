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
	"log/slog"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/loglevel"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// Cluster-wide log levels (KIP-976): PUT /admin/loggers/{logger}?scope=cluster
// writes a logger-cluster record to the config topic; every worker applies
// each such record as it reads it, as if it had been set on it with
// scope=worker. A worker that starts reads the whole topic, so it applies
// the levels the cluster was given before it, in the order they were set
// (Kafka Connect skips those: its levels last until a restart).

// putClusterLevel writes a cluster-wide level (rest.Config.ClusterLoggers).
func (w *Worker) putClusterLevel(ctx context.Context, logger string, level slog.Level) error {
	return w.configs.PutLoggerLevel(ctx, logger, loglevel.LevelName(level))
}

// applyClusterLevel applies a logger-cluster record to this worker's
// levels; its last change is the record's timestamp, the same on every
// worker and after a restart.
func (w *Worker) applyClusterLevel(ev store.ConfigEvent) {
	if w.logLevels == nil {
		return
	}
	level, err := loglevel.ParseLevel(ev.Level)
	if err != nil {
		w.log.Warn("skipping a cluster log level from the config topic", "logger", ev.Logger, "err", err)
		return
	}
	name, err := loglevel.Name(ev.Logger)
	if err != nil {
		w.log.Warn("skipping a cluster log level from the config topic", "logger", ev.Logger, "err", err)
		return
	}
	at := ev.At
	if at.IsZero() {
		at = time.Now()
	}
	changed := w.logLevels.SetAt(name, level, at)
	w.log.Info("cluster log level applied", "name", name, "level", loglevel.LevelName(level), "changed", changed)
}
