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

// Package cdc holds MySqlCDCSource, a log-based change data capture source
// on the MySQL and MariaDB binary log (binlog_format=ROW): an optional
// consistent snapshot of the captured tables (op r), then every insert,
// update and delete from the binlog, in the Debezium-style envelope of the
// PostgreSQL CDC source (package cdcevent), one topic per table. The
// source offset is the GTID set before the record's transaction (with the
// binlog file and position of the transaction as the fallback when GTIDs
// are off) and the record's row within the transaction, so a restart
// resumes exactly after the last stored record. The binlog is one linear
// log: the connector always runs exactly one task.
package cdc

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the CDC source.
const Version = "0.1.0"

// Class is the connector class; "MySqlCDCSource" and
// "MySqlCDCSourceConnector" are derived aliases.
const Class = "dev.conveyor.connect.mysql.MySqlCDCSourceConnector"

// Configuration keys (the connection.* keys are the MySQL connectors').
const (
	KeyTableIncludeList   = "table.include.list"
	KeyTopicPrefix        = "topic.prefix"
	KeySnapshotMode       = "snapshot.mode"
	KeyServerID           = "database.server.id"
	KeyBatchSize          = "batch.size"
	KeyPollIntervalMs     = "poll.interval.ms"
	KeyTombstonesOnDelete = "tombstones.on.delete"
)

// Snapshot modes.
const (
	SnapshotInitial = "initial"
	SnapshotNever   = "never"
)

const group = "MySQL CDC"

func validTableList() plugin.Validator {
	return func(v any) error {
		l, _ := v.([]string)
		for _, t := range l {
			if _, err := mycommon.ParseTable(t); err != nil {
				return err
			}
		}
		return nil
	}
}

// Spec returns the CDC source's configuration fields (connection fields
// first).
func Spec() plugin.ConfigSpec {
	fields := mycommon.ConnectionFields("1")
	fields = append(fields,
		plugin.ConfigField{Name: KeyTopicPrefix, Type: plugin.TypeString, Required: true, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			Validator: plugin.NonEmpty(),
			Doc:       "Prefix of the topic names: the changes of table database.table go to topic.prefix + database.table (with topic.prefix=my., table shop.orders goes to my.shop.orders), as the PostgreSQL CDC source names its topics."},
		plugin.ConfigField{Name: KeyTableIncludeList, Type: plugin.TypeList, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			Validator: validTableList(),
			Doc:       "Tables to capture, as table (in the URL's database) or database.table, comma-separated; empty means every base table of the URL's database."},
		plugin.ConfigField{Name: KeySnapshotMode, Type: plugin.TypeString, Default: SnapshotInitial, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			Validator: plugin.OneOf(SnapshotInitial, SnapshotNever), Recommended: []string{SnapshotInitial, SnapshotNever},
			Doc: "initial: when the connector has no stored position, first emit every existing row (op r), read in one consistent snapshot (START TRANSACTION WITH CONSISTENT SNAPSHOT), then stream the binlog from the snapshot's position; never: only stream changes made from now on."},
		plugin.ConfigField{Name: KeyServerID, Type: plugin.TypeLong, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			Validator: plugin.AtLeast(1), Max: 4294967295,
			Doc: "Server id the task uses as a replica of the server; unique among the server's replicas (the server disconnects an older replica with the same id). Default: derived from the connector's name (100000 to 4194303999)."},
		plugin.ConfigField{Name: KeyBatchSize, Type: plugin.TypeInt, Default: "2048", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			Validator: plugin.AtLeast(1), Max: 100_000, Doc: "Maximum records returned by one poll."},
		plugin.ConfigField{Name: KeyPollIntervalMs, Type: plugin.TypeLong, Default: "500", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			Validator: plugin.AtLeast(1), Max: 60000, Doc: "How long a poll waits for changes before returning none, in ms."},
		plugin.ConfigField{Name: KeyTombstonesOnDelete, Type: plugin.TypeBoolean, Default: "true", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			Doc: "Follow every delete event of a table with a primary key with a tombstone (the same key, a null value), as the PostgreSQL CDC source does."},
	)
	return plugin.ConfigSpec{Fields: fields}
}

// Plugin returns the MySqlCDCSource plugin.
func Plugin() plugin.Plugin {
	return plugin.Plugin{
		Class:   Class,
		Kind:    plugin.KindSource,
		Version: Version,
		Doc: "Streams inserts, updates and deletes of MySQL and MariaDB tables from the row-based binary log, " +
			"with an optional consistent initial snapshot; always one task (the binlog is one linear log).",
		Spec:          Spec(),
		NewConnector:  func() plugin.Connector { return newConnector() },
		NewSourceTask: func() plugin.SourceTask { return &Task{} },
	}
}

// settings is a parsed configuration.
type settings struct {
	config       map[string]string // for the connection
	topicPrefix  string
	tables       []mycommon.Table // nil: every base table of the URL's database
	snapshot     string
	serverID     uint32
	batchSize    int
	pollInterval time.Duration
	tombstones   bool
}

func parseSettings(config map[string]string) (settings, error) {
	cfg, err := Spec().Parse(config)
	if err != nil {
		return settings{}, err
	}
	if _, err := mycommon.Config(config); err != nil {
		return settings{}, err
	}
	s := settings{
		config:       config,
		topicPrefix:  cfg.String(KeyTopicPrefix),
		snapshot:     strings.ToLower(cfg.String(KeySnapshotMode)),
		batchSize:    cfg.Int(KeyBatchSize),
		pollInterval: time.Duration(cfg.Long(KeyPollIntervalMs)) * time.Millisecond,
		tombstones:   cfg.Bool(KeyTombstonesOnDelete),
	}
	if v := strings.TrimSpace(config[KeyServerID]); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return settings{}, plugin.FieldError{Name: KeyServerID, Message: fmt.Sprintf("%q is not a server id (1 to 4294967295)", v)}
		}
		s.serverID = uint32(n)
	} else {
		h := fnv.New32a()
		h.Write([]byte(config["name"]))
		s.serverID = 100000 + h.Sum32()%4194203999
	}
	for _, item := range cfg.List(KeyTableIncludeList) {
		t, err := mycommon.ParseTable(item)
		if err != nil {
			return settings{}, plugin.FieldError{Name: KeyTableIncludeList, Message: err.Error()}
		}
		s.tables = append(s.tables, t)
	}
	return s, nil
}

// topic returns the topic of a table's changes.
func (s settings) topic(t mycommon.Table) string { return s.topicPrefix + t.Schema + "." + t.Name }
