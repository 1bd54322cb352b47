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

// Package tablesource holds MySqlTableSource, a JDBC-source-like connector
// that copies MySQL and MariaDB tables into Kafka topics (one topic per
// table, topic.prefix + table name) in the modes of the PostgreSQL table
// source, on the same shared core (runtime/connectors/jdbc): bulk,
// incrementing, timestamp and timestamp+incrementing. Tables are spread
// over min(tasks.max, tables) tasks so that their estimated rows
// (information_schema.TABLES) are balanced.
package tablesource

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the table source.
const Version = "0.1.0"

// Class is the connector class name; MySqlSourceConnector is an alias.
const Class = "dev.conveyor.connect.mysql.MySqlTableSourceConnector"

// db is what the shared table source code needs of MySQL.
var db = jdbc.SourceDB{
	Group:        "MySQL table source",
	TableDoc:     "table (in the URL's database) or database.table (backtick-quote names with dots or commas)",
	PatternScope: "table and database.table of every base table of the URL's database",
	IncTypes:     "tinyint, smallint, mediumint, int, bigint",
	TsTypes:      "datetime or timestamp",
	ParseTable:   func(s string) error { _, err := mycommon.ParseTable(s); return err },
}

// Plugin returns the MySqlTableSource plugin.
func Plugin() plugin.Plugin {
	fields := append(mycommon.ConnectionFields("2"), jdbc.SourceFields(db)...)
	return plugin.Plugin{
		Class:         Class,
		Aliases:       []string{"dev.conveyor.connect.mysql.MySqlSourceConnector"},
		Kind:          plugin.KindSource,
		Version:       Version,
		Doc:           "Copies MySQL and MariaDB tables into one topic per table (bulk, incrementing, timestamp or timestamp+incrementing); at most one task per table, tables balanced by estimated rows.",
		Spec:          plugin.ConfigSpec{Fields: fields},
		NewConnector:  func() plugin.Connector { return &Connector{} },
		NewSourceTask: func() plugin.SourceTask { return &Task{} },
	}
}

type settings struct {
	*jdbc.SourceSettings
	whitelist []mycommon.Table
	poolMax   int
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
	s := &settings{SourceSettings: ss, poolMax: cfg.Int(mycommon.KeyPoolMax)}
	for _, w := range ss.Whitelist {
		t, _ := mycommon.ParseTable(w) // ParseSource checked it
		s.whitelist = append(s.whitelist, t)
	}
	return s, nil
}

// match is the pattern's test, nil without a pattern.
func (s *settings) match() func(name, qualified string) bool {
	if s.Pattern == nil {
		return nil
	}
	return s.Matches
}

// Connector lists the tables and spreads them over tasks (the shared
// jdbc.TableConnector); Validate and Start are its own.
type Connector struct {
	jdbc.TableConnector[mycommon.TableSize]
	s *settings
}

func tableName(t mycommon.TableSize) string  { return t.Table.String() }
func tableRows(t mycommon.TableSize) float64 { return t.Rows }
func tablePair(t mycommon.TableSize) [2]string {
	return [2]string{t.Table.Schema, t.Table.Name}
}

// Validate connects and checks the tables, privileges and mode columns.
func (c *Connector) Validate(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err != nil {
		return plugin.AsFieldErrors(err, jdbc.KeyMode)
	}
	conn, errs := mycommon.CheckConnection(ctx, config)
	if len(errs) > 0 {
		return errs
	}
	defer conn.Close()
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

func (c *Connector) list(ctx context.Context) ([]mycommon.TableSize, error) {
	conn, err := mycommon.Open(ctx, c.s.Raw, 1)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return mycommon.ListTables(ctx, conn, c.s.whitelist, c.s.match())
}

// checkTables validates the tables, their column types and the mode's
// columns.
func checkTables(ctx context.Context, q mycommon.Querier, s *settings) []plugin.FieldError {
	field := jdbc.KeyTableWhitelist
	if s.Pattern != nil {
		field = jdbc.KeyTablePattern
	}
	var errs []plugin.FieldError
	var tables []mycommon.Table
	for _, w := range s.whitelist {
		rt, err := mycommon.Resolve(ctx, q, w)
		if errors.Is(err, mycommon.ErrNoTable) {
			errs = append(errs, plugin.FieldError{Name: field, Message: fmt.Sprintf("table %s does not exist in the URL's database (or the user cannot see it: GRANT SELECT ON it)", w)})
			continue
		}
		if err != nil {
			errs = append(errs, plugin.FieldError{Name: field, Message: err.Error()})
			continue
		}
		tables = append(tables, rt)
	}
	if s.Pattern != nil {
		sizes, err := mycommon.ListTables(ctx, q, nil, s.match())
		if err != nil {
			return []plugin.FieldError{{Name: field, Message: err.Error()}}
		}
		for _, ts := range sizes {
			tables = append(tables, ts.Table)
		}
	}
	for _, t := range tables {
		cols, err := mycommon.Columns(ctx, q, t)
		if err != nil {
			errs = append(errs, plugin.FieldError{Name: field, Message: err.Error()})
			continue
		}
		if _, _, err := mapColumns(s, t, cols); err != nil {
			var fe plugin.FieldError
			if errors.As(err, &fe) {
				errs = append(errs, fe)
			} else {
				errs = append(errs, plugin.FieldError{Name: field, Message: err.Error()})
			}
		}
	}
	return errs
}

// mapColumns maps a table's columns and finds the mode's columns: the
// indexes of the incrementing and timestamp columns (-1 when unused).
func mapColumns(s *settings, t mycommon.Table, cols []mycommon.Column) ([]mycommon.Mapped, [2]int, error) {
	idx := [2]int{-1, -1}
	mapped := make([]mycommon.Mapped, len(cols))
	for i, c := range cols {
		m, err := mycommon.MapColumn(c)
		if err != nil {
			return nil, idx, fmt.Errorf("table %s: %w", t, err)
		}
		mapped[i] = m
	}
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
			return nil, idx, plugin.FieldError{Name: jdbc.KeyIncrementingColumn, Message: fmt.Sprintf("table %s has no column %q", t, s.IncColumn)}
		}
		if !mapped[i].IsInteger() {
			return nil, idx, plugin.FieldError{Name: jdbc.KeyIncrementingColumn, Message: fmt.Sprintf("column %q of table %s is %s; the incrementing column must be an integer type up to bigint (signed)", s.IncColumn, t, cols[i].ColumnType)}
		}
		idx[0] = i
	}
	if s.UsesTimestamp() {
		i := find(s.TsColumn)
		if i < 0 {
			return nil, idx, plugin.FieldError{Name: jdbc.KeyTimestampColumn, Message: fmt.Sprintf("table %s has no column %q", t, s.TsColumn)}
		}
		if !mapped[i].IsTimestamp() {
			return nil, idx, plugin.FieldError{Name: jdbc.KeyTimestampColumn, Message: fmt.Sprintf("column %q of table %s is %s; the timestamp column must be datetime or timestamp", s.TsColumn, t, cols[i].ColumnType)}
		}
		idx[1] = i
	}
	return mapped, idx, nil
}
