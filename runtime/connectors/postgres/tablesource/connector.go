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
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the table source.
const Version = "0.1.0"

// Class is the connector class name.
const Class = "dev.conveyor.connect.postgres.PostgresTableSourceConnector"

// Configuration keys (besides pgcommon's connection keys).
const (
	KeyTableWhitelist      = "table.whitelist"
	KeyTablePattern        = "table.pattern"
	KeyTablePollIntervalMs = "table.poll.interval.ms"
	KeyMode                = "mode"
	KeyIncrementingColumn  = "incrementing.column.name"
	KeyTimestampColumn     = "timestamp.column.name"
	KeyTimestampDelayMs    = "timestamp.delay.interval.ms"
	KeyBatchMaxRows        = "batch.max.rows"
	KeyPollIntervalMs      = "poll.interval.ms"
	KeyTopicPrefix         = "topic.prefix"
	// KeyTaskTables is set by the connector in each task config: the
	// task's tables as a JSON array of [schema, table] pairs.
	KeyTaskTables = "task.tables"
)

// Modes.
const (
	ModeBulk                  = "bulk"
	ModeIncrementing          = "incrementing"
	ModeTimestamp             = "timestamp"
	ModeTimestampIncrementing = "timestamp+incrementing"
)

// Source partition and offset keys (Kafka's JDBC source uses the same
// offset names).
const (
	PartitionTable      = "table"           // schema.table
	OffsetIncrementing  = "incrementing"    // last incrementing value sent
	OffsetTimestamp     = "timestamp"       // last timestamp sent, ms since the epoch
	OffsetTimestampNano = "timestamp_nanos" // its nanoseconds within the second
)

const group = "PostgreSQL table source"

