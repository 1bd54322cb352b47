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

package tablesource

import (
	"context"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

var _ plugin.BacklogReporter = (*Connector)(nil)

// BacklogUnit: rows, none in bulk mode.
func (c *Connector) BacklogUnit(config map[string]string) string { return jdbc.BacklogUnit(config) }

// Backlog counts the rows of the connector's tables past their stored
// positions (jdbc.Backlog), with one connection and one count per table.
func (c *Connector) Backlog(ctx context.Context, config map[string]string, offsets plugin.OffsetReader) (plugin.Backlog, error) {
	s, err := parse(config)
	if err != nil {
		return plugin.Backlog{}, err
	}
	db, err := mycommon.Open(ctx, config, 1)
	if err != nil {
		return plugin.Backlog{}, err
	}
	defer db.Close()
	sizes, err := mycommon.ListTables(ctx, db, s.whitelist, s.match())
	if err != nil {
		return plugin.Backlog{}, err
	}
	tables := make([]jdbc.BacklogTable, 0, len(sizes))
	for _, ts := range sizes {
		cols, err := mycommon.Columns(ctx, db, ts.Table)
		if err != nil {
			return plugin.Backlog{}, err
		}
		mapped, idx, err := mapColumns(s, ts.Table, cols)
		if err != nil {
			return plugin.Backlog{}, err
		}
		tables = append(tables, jdbc.BacklogTable{Name: ts.Table.String(), Quoted: ts.Table.Quoted(), Columns: queryColumns(cols, mapped, idx)})
	}
	return jdbc.Backlog(ctx, dialect{}, s.SourceSettings, tables, offsets, func(ctx context.Context, sql string, args []any) (int64, error) {
		var n int64
		err := db.QueryRowContext(ctx, sql, args...).Scan(&n)
		return n, err
	})
}

// queryColumns names a table's mode columns (idx from mapColumns) for the
// shared queries.
func queryColumns(cols []mycommon.Column, mapped []mycommon.Mapped, idx [2]int) jdbc.QueryColumns {
	var qc jdbc.QueryColumns
	if idx[0] >= 0 {
		qc.Inc = cols[idx[0]].Name
	}
	if idx[1] >= 0 {
		qc.Ts = cols[idx[1]].Name
		qc.TsZoned = mapped[idx[1]].Kind == mycommon.KindTimestamp
	}
	return qc
}
