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

package plugin

import (
	"context"
	"errors"
)

// Backlog units: what a connector's backlog counts.
const (
	BacklogRows    = "rows"    // table rows not yet copied
	BacklogBytes   = "bytes"   // bytes not yet read (a file, a replication slot's WAL)
	BacklogRecords = "records" // Kafka records not yet delivered (a share group)
)

// Backlog is how much work a connector has not done yet, as its source
// system and its stored offsets say: what autoscaling scales on where no
// consumer lag exists (sources) or KEDA cannot read it (share groups).
type Backlog struct {
	// Value is the amount behind, at least 0.
	Value int64 `json:"backlog"`
	// Unit is one of BacklogRows, BacklogBytes, BacklogRecords.
	Unit string `json:"unit"`
}

// ErrNoBacklog is returned (wrapped, with the reason) by a connector that
// has no backlog figure in its configuration (a table source in bulk mode,
// which copies everything every time).
var ErrNoBacklog = errors.New("no backlog figure")

// BacklogReporter is implemented by a source Connector that can tell how
// far its source system is ahead of its stored offsets. Backlog is called
// on a fresh instance, never started, like Validate: with the connector's
// (placeholder-resolved) configuration and a reader of its stored offsets,
// so any worker can answer it whether or not it runs the connector, and
// the answer survives every worker restart (it lives in the source system
// and the offsets topic, not in a process). It must not keep state, and
// should cost about as much as one query of the source.
type BacklogReporter interface {
	// BacklogUnit is the unit of the figure that Backlog gives for config,
	// or "" when config has none (then Backlog returns ErrNoBacklog). It
	// reads config only, cheaply: the worker reports it with the task limits.
	BacklogUnit(config map[string]string) string
	Backlog(ctx context.Context, config map[string]string, offsets OffsetReader) (Backlog, error)
}
