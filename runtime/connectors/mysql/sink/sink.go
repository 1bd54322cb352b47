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

// Package sink holds MySqlSink, a JDBC-sink-like connector that writes
// records into MySQL or MariaDB tables named after their topics: plain
// inserts, or upserts by primary key (INSERT ... ON DUPLICATE KEY UPDATE,
// so redelivered records leave exactly one row each), deletes for
// tombstones, table creation (auto.create) and new columns (auto.evolve)
// from the record schemas, and one transaction per batch. The
// configuration and the batching are the JDBC-style sinks' shared ones
// (runtime/connectors/jdbc, runtime/plugin/sinkwriter).
package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the sink.
const Version = "0.1.0"

// Class is the connector class name.
const Class = "dev.conveyor.connect.mysql.MySqlSinkConnector"

const group = "MySQL sink"

// Plugin returns the MySqlSink plugin.
func Plugin() plugin.Plugin {
	fields := mycommon.ConnectionFields("")
	fields = append(fields, []plugin.ConfigField{
		{Name: jdbc.KeyInsertMode, Type: plugin.TypeString, Default: jdbc.InsertModeInsert, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Insert mode", Validator: plugin.OneOf(jdbc.InsertModeInsert, jdbc.InsertModeUpsert), Recommended: []string{jdbc.InsertModeInsert, jdbc.InsertModeUpsert},
			Doc: "insert: plain INSERTs (a redelivered record fails on a primary key or adds a row); upsert: INSERT ... ON DUPLICATE KEY UPDATE, so redelivery leaves exactly one row per key."},
		{Name: jdbc.KeyPKMode, Type: plugin.TypeString, Default: jdbc.PKModeNone, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Primary key mode", Validator: plugin.OneOf(jdbc.PKModeNone, jdbc.PKModeKafka, jdbc.PKModeRecordKey, jdbc.PKModeRecordValue),
			Recommended: []string{jdbc.PKModeNone, jdbc.PKModeKafka, jdbc.PKModeRecordKey, jdbc.PKModeRecordValue}, Dependents: []string{jdbc.KeyPKFields},
			Doc: "Where the primary key comes from: none; kafka (__connect_topic, __connect_partition, __connect_offset); record_key (the key: a primitive becomes one column, a struct its fields); record_value (fields of the value)."},
		{Name: jdbc.KeyPKFields, Type: plugin.TypeList, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthLong,
			DisplayName: "Primary key fields",
			Doc:         "record_key: the column name of a primitive key (default __connect_key) or the key fields to use (default all); record_value: the value fields forming the key (default all)."},
		{Name: jdbc.KeyTableNameFormat, Type: plugin.TypeString, Default: "${topic}", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthLong,
			DisplayName: "Table name format", Validator: plugin.NonEmpty(),
			Doc: "Destination table, with ${topic} replaced by the record's topic; table (in the URL's database) or database.table (backticks keep dots in a name)."},
		{Name: jdbc.KeyAutoCreate, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Auto-create tables", Doc: "Create a missing table from the first record's key and value schemas (records need schemas)."},
		{Name: jdbc.KeyAutoEvolve, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Auto-evolve tables", Doc: "Add a column (nullable) for a record field the table lacks; without it such a record fails naming the column."},
		{Name: jdbc.KeyDeleteEnabled, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Delete on tombstones", Doc: "Delete the row of a record with a null value (a tombstone); needs pk.mode=record_key. When false, tombstones are skipped."},
		{Name: jdbc.KeyBatchSize, Type: plugin.TypeInt, Default: "3000", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Batch size", Validator: plugin.AtLeast(1), Max: 100_000,
			Doc: "Most records one transaction writes; records are written in the background as they come, one transaction at a time, and batches grow with the load (as the PostgreSQL sink's)."},
	}...)
	fields = append(fields, jdbc.ExactlyOnceFields(group)...)
	return plugin.Plugin{
		Class:        Class,
		Kind:         plugin.KindSink,
		Version:      Version,
		Doc:          "Writes records into MySQL or MariaDB tables named after their topics: inserts or upserts (ON DUPLICATE KEY UPDATE), tombstones as deletes, batched in transactions.",
		Spec:         plugin.ConfigSpec{Fields: fields},
		NewConnector: newConnector,
		NewSinkTask:  func() plugin.SinkTask { return &Task{} },
	}
}

type settings struct {
	*jdbc.SinkSettings
	// exactly.once: offsets in offsetsTable, keyed by connector
	exactlyOnce  bool
	offsetsTable mycommon.Table
	connector    string
}

func parse(config map[string]string) (*settings, error) {
	cfg, err := Plugin().Spec.Parse(config)
	if err != nil {
		return nil, err
	}
	ss, errs := jdbc.ParseSink(cfg, config)
	s := &settings{SinkSettings: ss, exactlyOnce: ss.ExactlyOnce, connector: ss.Connector}
	if s.exactlyOnce {
		if s.offsetsTable, err = mycommon.ParseTable(cfg.String(jdbc.KeyExactlyOnceOffsets)); err != nil {
			errs = append(errs, plugin.FieldError{Name: jdbc.KeyExactlyOnceOffsets, Message: err.Error()})
		}
	}
	if _, err := s.table("t"); err != nil {
		errs = append(errs, plugin.FieldError{Name: jdbc.KeyTableNameFormat, Message: err.Error()})
	}
	if len(errs) > 0 {
		return nil, &plugin.ConfigError{Fields: errs}
	}
	return s, nil
}

// table returns the destination table of a topic.
func (s *settings) table(topic string) (mycommon.Table, error) {
	name := strings.ReplaceAll(s.TableFormat, "${topic}", topic)
	t, err := mycommon.ParseTable(name)
	if err != nil && !strings.Contains(s.TableFormat, "`") {
		// A topic with dots or odd characters: the whole name as one
		// identifier rather than failing.
		return mycommon.Table{Name: name}, nil
	}
	return t, err
}

func newConnector() plugin.Connector {
	return &Connector{plugin.PartitionSinkConnector{Fallback: jdbc.KeyInsertMode, Parse: func(c map[string]string) error { _, err := parse(c); return err }, Check: check}}
}

// check checks the connection, and for listed topics that each table
// exists or auto.create is on.
func check(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err != nil {
		return plugin.AsFieldErrors(err, jdbc.KeyInsertMode)
	}
	db, errs := mycommon.CheckConnection(ctx, config)
	if len(errs) > 0 {
		return errs
	}
	defer db.Close()
	for _, topic := range plugin.SplitList(config[plugin.KeyTopics]) {
		t, err := s.table(topic)
		if err != nil {
			errs = append(errs, plugin.FieldError{Name: jdbc.KeyTableNameFormat, Message: fmt.Sprintf("topic %s: %v", topic, err)})
			continue
		}
		if _, err := mycommon.Resolve(ctx, db, t); errors.Is(err, mycommon.ErrNoTable) {
			if !s.AutoCreate {
				errs = append(errs, plugin.FieldError{Name: jdbc.KeyAutoCreate, Message: fmt.Sprintf("table %s for topic %s does not exist: create it, or set auto.create=true", t, topic)})
			}
		} else if err != nil {
			errs = append(errs, plugin.FieldError{Name: jdbc.KeyTableNameFormat, Message: err.Error()})
		}
	}
	return errs
}
