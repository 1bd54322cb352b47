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

// Package tablesource holds PostgresTableSource, a JDBC-source-like
// connector that copies PostgreSQL tables into Kafka topics (one topic per
// table, topic.prefix + table name), in one of four modes: bulk (the whole
// table every poll interval), incrementing (new rows by a strictly
// increasing column), timestamp (new and changed rows by a timestamp
// column) and timestamp+incrementing (both, exact even for equal
// timestamps). Tables are spread over min(tasks.max, tables) tasks so that
// their estimated rows are balanced; a task streams each table with one
// ordered query and stores, per table, the position after each record, so
// a restart resumes exactly.
package tablesource

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the table source.
const Version = "0.1.0"

// Class is the connector class name.
const Class = "dev.conveyor.connect.postgres.PostgresTableSourceConnector"

// Configuration keys (besides pgcommon's connection keys): the JDBC-style
// sources' shared ones.
const (
	KeyTableWhitelist      = jdbc.KeyTableWhitelist
	KeyTablePattern        = jdbc.KeyTablePattern
	KeyTablePollIntervalMs = jdbc.KeyTablePollIntervalMs
	KeyMode                = jdbc.KeyMode
	KeyIncrementingColumn  = jdbc.KeyIncrementingColumn
	KeyTimestampColumn     = jdbc.KeyTimestampColumn
	KeyTimestampDelayMs    = jdbc.KeyTimestampDelayMs
	KeyBatchMaxRows        = jdbc.KeyBatchMaxRows
	KeyPollIntervalMs      = jdbc.KeyPollIntervalMs
	KeyTopicPrefix         = jdbc.KeyTopicPrefix
	KeyTaskTables          = jdbc.KeyTaskTables
)

// Modes.
const (
	ModeBulk                  = jdbc.ModeBulk
	ModeIncrementing          = jdbc.ModeIncrementing
	ModeTimestamp             = jdbc.ModeTimestamp
	ModeTimestampIncrementing = jdbc.ModeTimestampIncrementing
)

// Source partition and offset keys.
const (
	PartitionTable      = jdbc.PartitionTable
	OffsetIncrementing  = jdbc.OffsetIncrementing
	OffsetTimestamp     = jdbc.OffsetTimestamp
	OffsetTimestampNano = jdbc.OffsetTimestampNano
)

const group = "PostgreSQL table source"

// db is what the shared table source code needs of PostgreSQL.
var db = jdbc.SourceDB{
	Group:        "PostgreSQL table source",
	TableDoc:     "table or schema.table (double-quote names with capitals, dots or commas)",
	PatternScope: "table and schema.table of every readable table outside the system schemas",
	IncTypes:     "smallint, integer, bigint",
	TsTypes:      "timestamp or timestamptz",
	ParseTable:   func(s string) error { _, err := pgcommon.ParseTable(s); return err },
}

// Plugin returns the PostgresTableSource plugin.
func Plugin() plugin.Plugin {
	fields := append(pgcommon.ConnectionFields("2"), jdbc.SourceFields(db)...)
	return plugin.Plugin{
		Class:         Class,
		Kind:          plugin.KindSource,
		Version:       Version,
		Doc:           "Copies PostgreSQL tables into one topic per table (bulk, incrementing, timestamp or timestamp+incrementing); at most one task per table, tables balanced by estimated rows.",
		Spec:          plugin.ConfigSpec{Fields: fields},
		NewConnector:  func() plugin.Connector { return &Connector{} },
		NewSourceTask: func() plugin.SourceTask { return &Task{} },
	}
}

// settings is a parsed configuration.
type settings struct {
	*jdbc.SourceSettings
	poolMax int
}

func parse(config map[string]string) (*settings, error) {
	cfg, err := Plugin().Spec.Parse(config)
	if err != nil {
		return nil, err
	}
	ss, err := jdbc.ParseSource(db, cfg, config)
	if err != nil {
		return nil, err
	}
	return &settings{SourceSettings: ss, poolMax: cfg.Int(pgcommon.KeyPoolMax)}, nil
}

