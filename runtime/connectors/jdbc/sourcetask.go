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

package jdbc

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// SourceTask is what the table source tasks of every database share: the
// Reader over the task's tables, whose positions travel as source offsets,
// so records need no acknowledgement and there is nothing to commit. A
// task embeds it and adds Start (StartReader at its end) and Stop.
type SourceTask struct {
	Reader Reader
}

// SkipRecordCommits: the positions travel as source offsets.
func (t *SourceTask) SkipRecordCommits() bool { return true }

// CommitRecord does nothing.
func (t *SourceTask) CommitRecord(*plugin.SourceRecord, *plugin.RecordMetadata) error { return nil }

// Commit does nothing: the stored offsets are the task's positions.
func (t *SourceTask) Commit(context.Context) error { return nil }

// Poll returns the next rows of the task's tables.
func (t *SourceTask) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	return t.Reader.Poll(ctx)
}

// StartReader sets up the Reader over tables with the settings' mode and
// batching, and resumes each table from its stored offset.
func (t *SourceTask) StartReader(ctx context.Context, d Dialect, s *SourceSettings, log *slog.Logger, now func() time.Time,
	tables []*SourceTable, offsets plugin.OffsetReader) error {
	t.Reader = Reader{Dialect: d, Mode: s.Mode, BatchMaxRows: s.BatchMaxRows, PollInterval: s.PollInterval,
		Delay: s.TsDelay, Log: log, Now: now, Tables: tables}
	return t.Reader.Resume(ctx, offsets)
}

// TablesOf returns the tables a task reads: the pairs the connector gave
// it in task.tables, each made by pair, or, without them (standalone), every
// table list returns, each made by table.
func TablesOf[T, L any](config map[string]string, pair func(schema, name string) T, list func() ([]L, error), table func(L) T) ([]T, error) {
	pairs, err := TaskTables(config)
	if err != nil {
		return nil, fmt.Errorf("table source task: %w", err)
	}
	var out []T
	for _, p := range pairs {
		out = append(out, pair(p[0], p[1]))
	}
	if pairs == nil { // standalone: every table of the connector
		all, err := list()
		if err != nil {
			return nil, fmt.Errorf("table source task: %w", err)
		}
		for _, l := range all {
			out = append(out, table(l))
		}
	}
	return out, nil
}
