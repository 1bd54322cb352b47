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

package mycommon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
)

// Table names a table, optionally database-qualified.
type Table struct {
	Schema string // the database; empty: the connection's
	Name   string
}

// String renders database.name (or name) without quotes, for logs, offsets
// and messages.
func (t Table) String() string {
	if t.Schema == "" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// Quoted renders the table as a quoted identifier.
func (t Table) Quoted() string {
	if t.Schema == "" {
		return QuoteIdent(t.Name)
	}
	return QuoteIdent(t.Schema) + "." + QuoteIdent(t.Name)
}

// QuoteIdent quotes one identifier with backticks.
func QuoteIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// ParseTable parses "table", "database.table" or their backtick-quoted
// forms (`my db`.`orders`, with “ for a backtick inside).
func ParseTable(s string) (Table, error) {
	parts, err := jdbc.SplitQualified(s, '`')
	if err != nil {
		return Table{}, err
	}
	switch len(parts) {
	case 1:
		return Table{Name: parts[0]}, nil
	case 2:
		return Table{Schema: parts[0], Name: parts[1]}, nil
	}
	return Table{}, fmt.Errorf("table name %q has %d dot-separated parts; want table or database.table (quote names that contain dots with backticks)", s, len(parts))
}

// Querier runs queries: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ErrNoTable means a table does not exist (or is not visible to the user).
var ErrNoTable = errors.New("table does not exist")

// Resolve qualifies a table with the connection's database when it has
// none, and checks that it exists (MySQL compares names as the server's
// lower_case_table_names says). It wraps ErrNoTable when there is no such
// base table.
func Resolve(ctx context.Context, q Querier, t Table) (Table, error) {
	var schema, name string
	err := q.QueryRowContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND TABLE_TYPE = 'BASE TABLE'`, t.Schema, t.Name).Scan(&schema, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return Table{}, fmt.Errorf("table %s: %w", t, ErrNoTable)
	}
	if err != nil {
		return Table{}, fmt.Errorf("looking up table %s: %w", t, err)
	}
	return Table{Schema: schema, Name: name}, nil
}

// TableSize is a table and its estimated rows and bytes.
type TableSize struct {
	Table Table
	Rows  float64
	Bytes float64
}

const sizeQuery = `SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(TABLE_ROWS, 0), COALESCE(DATA_LENGTH, 0) + COALESCE(INDEX_LENGTH, 0)
	FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'`

// ListTables lists the base tables of the connection's database (the
// pattern matched against name and database.name), or the whitelisted
// tables (each must exist), with information_schema's estimates of their
// rows and bytes (InnoDB's statistics: approximate until ANALYZE TABLE).
func ListTables(ctx context.Context, q Querier, whitelist []Table, match func(name, qualified string) bool) ([]TableSize, error) {
	var out []TableSize
	scan := func(query string, args ...any) error {
		rows, err := q.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("listing tables: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var ts TableSize
			if err := rows.Scan(&ts.Table.Schema, &ts.Table.Name, &ts.Rows, &ts.Bytes); err != nil {
				return fmt.Errorf("listing tables: %w", err)
			}
			if match == nil || match(ts.Table.Name, ts.Table.String()) {
				out = append(out, ts)
			}
		}
		return rows.Err()
	}
	if whitelist == nil {
		err := scan(sizeQuery + ` AND TABLE_SCHEMA = DATABASE() ORDER BY 1, 2`)
		return out, err
	}
	seen := map[Table]bool{}
	for _, w := range whitelist {
		rt, err := Resolve(ctx, q, w)
		if err != nil {
			return nil, err
		}
		if seen[rt] {
			continue
		}
		seen[rt] = true
		if err := scan(sizeQuery+` AND TABLE_SCHEMA = ? AND TABLE_NAME = ?`, rt.Schema, rt.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Columns reads a table's columns in order.
func Columns(ctx context.Context, q Querier, t Table) ([]Column, error) {
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE = 'YES',
		COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0), COALESCE(DATETIME_PRECISION, 0)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, t.Schema, t.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", t, err)
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		var nullable bool
		if err := rows.Scan(&c.Name, &c.DataType, &c.ColumnType, &nullable, &c.Precision, &c.Scale, &c.FracDigits); err != nil {
			return nil, fmt.Errorf("reading the columns of %s: %w", t, err)
		}
		c.DataType, c.ColumnType, c.NotNull = strings.ToLower(c.DataType), strings.ToLower(c.ColumnType), !nullable
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", t, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("table %s: %w", t, ErrNoTable)
	}
	return cols, nil
}

// PrimaryKey returns the primary key columns of a table in key order
// (empty when it has none).
func PrimaryKey(ctx context.Context, q Querier, t Table) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`, t.Schema, t.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of %s: %w", t, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("reading the primary key of %s: %w", t, err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
