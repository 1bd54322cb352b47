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

// Package cdc holds PostgresCDCSource, a log-based change data capture
// source on PostgreSQL logical replication (the pgoutput plugin): it reads
// the changes of the tables of a publication from a replication slot, with
// an optional initial snapshot taken consistently with the slot, and turns
// every insert, update, delete and truncate into a record with before and
// after images (a delete is followed by a tombstone, unless
// tombstones.on.delete=false). The WAL position is the source offset; the server learns
// that it may recycle WAL (the slot's confirmed_flush_lsn) only after Kafka
// acknowledged the records and their offsets were stored. A replication
// slot has one reader, so the connector always runs exactly one task.
package cdc

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the CDC source.
const Version = "0.1.0"

// Class is the connector class; "PostgresCDCSource" and
// "PostgresCDCSourceConnector" are derived aliases.
const Class = "dev.conveyor.connect.postgres.PostgresCDCSourceConnector"

// Configuration keys of the CDC source (the connection.* keys are shared
// with the other PostgreSQL connectors).
const (
	KeyPublicationName        = "publication.name"
	KeyPublicationAutocreate  = "publication.autocreate"
	KeySlotName               = "slot.name"
	KeyTableIncludeList       = "table.include.list"
	KeyTopicPrefix            = "topic.prefix"
	KeySnapshotMode           = "snapshot.mode"
	KeyBatchSize              = "batch.size"
	KeyPollIntervalMs         = "poll.interval.ms"
	KeyStatusIntervalMs       = "status.interval.ms"
	KeyUnavailablePlaceholder = "unavailable.value.placeholder"
	KeyTombstonesOnDelete     = "tombstones.on.delete"
)

// DefaultUnavailablePlaceholder marks a value the server did not send.
const DefaultUnavailablePlaceholder = "__conveyor_unavailable_value"

// Snapshot modes.
const (
	SnapshotInitial = "initial"
	SnapshotNever   = "never"
)

const group = "PostgreSQL CDC"

// identifier matches the names PostgreSQL accepts unquoted for slots:
// lower-case letters, digits and underscores.
var slotName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

func validSlotName() plugin.Validator {
	return func(v any) error {
		s, _ := v.(string)
		if !slotName.MatchString(s) {
			return fmt.Errorf("a replication slot name has 1 to 63 lower-case letters, digits and underscores")
		}
		return nil
	}
}

func validTableList() plugin.Validator {
	return func(v any) error {
		l, _ := v.([]string)
		for _, t := range l {
			if _, err := parseTable(t); err != nil {
				return err
			}
		}
		return nil
	}
}

// parseTable parses "schema.table" (or "table", in schema public; quote
// names with dots or capitals as SQL does).
func parseTable(s string) (pgcommon.Table, error) {
	t, err := pgcommon.ParseTable(s)
	if err != nil {
		return t, err
	}
	if t.Schema == "" {
		t.Schema = "public"
	}
	return t, nil
}

