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
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// BacklogTable is one table of a table source, as its backlog count needs it.
type BacklogTable struct {
	// Name is the table as offsets name it (schema.table, database.table).
	Name string
	// Quoted is the table as SQL names it.
	Quoted string
	// Columns are the mode's columns.
	Columns QueryColumns
}

// BacklogUnit is a table source's backlog unit: rows, none in bulk mode.
func BacklogUnit(config map[string]string) string {
	if strings.EqualFold(strings.TrimSpace(config[KeyMode]), ModeBulk) {
		return ""
	}
	return plugin.BacklogRows
}

// Backlog is a table source's rows behind: for each table, the rows that
// the next query from its stored position would return (CountQuery), summed.
// count runs one count query. A table without a stored offset counts
// whole. Bulk mode has no backlog (it copies every table whole, every
// time): plugin.ErrNoBacklog.
func Backlog(ctx context.Context, d Dialect, s *SourceSettings, tables []BacklogTable, offsets plugin.OffsetReader,
	count func(ctx context.Context, sql string, args []any) (int64, error)) (plugin.Backlog, error) {
	if s.Mode == ModeBulk {
		return plugin.Backlog{}, fmt.Errorf("%w: %s=%s copies every table whole at each poll", plugin.ErrNoBacklog, KeyMode, ModeBulk)
	}
	parts := make([]map[string]any, len(tables))
	for i, t := range tables {
		parts[i] = map[string]any{PartitionTable: t.Name}
	}
	offs, err := offsets.Offsets(ctx, parts)
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("reading stored offsets: %w", err)
	}
	out := plugin.Backlog{Unit: plugin.BacklogRows}
	for i, t := range tables {
		var pos Position
		if offs[i] != nil {
			if err := pos.Restore(offs[i], UsesIncrementing(s.Mode), UsesTimestamp(s.Mode)); err != nil {
				return plugin.Backlog{}, fmt.Errorf("stored offset of table %s: %w", t.Name, err)
			}
		}
		sql, args := CountQuery(d, s.Mode, t.Quoted, t.Columns, pos, s.TsDelay.Seconds())
		n, err := count(ctx, sql, args)
		if err != nil {
			return plugin.Backlog{}, fmt.Errorf("counting the rows behind in table %s: %w", t.Name, err)
		}
		out.Value += max(n, 0)
	}
	return out, nil
}