// Connector lists the tables and spreads them over tasks (the shared
// jdbc.TableConnector); Validate and Start are its own.
type Connector struct {
	jdbc.TableConnector[TableInfo]
	s *settings
}

// Validate connects and checks tables, privileges and mode columns.
func (c *Connector) Validate(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err != nil {
		return pgcommon.FieldErrors(err, KeyMode)
	}
	conn, errs := pgcommon.CheckConnection(ctx, config)
	if len(errs) > 0 {
		return errs
	}
	defer conn.Close(context.Background())
	return checkTables(ctx, conn, s)
}

// Start parses the configuration and starts watching for table changes.
func (c *Connector) Start(ctx context.Context, cc plugin.ConnectorContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	c.s = s
	c.List, c.Name, c.Size, c.Pair = c.list, tableName, tableRows, tablePair
	c.StartWatching(ctx, cc, config, s.TablePoll)
	return nil
}

// list reads the current tables with their row estimates.
func (c *Connector) list(ctx context.Context) ([]TableInfo, error) {
	conn, err := pgcommon.Connect(ctx, c.s.Raw)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	return ListTables(ctx, conn, c.s.Whitelist, c.s.Pattern)
}

func tableName(t TableInfo) string { return t.Table.String() }

func tableRows(t TableInfo) float64 { return t.Rows }

func tablePair(t TableInfo) [2]string { return [2]string{t.Table.Schema, t.Table.Name} }

// TableInfo is a table and its estimated row count.
type TableInfo struct {
	Table pgcommon.Table
	Rows  float64
}

// ListTables resolves the whitelist (every table must exist) or lists the
// readable tables matching the pattern, with the planner's row estimates
// (pg_class.reltuples, or pg_stat_user_tables.n_live_tup when larger, as
// for a table never analysed).
func ListTables(ctx context.Context, q pgcommon.Querier, whitelist []string, pattern *regexp.Regexp) ([]TableInfo, error) {
	const estimate = `SELECT n.nspname, c.relname, greatest(c.reltuples, coalesce(s.n_live_tup, 0), 0)::float8
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid`
	var out []TableInfo
	scan := func(sql string, args ...any) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("listing tables: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var ti TableInfo
			if err := rows.Scan(&ti.Table.Schema, &ti.Table.Name, &ti.Rows); err != nil {
				return fmt.Errorf("listing tables: %w", err)
			}
			if pattern == nil || pattern.MatchString(ti.Table.Name) || pattern.MatchString(ti.Table.String()) {
				out = append(out, ti)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("listing tables: %w", err)
		}
		return nil
	}
	if pattern != nil {
		err := scan(estimate + ` WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
			AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
			AND has_table_privilege(c.oid, 'SELECT') ORDER BY 1, 2`)
		return out, err
	}
	var quoted []string
	for _, w := range whitelist {
		t, err := pgcommon.ParseTable(w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeyTableWhitelist, err)
		}
		rt, err := pgcommon.Resolve(ctx, q, t)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(quoted, rt.Quoted()) {
			quoted = append(quoted, rt.Quoted())
		}
	}
	if err := scan(estimate+` WHERE c.oid = ANY(SELECT to_regclass(x) FROM unnest($1::text[]) x) ORDER BY 1, 2`, quoted); err != nil {
		return nil, err
	}
	return out, nil
}

// Assign spreads tables over min(n, len(tables)) tasks so that estimated
// rows per task are balanced: largest table first, each to the task with
// the fewest estimated rows so far (then the fewest tables, then the lowest
// index). Every task gets at least one table.
func Assign(tables []TableInfo, n int) [][]TableInfo {
	return jdbc.Assign(tables, n, tableRows, tableName)
}