// Plugin returns the PostgresTableSource plugin.
func Plugin() plugin.Plugin {
	fields := pgcommon.ConnectionFields("2")
	fields = append(fields, []plugin.ConfigField{
		{Name: KeyTableWhitelist, Type: plugin.TypeList, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Tables", Doc: "Tables to copy, comma-separated: table or schema.table (double-quote names with capitals, dots or commas). Set this or table.pattern."},
		{Name: KeyTablePattern, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Table pattern", Validator: plugin.ValidRegexp(),
			Doc: "Regular expression matched against table and schema.table of every readable table outside the system schemas. Set this or table.whitelist."},
		{Name: KeyTablePollIntervalMs, Type: plugin.TypeLong, Default: "60000", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Table check interval (ms)", Validator: plugin.AtLeast(0), Max: 86_400_000,
			Doc: "How often to look for added or removed tables (0 = never); a change reassigns tables to tasks."},
		{Name: KeyMode, Type: plugin.TypeString, Required: true, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "Mode", Validator: plugin.OneOf(ModeBulk, ModeIncrementing, ModeTimestamp, ModeTimestampIncrementing),
			Recommended: []string{ModeBulk, ModeIncrementing, ModeTimestamp, ModeTimestampIncrementing},
			Dependents:  []string{KeyIncrementingColumn, KeyTimestampColumn},
			Doc: "bulk: the whole table every poll interval; incrementing: rows whose incrementing column exceeds the last one sent (new rows); " +
				"timestamp: rows whose timestamp column is newer than the last one sent (new and updated rows); timestamp+incrementing: both, ordered by (timestamp, incrementing)."},
		{Name: KeyIncrementingColumn, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "Incrementing column", Doc: "Strictly increasing integer column (smallint, integer, bigint) of every table; required in the incrementing modes."},
		{Name: KeyTimestampColumn, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "Timestamp column", Doc: "timestamp or timestamptz column of every table, set on insert and update; required in the timestamp modes."},
		{Name: KeyTimestampDelayMs, Type: plugin.TypeLong, Default: "0", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Timestamp delay (ms)", Validator: plugin.AtLeast(0), Max: 86_400_000,
			Doc: "Rows are read only once their timestamp is this much older than the database clock, so transactions still in flight commit first."},
		{Name: KeyBatchMaxRows, Type: plugin.TypeInt, Default: "1000", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Max rows per batch", Validator: plugin.AtLeast(1), Max: 100_000, Doc: "Maximum rows returned by one poll."},
		{Name: KeyPollIntervalMs, Type: plugin.TypeLong, Default: "5000", Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Poll interval (ms)", Validator: plugin.AtLeast(1), Max: 86_400_000,
			Doc: "How long to wait before reading a table again once it was read to its end."},
		{Name: KeyTopicPrefix, Type: plugin.TypeString, Required: true, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "Topic prefix", Doc: "Prefix of the topic names: a table's rows go to topic.prefix + table name."},
	}...)
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
	raw          map[string]string
	whitelist    []string
	pattern      *regexp.Regexp
	tablePoll    time.Duration
	mode         string
	incColumn    string
	tsColumn     string
	tsDelay      time.Duration
	batchMaxRows int
	pollInterval time.Duration
	topicPrefix  string
	poolMax      int
}

func parse(config map[string]string) (*settings, error) {
	cfg, err := Plugin().Spec.Parse(config)
	if err != nil {
		return nil, err
	}
	s := &settings{
		raw:          config,
		whitelist:    cfg.List(KeyTableWhitelist),
		tablePoll:    time.Duration(cfg.Long(KeyTablePollIntervalMs)) * time.Millisecond,
		mode:         strings.ToLower(cfg.String(KeyMode)),
		incColumn:    cfg.String(KeyIncrementingColumn),
		tsColumn:     cfg.String(KeyTimestampColumn),
		tsDelay:      time.Duration(cfg.Long(KeyTimestampDelayMs)) * time.Millisecond,
		batchMaxRows: cfg.Int(KeyBatchMaxRows),
		pollInterval: time.Duration(cfg.Long(KeyPollIntervalMs)) * time.Millisecond,
		topicPrefix:  cfg.String(KeyTopicPrefix),
		poolMax:      cfg.Int(pgcommon.KeyPoolMax),
	}
	if p := strings.TrimSpace(cfg.String(KeyTablePattern)); p != "" {
		s.pattern = regexp.MustCompile("^(?:" + p + ")$") // the spec validated it
	}
	if errs := s.check(); len(errs) > 0 {
		return nil, &plugin.ConfigError{Fields: errs}
	}
	return s, nil
}

// check enforces the rules between fields.
func (s *settings) check() []plugin.FieldError {
	var errs []plugin.FieldError
	switch {
	case len(s.whitelist) > 0 && s.pattern != nil:
		msg := "table.whitelist and table.pattern are mutually exclusive: set only one of them"
		errs = append(errs, plugin.FieldError{Name: KeyTableWhitelist, Message: msg}, plugin.FieldError{Name: KeyTablePattern, Message: msg})
	case len(s.whitelist) == 0 && s.pattern == nil:
		msg := "set table.whitelist (a list of tables) or table.pattern (a regular expression)"
		errs = append(errs, plugin.FieldError{Name: KeyTableWhitelist, Message: msg}, plugin.FieldError{Name: KeyTablePattern, Message: msg})
	}
	for _, w := range s.whitelist {
		if _, err := pgcommon.ParseTable(w); err != nil {
			errs = append(errs, plugin.FieldError{Name: KeyTableWhitelist, Message: err.Error()})
		}
	}
	if s.usesIncrementing() && s.incColumn == "" {
		errs = append(errs, plugin.FieldError{Name: KeyIncrementingColumn, Message: fmt.Sprintf("mode %s needs incrementing.column.name: a strictly increasing integer column", s.mode)})
	}
	if s.usesTimestamp() && s.tsColumn == "" {
		errs = append(errs, plugin.FieldError{Name: KeyTimestampColumn, Message: fmt.Sprintf("mode %s needs timestamp.column.name: a timestamp column set on insert and update", s.mode)})
	}
	return errs
}

func (s *settings) usesIncrementing() bool {
	return s.mode == ModeIncrementing || s.mode == ModeTimestampIncrementing
}

func (s *settings) usesTimestamp() bool {
	return s.mode == ModeTimestamp || s.mode == ModeTimestampIncrementing
}

// Connector lists the tables and spreads them over tasks.
type Connector struct {
	s      *settings
	cc     plugin.ConnectorContext
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	tables []TableInfo // from the last NaturalLimit
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
	c.s, c.cc = s, cc
	if s.tablePoll > 0 {
		wctx, cancel := context.WithCancel(ctx)
		c.cancel = cancel
		c.wg.Add(1)
		cc.Go(func() error {
			defer c.wg.Done()
			c.watch(wctx)
			return nil
		})
	}
	return nil
}

// list reads the current tables with their row estimates.
func (c *Connector) list(ctx context.Context) ([]TableInfo, error) {
	conn, err := pgcommon.Connect(ctx, c.s.raw)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	return ListTables(ctx, conn, c.s.whitelist, c.s.pattern)
}

// watch re-lists the tables every table.poll.interval.ms and asks for task
// reconfiguration when the set of tables changed.
func (c *Connector) watch(ctx context.Context) {
	t := time.NewTicker(c.s.tablePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tables, err := c.list(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.cc.Logger().Warn("listing tables", "error", err)
			}
			continue
		}
		c.mu.Lock()
		changed := !sameTables(c.tables, tables)
		c.mu.Unlock()
		if changed {
			c.cc.Logger().Info("the set of tables changed; requesting task reconfiguration", "tables", len(tables))
			c.cc.RequestTaskReconfiguration()
		}
	}
}

func sameTables(a, b []TableInfo) bool {
	if len(a) != len(b) {
		return false
	}
	names := func(l []TableInfo) []string {
		out := make([]string, len(l))
		for i, t := range l {
			out[i] = t.Table.String()
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}

// NaturalLimit is the number of tables (reason Tables).
func (c *Connector) NaturalLimit(ctx context.Context) (int, plugin.Reason, error) {
	tables, err := c.list(ctx)
	if err != nil {
		return 0, plugin.Tables, err
	}
	c.mu.Lock()
	c.tables = tables
	c.mu.Unlock()
	return len(tables), plugin.Tables, nil
}

// TaskConfigs spreads the tables over min(max, tables) tasks, balancing
// estimated rows (see Assign).
func (c *Connector) TaskConfigs(max int) ([]map[string]string, error) {
	c.mu.Lock()
	tables := c.tables
	c.mu.Unlock()
	groups := Assign(tables, max)
	out := make([]map[string]string, 0, len(groups))
	for _, g := range groups {
		pairs := make([][2]string, len(g))
		for i, t := range g {
			pairs[i] = [2]string{t.Table.Schema, t.Table.Name}
		}
		b, err := json.Marshal(pairs)
		if err != nil {
			return nil, fmt.Errorf("encoding task tables: %w", err)
		}
		cfg := make(map[string]string, len(c.s.raw)+1)
		for k, v := range c.s.raw {
			cfg[k] = v
		}
		cfg[KeyTaskTables] = string(b)
		out = append(out, cfg)
	}
	return out, nil
}

// Stop stops the table watcher.
func (c *Connector) Stop() error {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	return nil
}

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
	n = min(n, len(tables))
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(tables)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Rows != sorted[j].Rows {
			return sorted[i].Rows > sorted[j].Rows
		}
		return sorted[i].Table.String() < sorted[j].Table.String()
	})
	groups := make([][]TableInfo, n)
	load := make([]float64, n)
	for _, t := range sorted {
		best := 0
		for i := 1; i < n; i++ {
			if load[i] < load[best] || (load[i] == load[best] && len(groups[i]) < len(groups[best])) {
				best = i
			}
		}
		groups[best] = append(groups[best], t)
		load[best] += t.Rows
	}
	return groups
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
	if s.pattern != nil {
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
			if err := rows.Scan(&t.Schema, &t.Name); err == nil && (s.pattern.MatchString(t.Name) || s.pattern.MatchString(t.String())) {
				tables = append(tables, t)
			}
		}
		rows.Close()
	} else {
		for _, w := range s.whitelist {
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
	if s.usesIncrementing() {
		i := find(s.incColumn)
		if i < 0 {
			return idx, plugin.FieldError{Name: KeyIncrementingColumn, Message: fmt.Sprintf("table %s has no column %q", t, s.incColumn)}
		}
		if m := pgcommon.MapColumn(cols[i]); !m.IsInteger() {
			return idx, plugin.FieldError{Name: KeyIncrementingColumn, Message: fmt.Sprintf("column %q of table %s is %s; the incrementing column must be smallint, integer or bigint", s.incColumn, t, cols[i].TypeName)}
		}
		idx[0] = i
	}
	if s.usesTimestamp() {
		i := find(s.tsColumn)
		if i < 0 {
			return idx, plugin.FieldError{Name: KeyTimestampColumn, Message: fmt.Sprintf("table %s has no column %q", t, s.tsColumn)}
		}
		if m := pgcommon.MapColumn(cols[i]); m.Kind != pgcommon.KindTimestamp && m.Kind != pgcommon.KindTimestamptz {
			return idx, plugin.FieldError{Name: KeyTimestampColumn, Message: fmt.Sprintf("column %q of table %s is %s; the timestamp column must be timestamp or timestamptz", s.tsColumn, t, cols[i].TypeName)}
		}
		idx[1] = i
	}
	return idx, nil
}

// ExactlyOnceSupport: the incrementing and timestamp modes resume from
// their stored offsets and read the same rows again; bulk mode re-reads
// whole tables and has no position to resume from.
func (c *Connector) ExactlyOnceSupport(config map[string]string) plugin.ExactlyOnceSupport {
	if strings.EqualFold(strings.TrimSpace(config[KeyMode]), ModeBulk) {
		return plugin.ExactlyOnceUnsupported
	}
	return plugin.ExactlyOnceSupported
}
