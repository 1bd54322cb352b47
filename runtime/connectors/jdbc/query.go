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
	"fmt"
	"strings"
)

// Dialect is what the shared code needs to know of a database's SQL.
type Dialect interface {
	// QuoteIdent quotes one identifier (a column name).
	QuoteIdent(name string) string
	// Placeholder is the n-th (from 1) bind parameter: $n or ?.
	Placeholder(n int) string
	// OlderThan is a condition true when the timestamp column col is older
	// than the database clock minus delay seconds, given as the bind
	// parameter param; zoned says whether the column holds instants
	// (timestamptz, MySQL TIMESTAMP) or wall-clock times.
	OlderThan(col string, zoned bool, param string) string
}

// QueryColumns names a table's mode columns for Query.
type QueryColumns struct {
	Inc, Ts string // column names ("" when the mode does not use them)
	TsZoned bool   // the timestamp column holds instants
}

// Query builds the ordered query that continues a table from its position:
// selectSQL (SELECT ... FROM table) with the mode's condition and order.
// delaySeconds is timestamp.delay.interval.ms in seconds.
func Query(d Dialect, mode, selectSQL string, cols QueryColumns, pos Position, delaySeconds float64) (string, []any) {
	where, args, order := conditions(d, mode, cols, pos, delaySeconds)
	sql := selectSQL
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	if order != "" {
		sql += " ORDER BY " + order
	}
	return sql, args
}

// CountQuery counts the rows that Query would still return from pos: the
// table's backlog. table is the quoted table name.
func CountQuery(d Dialect, mode, table string, cols QueryColumns, pos Position, delaySeconds float64) (string, []any) {
	where, args, _ := conditions(d, mode, cols, pos, delaySeconds)
	sql := "SELECT count(*) FROM " + table
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	return sql, args
}

// conditions are the mode's WHERE conditions (joined by AND) with their
// arguments, and its ORDER BY list.
func conditions(d Dialect, mode string, cols QueryColumns, pos Position, delaySeconds float64) (where []string, args []any, order string) {
	arg := func(v any) string {
		args = append(args, v)
		return d.Placeholder(len(args))
	}
	switch mode {
	case ModeIncrementing:
		inc := d.QuoteIdent(cols.Inc)
		if pos.HasInc {
			where = append(where, inc+" > "+arg(pos.Inc))
		}
		order = inc
	case ModeTimestamp, ModeTimestampIncrementing:
		tsCol := d.QuoteIdent(cols.Ts)
		where = append(where, d.OlderThan(tsCol, cols.TsZoned, arg(delaySeconds)))
		if mode == ModeTimestamp {
			if pos.HasTs {
				where = append(where, tsCol+" > "+arg(pos.Ts))
			}
			order = tsCol
		} else {
			inc := d.QuoteIdent(cols.Inc)
			switch {
			case pos.HasTs && pos.HasInc:
				where = append(where, fmt.Sprintf("(%s, %s) > (%s, %s)", tsCol, inc, arg(pos.Ts), arg(pos.Inc)))
			case pos.HasTs:
				where = append(where, tsCol+" >= "+arg(pos.Ts))
			}
			order = tsCol + ", " + inc
		}
	}
	return where, args, order
}