// checkTables validates the tables, the user's SELECT privilege on them and
// the mode's columns.
func checkTables(ctx context.Context, q pgcommon.Querier, s *settings) []plugin.FieldError {
	var errs []plugin.FieldError
	var user string
	if err := q.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil {
		return []plugin.FieldError{{Name: pgcommon.KeyConnectionURL, Message: fmt.Sprintf("querying the database: %v", err)}}
	}
	field := KeyTableWhitelist
	var tables []pgcommon.Table
	if s.Pattern != nil {
		field = KeyTablePattern
		// Tables the pattern matches but the user cannot read.
		rows, err := q.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname NOT IN ('pg_catalog', 'information_schema')
			AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%' ORDER BY 1, 2`)
		if err != nil {
			return []plugin.FieldError{{Name: field, Message: fmt.Sprintf("listing tables: %v", err)}}
		}
		for rows.Next() {
			var t pgcommon.Table
			if err := rows.Scan(&t.Schema, &t.Name); err == nil && (s.Pattern.MatchString(t.Name) || s.Pattern.MatchString(t.String())) {
				tables = append(tables, t)
			}
		}
		rows.Close()
	} else {
		for _, w := range s.Whitelist {
			t, _ := pgcommon.ParseTable(w) // parse checked it
			rt, err := pgcommon.Resolve(ctx, q, t)
			if errors.Is(err, pgcommon.ErrNoTable) {
				errs = append(errs, plugin.FieldError{Name: field, Message: fmt.Sprintf("table %s does not exist (or user %q cannot see it); names are case-sensitive: quote them as \"Name\" when they have capitals", w, user)})
				continue
			}
			if err != nil {
				errs = append(errs, plugin.FieldError{Name: field, Message: err.Error()})
				continue
			}
			tables = append(tables, rt)
		}
	}
	for _, t := range tables {
		var ok bool
		if err := q.QueryRow(ctx, "SELECT has_table_privilege(to_regclass($1), 'SELECT')", t.Quoted()).Scan(&ok); err != nil {
			errs = append(errs, plugin.FieldError{Name: field, Message: fmt.Sprintf("checking privileges on %s: %v", t, err)})
			continue
		}
		if !ok {
			errs = append(errs, plugin.FieldError{Name: field, Message: fmt.Sprintf("user %q lacks the SELECT privilege on table %s: GRANT SELECT ON %s TO %s", user, t, t.Quoted(), pgcommon.QuoteIdent(user))})
			continue
		}
		cols, err := pgcommon.Columns(ctx, q, t)
		if err != nil {
			errs = append(errs, plugin.FieldError{Name: field, Message: err.Error()})
			continue
		}
		if _, err := modeColumns(s, t, cols); err != nil {
			var fe plugin.FieldError
			if errors.As(err, &fe) {
				errs = append(errs, fe)
			}
		}
	}
	return errs
}

// modeColumns finds the mode's columns in a table: the indexes of the
// incrementing and timestamp columns (-1 when unused).
func modeColumns(s *settings, t pgcommon.Table, cols []pgcommon.Column) ([2]int, error) {
	idx := [2]int{-1, -1}
	find := func(name string) int {
		for i, c := range cols {
			if c.Name == name {
				return i
			}
		}
		return -1
	}
	if s.UsesIncrementing() {
		i := find(s.IncColumn)
		if i < 0 {
			return idx, plugin.FieldError{Name: KeyIncrementingColumn, Message: fmt.Sprintf("table %s has no column %q", t, s.IncColumn)}
		}
		if m := pgcommon.MapColumn(cols[i]); !m.IsInteger() {
			return idx, plugin.FieldError{Name: KeyIncrementingColumn, Message: fmt.Sprintf("column %q of table %s is %s; the incrementing column must be smallint, integer or bigint", s.IncColumn, t, cols[i].TypeName)}
		}
		idx[0] = i
	}
	if s.UsesTimestamp() {
		i := find(s.TsColumn)
		if i < 0 {
			return idx, plugin.FieldError{Name: KeyTimestampColumn, Message: fmt.Sprintf("table %s has no column %q", t, s.TsColumn)}
		}
		if m := pgcommon.MapColumn(cols[i]); m.Kind != pgcommon.KindTimestamp && m.Kind != pgcommon.KindTimestamptz {
			return idx, plugin.FieldError{Name: KeyTimestampColumn, Message: fmt.Sprintf("column %q of table %s is %s; the timestamp column must be timestamp or timestamptz", s.TsColumn, t, cols[i].TypeName)}
		}
		idx[1] = i
	}
	return idx, nil
}