// Spec returns the CDC source's own configuration fields (connection
// fields first).
func Spec() plugin.ConfigSpec {
	fields := pgcommon.ConnectionFields("")
	fields = append(fields,
		plugin.ConfigField{Name: KeyTopicPrefix, Type: plugin.TypeString, Required: true, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			Validator: plugin.NonEmpty(),
			Doc:       "Prefix of the topic names: the changes of table schema.table go to topic.prefix + schema.table (with topic.prefix=pg., table public.orders goes to pg.public.orders), as the table source names its topics."},
		plugin.ConfigField{Name: KeySlotName, Type: plugin.TypeString, Default: "conveyor", Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			Validator: validSlotName(),
			Doc:       "Logical replication slot to read from (plugin pgoutput); created when absent. One slot has one reader: give each connector its own."},
		plugin.ConfigField{Name: KeyPublicationName, Type: plugin.TypeString, Default: "conveyor", Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			Validator: plugin.NonEmpty(),
			Doc:       "Publication whose tables are captured."},
		plugin.ConfigField{Name: KeyPublicationAutocreate, Type: plugin.TypeBoolean, Default: "true", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			Doc: "Create the publication when absent, for the tables of table.include.list (all tables when the list is empty, which needs a superuser), and add listed tables it lacks."},
		plugin.ConfigField{Name: KeyTableIncludeList, Type: plugin.TypeList, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			Validator: validTableList(),
			Doc: "Tables to capture, as schema.table (schema public when omitted), comma-separated; empty means every table of the publication. " +
				"Updates and deletes carry the full before image only for tables with REPLICA IDENTITY FULL; otherwise the before image holds the key columns (or is absent)."},
		plugin.ConfigField{Name: KeySnapshotMode, Type: plugin.TypeString, Default: SnapshotInitial, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			Validator: plugin.OneOf(SnapshotInitial, SnapshotNever), Recommended: []string{SnapshotInitial, SnapshotNever},
			Doc: "initial: when the connector has no stored position, first emit every existing row (op r), read in the snapshot exported when the slot is created, then stream from the slot's consistent point; never: only stream changes."},
		plugin.ConfigField{Name: KeyBatchSize, Type: plugin.TypeInt, Default: "2048", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			Validator: plugin.AtLeast(1), Max: 100_000, Doc: "Maximum records returned by one poll."},
		plugin.ConfigField{Name: KeyPollIntervalMs, Type: plugin.TypeLong, Default: "500", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			Validator: plugin.AtLeast(1), Max: 60000, Doc: "How long a poll waits for changes before returning none, in ms."},
		plugin.ConfigField{Name: KeyStatusIntervalMs, Type: plugin.TypeLong, Default: "10000", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			Validator: plugin.AtLeast(100), Max: 3600000,
			Doc: "How often the task sends its confirmed position to the server even when nothing changed (keep it well below the server's wal_sender_timeout), in ms."},
		plugin.ConfigField{Name: KeyUnavailablePlaceholder, Type: plugin.TypeString, Default: DefaultUnavailablePlaceholder, Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthMedium,
			Doc: "Stands for a large (TOASTed) value that an UPDATE left unchanged and the server therefore did not send, on a table without REPLICA IDENTITY FULL: " +
				"text-like columns get this text and bytea columns its bytes in the after image, so that a consumer can tell \"unchanged, not sent\" from NULL; " +
				"columns of other types stay NULL. With REPLICA IDENTITY FULL the value is taken from the before image instead."},
		plugin.ConfigField{Name: KeyTombstonesOnDelete, Type: plugin.TypeBoolean, Default: "true", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			Doc: "Follow every delete event (op d, also the delete half of an UPDATE that changes the primary key) with a tombstone: " +
				"a record with the same key and a null value, so that Kafka log compaction can drop the key and keyed sinks " +
				"(the PostgreSQL sink with delete.enabled=true) delete the row. Rows of a table without a primary key have no key, " +
				"so their deletes get no tombstone (it would delete nothing, and a compacted topic refuses records without a key). " +
				"false: deletes are the d event only."},
	)
	return plugin.ConfigSpec{Fields: fields}
}

// Plugin returns the PostgresCDCSource plugin.
func Plugin() plugin.Plugin {
	return plugin.Plugin{
		Class:   Class,
		Kind:    plugin.KindSource,
		Version: Version,
		Doc: "Streams inserts, updates, deletes and truncates of PostgreSQL tables from logical replication (pgoutput), " +
			"with an optional consistent initial snapshot; always one task (a replication slot has one reader).",
		Spec:          Spec(),
		NewConnector:  func() plugin.Connector { return newConnector() },
		NewSourceTask: func() plugin.SourceTask { return &Task{} },
	}
}

// settings is a parsed configuration.
type settings struct {
	conn           conn
	topicPrefix    string
	slot           string
	publication    string
	autocreate     bool
	tables         []pgcommon.Table // nil: every table of the publication
	snapshot       string
	batchSize      int
	pollInterval   time.Duration
	statusInterval time.Duration
	unavailable    string // unavailable.value.placeholder
	tombstones     bool   // tombstones.on.delete
}

func parseSettings(config map[string]string) (settings, error) {
	cfg, err := Spec().Parse(config)
	if err != nil {
		return settings{}, err
	}
	s := settings{
		conn:           newConn(config),
		topicPrefix:    cfg.String(KeyTopicPrefix),
		slot:           cfg.String(KeySlotName),
		publication:    cfg.String(KeyPublicationName),
		autocreate:     cfg.Bool(KeyPublicationAutocreate),
		snapshot:       strings.ToLower(cfg.String(KeySnapshotMode)),
		batchSize:      cfg.Int(KeyBatchSize),
		pollInterval:   time.Duration(cfg.Long(KeyPollIntervalMs)) * time.Millisecond,
		statusInterval: time.Duration(cfg.Long(KeyStatusIntervalMs)) * time.Millisecond,
		unavailable:    cfg.String(KeyUnavailablePlaceholder),
		tombstones:     cfg.Bool(KeyTombstonesOnDelete),
	}
	for _, item := range cfg.List(KeyTableIncludeList) {
		t, err := parseTable(item)
		if err != nil {
			return settings{}, fmt.Errorf("%s: %w", KeyTableIncludeList, err)
		}
		s.tables = append(s.tables, t)
	}
	return s, nil
}

// includes reports whether a table is captured.
func (s settings) includes(schema, table string) bool {
	if len(s.tables) == 0 {
		return true
	}
	for _, t := range s.tables {
		if t.Schema == schema && t.Name == table {
			return true
		}
	}
	return false
}

// topic returns the topic of a table's changes.
func (s settings) topic(schema, table string) string {
	return s.topicPrefix + schema + "." + table
}
