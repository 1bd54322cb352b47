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
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
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
	conn, err := pgcommon.Connect(ctx, config)
	if err != nil {
		return plugin.Backlog{}, err
	}
	defer conn.Close(context.Background())
	infos, err := ListTables(ctx, conn, s.Whitelist, s.Pattern)
	if err != nil {
		return plugin.Backlog{}, err
	}
	tables := make([]jdbc.BacklogTable, 0, len(infos))
	for _, ti := range infos {
		cols, err := pgcommon.Columns(ctx, conn, ti.Table)
		if err != nil {
			return plugin.Backlog{}, err
		}
		idx, err := modeColumns(s, ti.Table, cols)
		if err != nil {
			return plugin.Backlog{}, err
		}
		tables = append(tables, jdbc.BacklogTable{Name: ti.Table.String(), Quoted: ti.Table.Quoted(), Columns: queryColumns(cols, idx)})
	}
	return jdbc.Backlog(ctx, dialect{}, s.SourceSettings, tables, offsets, func(ctx context.Context, sql string, args []any) (int64, error) {
		var n int64
		err := conn.QueryRow(ctx, sql, args...).Scan(&n)
		return n, err
	})
}

// queryColumns names a table's mode columns (idx from modeColumns) for
// the shared queries.
func queryColumns(cols []pgcommon.Column, idx [2]int) jdbc.QueryColumns {
	var qc jdbc.QueryColumns
	if idx[0] >= 0 {
		qc.Inc = cols[idx[0]].Name
	}
	if idx[1] >= 0 {
		qc.Ts = cols[idx[1]].Name
		qc.TsZoned = pgcommon.MapColumn(cols[idx[1]]).Kind == pgcommon.KindTimestamptz
	}
	return qc
}
