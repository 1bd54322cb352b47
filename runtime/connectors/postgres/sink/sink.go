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

// Package sink holds PostgresSink, a JDBC-sink-like connector that writes
// records into PostgreSQL tables named after their topics: plain inserts,
// or upserts by primary key (so redelivered records leave exactly one row
// each), deletes for tombstones, optional table creation from the record
// schema, and one transaction per batch.
package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the sink.
const Version = "0.1.0"

// Class is the connector class name.
const Class = "dev.conveyor.connect.postgres.PostgresSinkConnector"

// Configuration keys (besides pgcommon's connection keys and topics): the
// JDBC-style sinks' shared ones.
const (
	KeyInsertMode      = jdbc.KeyInsertMode
	KeyPKMode          = jdbc.KeyPKMode
	KeyPKFields        = jdbc.KeyPKFields
	KeyTableNameFormat = jdbc.KeyTableNameFormat
	KeyAutoCreate      = jdbc.KeyAutoCreate
	KeyAutoEvolve      = jdbc.KeyAutoEvolve
	KeyDeleteEnabled   = jdbc.KeyDeleteEnabled
	KeyBatchSize       = jdbc.KeyBatchSize
	// KeyUpsertVersionColumn names a BIGINT column that holds the offset
	// of the record a row was last written from; an upsert then changes a
	// row only when its record's offset is above the stored one, so an
	// older record delivered after a newer one (share mode, KIP-932) never
	// overwrites it. Offsets order the records of one partition, so the
	// records of one key must share a partition (Kafka's default
	// partitioner keys them so).
	KeyUpsertVersionColumn = "upsert.version.column"
)

// Insert modes.
const (
	InsertModeInsert = jdbc.InsertModeInsert
	InsertModeUpsert = jdbc.InsertModeUpsert
)

// Primary key modes (Kafka's JDBC sink names).
const (
	PKModeNone        = jdbc.PKModeNone
	PKModeKafka       = jdbc.PKModeKafka
	PKModeRecordKey   = jdbc.PKModeRecordKey
	PKModeRecordValue = jdbc.PKModeRecordValue
)

// Column names used when the key or the Kafka coordinates become columns.
const (
	DefaultKeyColumn = jdbc.DefaultKeyColumn
	TopicColumn      = jdbc.TopicColumn
	PartitionColumn  = jdbc.PartitionColumn
	OffsetColumn     = jdbc.OffsetColumn
)

const group = "PostgreSQL sink"

