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
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Table source configuration keys (besides each database's connection
// keys), Kafka's JDBC source's names.
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

// SourceDB describes a database's table source for the shared
// configuration's documentation and checks.
type SourceDB struct {
	// Group is the config group ("PostgreSQL table source").
	Group string
	// TableDoc says how tables are written in table.whitelist.
	TableDoc string
	// PatternScope says which tables table.pattern is matched against.
	PatternScope string
	// IncTypes and TsTypes list the column types the mode columns may have.
	IncTypes, TsTypes string
	// ParseTable checks one table.whitelist entry.
	ParseTable func(string) error
}

// SourceFields are the table source's config fields (without the
// connection's).
func SourceFields(db SourceDB) []plugin.ConfigField {
	group := db.Group
	return []plugin.ConfigField{
		{Name: KeyTableWhitelist, Type: plugin.TypeList, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Tables", Doc: "Tables to copy, comma-separated: " + db.TableDoc + ". Set this or table.pattern."},
		{Name: KeyTablePattern, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Table pattern", Validator: plugin.ValidRegexp(),
			Doc: "Regular expression matched against " + db.PatternScope + ". Set this or table.whitelist."},
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
			DisplayName: "Incrementing column", Doc: "Strictly increasing integer column (" + db.IncTypes + ") of every table; required in the incrementing modes."},
		{Name: KeyTimestampColumn, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "Timestamp column", Doc: db.TsTypes + " column of every table, set on insert and update; required in the timestamp modes."},
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
	}
}

// SourceSettings is a parsed table source configuration.
type SourceSettings struct {
	Raw          map[string]string
	Whitelist    []string
	Pattern      *regexp.Regexp
	TablePoll    time.Duration
	Mode         string
	IncColumn    string
	TsColumn     string
	TsDelay      time.Duration
	BatchMaxRows int
	PollInterval time.Duration
	TopicPrefix  string
}

// ParseSource reads the table source's settings from a configuration
// parsed with SourceFields, and checks the rules between them.
func ParseSource(db SourceDB, cfg plugin.Config, raw map[string]string) (*SourceSettings, error) {
	s := &SourceSettings{
		Raw:          raw,
		Whitelist:    cfg.List(KeyTableWhitelist),
		TablePoll:    time.Duration(cfg.Long(KeyTablePollIntervalMs)) * time.Millisecond,
		Mode:         strings.ToLower(cfg.String(KeyMode)),
		IncColumn:    cfg.String(KeyIncrementingColumn),
		TsColumn:     cfg.String(KeyTimestampColumn),
		TsDelay:      time.Duration(cfg.Long(KeyTimestampDelayMs)) * time.Millisecond,
		BatchMaxRows: cfg.Int(KeyBatchMaxRows),
		PollInterval: time.Duration(cfg.Long(KeyPollIntervalMs)) * time.Millisecond,
		TopicPrefix:  cfg.String(KeyTopicPrefix),
	}
	if p := strings.TrimSpace(cfg.String(KeyTablePattern)); p != "" {
		s.Pattern = regexp.MustCompile("^(?:" + p + ")$") // the spec validated it
	}
	if errs := s.check(db); len(errs) > 0 {
		return nil, &plugin.ConfigError{Fields: errs}
	}
	return s, nil
}

// check enforces the rules between fields.
func (s *SourceSettings) check(db SourceDB) []plugin.FieldError {
	var errs []plugin.FieldError
	switch {
	case len(s.Whitelist) > 0 && s.Pattern != nil:
		msg := "table.whitelist and table.pattern are mutually exclusive: set only one of them"
		errs = append(errs, plugin.FieldError{Name: KeyTableWhitelist, Message: msg}, plugin.FieldError{Name: KeyTablePattern, Message: msg})
	case len(s.Whitelist) == 0 && s.Pattern == nil:
		msg := "set table.whitelist (a list of tables) or table.pattern (a regular expression)"
		errs = append(errs, plugin.FieldError{Name: KeyTableWhitelist, Message: msg}, plugin.FieldError{Name: KeyTablePattern, Message: msg})
	}
	for _, w := range s.Whitelist {
		if err := db.ParseTable(w); err != nil {
			errs = append(errs, plugin.FieldError{Name: KeyTableWhitelist, Message: err.Error()})
		}
	}
	if s.UsesIncrementing() && s.IncColumn == "" {
		errs = append(errs, plugin.FieldError{Name: KeyIncrementingColumn, Message: fmt.Sprintf("mode %s needs incrementing.column.name: a strictly increasing integer column", s.Mode)})
	}
	if s.UsesTimestamp() && s.TsColumn == "" {
		errs = append(errs, plugin.FieldError{Name: KeyTimestampColumn, Message: fmt.Sprintf("mode %s needs timestamp.column.name: a timestamp column set on insert and update", s.Mode)})
	}
	return errs
}

// UsesIncrementing reports whether the mode tracks an incrementing column.
func (s *SourceSettings) UsesIncrementing() bool { return UsesIncrementing(s.Mode) }

// UsesTimestamp reports whether the mode tracks a timestamp column.
func (s *SourceSettings) UsesTimestamp() bool { return UsesTimestamp(s.Mode) }

// Matches reports whether the pattern matches a table's name or its
// qualified name.
func (s *SourceSettings) Matches(name, qualified string) bool {
	return s.Pattern == nil || s.Pattern.MatchString(name) || s.Pattern.MatchString(qualified)
}

// ExactlyOnceSupport: the incrementing and timestamp modes resume from
// their stored offsets and read the same rows again; bulk mode re-reads
// whole tables and has no position to resume from.
func ExactlyOnceSupport(config map[string]string) plugin.ExactlyOnceSupport {
	if strings.EqualFold(strings.TrimSpace(config[KeyMode]), ModeBulk) {
		return plugin.ExactlyOnceUnsupported
	}
	return plugin.ExactlyOnceSupported
}

// TaskConfigs renders one task config per group of tables: the connector's
// config with KeyTaskTables set to the group's [schema, table] pairs.
func TaskConfigs(raw map[string]string, groups [][][2]string) ([]map[string]string, error) {
	out := make([]map[string]string, 0, len(groups))
	for _, g := range groups {
		b, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("encoding task tables: %w", err)
		}
		cfg := make(map[string]string, len(raw)+1)
		for k, v := range raw {
			cfg[k] = v
		}
		cfg[KeyTaskTables] = string(b)
		out = append(out, cfg)
	}
	return out, nil
}

// TaskTables reads KeyTaskTables from a task config: nil when absent (a
// standalone task copies every table of the connector).
func TaskTables(config map[string]string) ([][2]string, error) {
	raw := config[KeyTaskTables]
	if raw == "" {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal([]byte(raw), &pairs); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyTaskTables, err)
	}
	return pairs, nil
}
