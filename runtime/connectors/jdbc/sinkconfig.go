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
	"context"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Sink configuration keys (besides the connection keys and topics), Kafka's
// JDBC sink's names.
const (
	KeyInsertMode      = "insert.mode"
	KeyPKMode          = "pk.mode"
	KeyPKFields        = "pk.fields"
	KeyTableNameFormat = "table.name.format"
	KeyAutoCreate      = "auto.create"
	KeyAutoEvolve      = "auto.evolve"
	KeyDeleteEnabled   = "delete.enabled"
	KeyBatchSize       = "batch.size"
)

// Insert modes.
const (
	InsertModeInsert = "insert"
	InsertModeUpsert = "upsert"
)

// Primary key modes (Kafka's JDBC sink names).
const (
	PKModeNone        = "none"
	PKModeKafka       = "kafka"
	PKModeRecordKey   = "record_key"
	PKModeRecordValue = "record_value"
)

// Column names used when the key or the Kafka coordinates become columns.
const (
	DefaultKeyColumn = "__connect_key"
	TopicColumn      = "__connect_topic"
	PartitionColumn  = "__connect_partition"
	OffsetColumn     = "__connect_offset"
)

// SinkSettings is a parsed sink configuration (the shared part).
type SinkSettings struct {
	Raw           map[string]string
	InsertMode    string
	PKMode        string
	PKFields      []string
	TableFormat   string
	AutoCreate    bool
	AutoEvolve    bool
	DeleteEnabled bool
	BatchSize     int
	// ExactlyOnce is exactly.once; Connector the connector's name, which
	// keys its stored offsets.
	ExactlyOnce bool
	Connector   string
}

// ParseSink reads the shared sink settings from a parsed configuration
// and checks the rules between them.
func ParseSink(cfg plugin.Config, raw map[string]string) (*SinkSettings, []plugin.FieldError) {
	s := &SinkSettings{
		Raw:           raw,
		InsertMode:    strings.ToLower(cfg.String(KeyInsertMode)),
		PKMode:        strings.ToLower(cfg.String(KeyPKMode)),
		PKFields:      cfg.List(KeyPKFields),
		TableFormat:   cfg.String(KeyTableNameFormat),
		AutoCreate:    cfg.Bool(KeyAutoCreate),
		AutoEvolve:    cfg.Bool(KeyAutoEvolve),
		DeleteEnabled: cfg.Bool(KeyDeleteEnabled),
		BatchSize:     cfg.Int(KeyBatchSize),
		ExactlyOnce:   cfg.Bool(KeyExactlyOnce),
		Connector:     strings.TrimSpace(raw[plugin.KeyName]),
	}
	var errs []plugin.FieldError
	if s.ExactlyOnce && s.Connector == "" {
		errs = append(errs, plugin.FieldError{Name: KeyExactlyOnce, Message: "exactly.once=true keys the stored offsets by the connector's name: the configuration has no name"})
	}
	if s.InsertMode == InsertModeUpsert && s.PKMode == PKModeNone {
		errs = append(errs, plugin.FieldError{Name: KeyPKMode, Message: "insert.mode=upsert needs a primary key: set pk.mode to record_key, record_value or kafka"})
	}
	if s.DeleteEnabled && s.PKMode != PKModeRecordKey {
		errs = append(errs, plugin.FieldError{Name: KeyDeleteEnabled, Message: "delete.enabled=true needs pk.mode=record_key: a tombstone only carries its key"})
	}
	return s, errs
}

// KeyColumn is the column of a primitive record key: pk.fields' first
// entry, else __connect_key.
func (s *SinkSettings) KeyColumn() string {
	if len(s.PKFields) > 0 {
		return s.PKFields[0]
	}
	return DefaultKeyColumn
}

// WriteBatch writes a batch with write; when that fails for good and
// there is an errant record reporter (errors.tolerance, a dead letter
// queue), it writes the records one at a time, each in its own
// transaction, and reports those that fail for good themselves, as Kafka
// Connect's JDBC sink does: one bad record then costs one record, not the
// task. It returns the records not written (nor reported) and the error
// that stopped it: a retriable one (the rest is written again) or one the
// reporter did not take.
func WriteBatch(ctx context.Context, batch []*plugin.SinkRecord, write func(context.Context, []*plugin.SinkRecord) error, errant plugin.ErrantRecordReporter) ([]*plugin.SinkRecord, error) {
	err := write(ctx, batch)
	if err == nil {
		return nil, nil
	}
	if plugin.IsRetriable(err) || errant == nil {
		return batch, err
	}
	for i, r := range batch {
		err := write(ctx, batch[i:i+1])
		if err == nil {
			continue
		}
		if plugin.IsRetriable(err) {
			return batch[i:], err
		}
		// The reporter logs it when errors.log.enable asks for it.
		if rerr := errant.Report(ctx, r, err); rerr != nil {
			return batch[i:], rerr
		}
	}
	return nil, nil
}