// Plugin returns the PostgresSink plugin.
func Plugin() plugin.Plugin {
	fields := pgcommon.ConnectionFields("")
	fields = append(fields, []plugin.ConfigField{
		{Name: KeyInsertMode, Type: plugin.TypeString, Default: InsertModeInsert, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Insert mode", Validator: plugin.OneOf(InsertModeInsert, InsertModeUpsert), Recommended: []string{InsertModeInsert, InsertModeUpsert},
			Doc: "insert: plain INSERTs (a redelivered record fails on a primary key or adds a row); upsert: INSERT ... ON CONFLICT (primary key) DO UPDATE (a batch whose keys are all new is copied in with COPY), so redelivery leaves exactly one row per key."},
		{Name: KeyPKMode, Type: plugin.TypeString, Default: PKModeNone, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Primary key mode", Validator: plugin.OneOf(PKModeNone, PKModeKafka, PKModeRecordKey, PKModeRecordValue),
			Recommended: []string{PKModeNone, PKModeKafka, PKModeRecordKey, PKModeRecordValue}, Dependents: []string{KeyPKFields},
			Doc: "Where the primary key comes from: none; kafka (__connect_topic, __connect_partition, __connect_offset); record_key (the key: a primitive becomes one column, a struct its fields); record_value (fields of the value)."},
		{Name: KeyPKFields, Type: plugin.TypeList, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthLong,
			DisplayName: "Primary key fields",
			Doc:         "record_key: the column name of a primitive key (default __connect_key) or the key fields to use (default all); record_value: the value fields forming the key (default all)."},
		{Name: KeyTableNameFormat, Type: plugin.TypeString, Default: "${topic}", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthLong,
			DisplayName: "Table name format", Validator: plugin.NonEmpty(),
			Doc: "Destination table, with ${topic} replaced by the record's topic; table or schema.table (double quotes keep dots in a name)."},
		{Name: KeyAutoCreate, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Auto-create tables", Doc: "Create a missing table from the first record's key and value schemas (records need schemas)."},
		{Name: KeyAutoEvolve, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Auto-evolve tables", Doc: "Add to the table, as columns that allow NULL, the value fields it lacks (a source's schema gained a field); a required field without a default is refused. Columns are never dropped or changed."},
		{Name: KeyDeleteEnabled, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Delete on tombstones", Doc: "Delete the row of a record with a null value (a tombstone); needs pk.mode=record_key. When false, tombstones are skipped."},
		{Name: KeyUpsertVersionColumn, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "Upsert version column",
			Doc:         "insert.mode=upsert only: a BIGINT column (auto.create adds it) that stores the Kafka offset of the record each row was last written from; an upsert changes a row only when its record's offset is higher, so an older record delivered after a newer one (consumer.group.type=share) never overwrites it. The records of one key must share a partition (keyed records do)."},
		{Name: KeyBatchSize, Type: plugin.TypeInt, Default: "3000", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Batch size", Validator: plugin.AtLeast(1), Max: 100_000,
			Doc: "Most records one transaction writes. Records are written in the background as they come, one transaction at a time: while one commits, the next records are buffered, and the next transaction takes them all (up to batch.size), so batches grow with the load and a trickle of records is committed within about one transaction's time. Put waits while batch.size records are buffered."},
	}...)
	fields = append(fields, exactlyOnceFields()...)
	return plugin.Plugin{
		Class:        Class,
		Kind:         plugin.KindSink,
		Version:      Version,
		Doc:          "Writes records into PostgreSQL tables named after their topics: inserts or upserts by primary key, tombstones as deletes, batched in transactions.",
		Spec:         plugin.ConfigSpec{Fields: fields},
		NewConnector: newConnector,
		NewSinkTask:  func() plugin.SinkTask { return &Task{} },
	}
}

type settings struct {
	raw           map[string]string
	insertMode    string
	pkMode        string
	pkFields      []string
	tableFormat   string
	autoCreate    bool
	autoEvolve    bool
	deleteEnabled bool
	batchSize     int
	versionColumn string // upsert.version.column; "" without the guard
	// exactly.once: offsets in offsetsTable, keyed by connector
	exactlyOnce  bool
	offsetsTable pgcommon.Table
	connector    string
}

func parse(config map[string]string) (*settings, error) {
	cfg, err := Plugin().Spec.Parse(config)
	if err != nil {
		return nil, err
	}
	ss, errs := jdbc.ParseSink(cfg, config)
	s := &settings{
		raw:           config,
		insertMode:    ss.InsertMode,
		pkMode:        ss.PKMode,
		pkFields:      ss.PKFields,
		tableFormat:   ss.TableFormat,
		autoCreate:    ss.AutoCreate,
		autoEvolve:    ss.AutoEvolve,
		deleteEnabled: ss.DeleteEnabled,
		batchSize:     ss.BatchSize,
		exactlyOnce:   ss.ExactlyOnce,
		connector:     ss.Connector,
		versionColumn: strings.TrimSpace(cfg.String(KeyUpsertVersionColumn)),
	}
	if s.versionColumn != "" && s.insertMode != InsertModeUpsert {
		errs = append(errs, plugin.FieldError{Name: KeyUpsertVersionColumn, Message: "upsert.version.column guards upserts: set insert.mode=upsert, or remove upsert.version.column"})
	}
	if s.exactlyOnce {
		if s.offsetsTable, err = pgcommon.ParseTable(cfg.String(KeyExactlyOnceOffsets)); err != nil {
			errs = append(errs, plugin.FieldError{Name: KeyExactlyOnceOffsets, Message: err.Error()})
		}
	}
	if _, err := s.table("t"); err != nil {
		errs = append(errs, plugin.FieldError{Name: KeyTableNameFormat, Message: err.Error()})
	}
	if len(errs) > 0 {
		return nil, &plugin.ConfigError{Fields: errs}
	}
	return s, nil
}

// table returns the destination table of a topic.
func (s *settings) table(topic string) (pgcommon.Table, error) {
	name := strings.ReplaceAll(s.tableFormat, "${topic}", topic)
	t, err := pgcommon.ParseTable(name)
	if err != nil && !strings.Contains(s.tableFormat, `"`) {
		// A topic with dots or odd characters: take the whole name as one
		// identifier rather than failing.
		return pgcommon.Table{Name: name}, nil
	}
	return t, err
}

// Connector is the connector: its tasks share the topics' partitions,
// each with the whole configuration; it also follows an operator's
// changes of the offsets stored with exactly.once (AlterSinkOffsets).
type Connector struct{ plugin.PartitionSinkConnector }

// ToleratesShareGroup answers for the configuration: plain inserts without
// a primary key (a record delivered again adds a row, as at-least-once
// delivery can anyway), and upserts with upsert.version.column (an older
// record never overwrites a newer one). Refused: inserts with a primary
// key (a redelivered record fails on it), upserts without the guard,
// delete.enabled (a delete leaves no version behind, so an older record
// delivered after it would bring the row back) and exactly.once (it
// stores one offset per partition, which a share group's
// out-of-order acknowledgements have not).
func (c *Connector) ToleratesShareGroup(config map[string]string) (bool, string) {
	s, err := parse(config)
	if err != nil {
		return false, "fix the sink's other settings first: " + err.Error()
	}
	switch {
	case s.exactlyOnce:
		return false, "exactly.once=true stores one offset per partition, which share-group delivery has not; set exactly.once=false"
	case s.insertMode == InsertModeInsert && s.pkMode != PKModeNone:
		return false, "insert.mode=insert with a primary key fails on a record delivered again; use insert.mode=upsert with upsert.version.column, or pk.mode=none"
	case s.insertMode == InsertModeUpsert && s.versionColumn == "":
		return false, "insert.mode=upsert without upsert.version.column lets an older record delivered after a newer one overwrite it; set upsert.version.column"
	case s.deleteEnabled:
		return false, "delete.enabled=true: a deleted row keeps no version, so an older record delivered after the delete would bring it back; set delete.enabled=false"
	}
	return true, ""
}

func newConnector() plugin.Connector {
	return &Connector{plugin.PartitionSinkConnector{Fallback: KeyInsertMode, Parse: func(c map[string]string) error { _, err := parse(c); return err }, Check: check}}
}

// check checks the connection, and for listed topics that each table
// exists (or auto.create is on) and the privileges the modes need.
func check(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err != nil {
		return pgcommon.FieldErrors(err, KeyInsertMode)
	}
	conn, errs := pgcommon.CheckConnection(ctx, config)
	if len(errs) > 0 {
		return errs
	}
	defer conn.Close(context.Background())
	var user string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil {
		return []plugin.FieldError{{Name: pgcommon.KeyConnectionURL, Message: fmt.Sprintf("querying the database: %v", err)}}
	}
	privs := []string{"INSERT"}
	if s.insertMode == InsertModeUpsert {
		privs = append(privs, "UPDATE")
	}
	if s.deleteEnabled {
		privs = append(privs, "DELETE")
	}
	for _, topic := range plugin.SplitList(config[plugin.KeyTopics]) {
		t, err := s.table(topic)
		if err != nil {
			errs = append(errs, plugin.FieldError{Name: KeyTableNameFormat, Message: fmt.Sprintf("topic %s: %v", topic, err)})
			continue
		}
		rt, err := pgcommon.Resolve(ctx, conn, t)
		if errors.Is(err, pgcommon.ErrNoTable) {
			if !s.autoCreate {
				errs = append(errs, plugin.FieldError{Name: KeyAutoCreate, Message: fmt.Sprintf("table %s for topic %s does not exist: create it, or set auto.create=true", t, topic)})
			}
			continue
		}
		if err != nil {
			errs = append(errs, plugin.FieldError{Name: KeyTableNameFormat, Message: err.Error()})
			continue
		}
		for _, p := range privs {
			var ok bool
			if err := conn.QueryRow(ctx, "SELECT has_table_privilege(to_regclass($1), $2)", rt.Quoted(), p).Scan(&ok); err != nil {
				errs = append(errs, plugin.FieldError{Name: KeyTableNameFormat, Message: fmt.Sprintf("checking privileges on %s: %v", rt, err)})
				break
			}
			if !ok {
				errs = append(errs, plugin.FieldError{Name: KeyTableNameFormat, Message: fmt.Sprintf("user %q lacks the %s privilege on table %s (needed by insert.mode=%s, delete.enabled=%t): GRANT %s ON %s TO %s",
					user, p, rt, s.insertMode, s.deleteEnabled, p, rt.Quoted(), pgcommon.QuoteIdent(user))})
			}
		}
	}
	return errs
}
