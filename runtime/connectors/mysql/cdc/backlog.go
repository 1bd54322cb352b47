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

package cdc

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

var _ plugin.BacklogReporter = (*Connector)(nil)

// BacklogUnit: bytes, always.
func (c *Connector) BacklogUnit(map[string]string) string { return plugin.BacklogBytes }

// Backlog is the binlog not yet read, in bytes: from the stored position
// (the start of the transaction of the last delivered change) to the end
// of the binlog, over the files of SHOW BINARY LOGS: the rest of the
// stored file and every later file whole. It counts the whole server's
// binlog, not only the captured tables' changes, and the stored position
// moves only with a captured change, so other tables' traffic since the
// last captured change counts until the next one. No stored position yet
// (the task has not delivered anything) is 0; a stored file the server no
// longer has (purged) is an error saying to reset the offsets, as the
// task's.
func (c *Connector) Backlog(ctx context.Context, config map[string]string, offsets plugin.OffsetReader) (plugin.Backlog, error) {
	if _, err := parseSettings(config); err != nil {
		return plugin.Backlog{}, err
	}
	cfg, err := mycommon.Config(config)
	if err != nil {
		return plugin.Backlog{}, err
	}
	off, err := offsets.Offset(ctx, map[string]any{PartitionServer: cfg.Addr})
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("mysql cdc: reading the stored position: %w", err)
	}
	if off == nil {
		return plugin.Backlog{Value: 0, Unit: plugin.BacklogBytes}, nil
	}
	p, err := parsePosition(off)
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("mysql cdc: %w", err)
	}
	if p.file == "" {
		return plugin.Backlog{}, fmt.Errorf("mysql cdc: the stored position has no binlog file, only GTIDs: %w", plugin.ErrNoBacklog)
	}
	db, err := mycommon.Open(ctx, config, 1)
	if err != nil {
		return plugin.Backlog{}, err
	}
	defer db.Close()
	logs, err := binaryLogs(ctx, db)
	if err != nil {
		return plugin.Backlog{}, jdbc.RedactError(err, mycommon.Secrets(config))
	}
	var total int64
	found := false
	for _, l := range logs {
		switch {
		case l.name == p.file:
			found = true
			total += max(0, l.size-int64(p.pos))
		case found:
			total += l.size
		}
	}
	if !found {
		return plugin.Backlog{}, fmt.Errorf("mysql cdc: the server no longer has the binlog %s of the stored position (purged): reset the connector's offsets to take a new snapshot", p.file)
	}
	return plugin.Backlog{Value: total, Unit: plugin.BacklogBytes}, nil
}

// binaryLog is one row of SHOW BINARY LOGS.
type binaryLog struct {
	name string
	size int64
}

// binaryLogs lists the server's binlog files in order (SHOW BINARY LOGS:
// Log_name, File_size, and on MySQL 8 Encrypted).
func binaryLogs(ctx context.Context, db *sql.DB) ([]binaryLog, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("listing the binlog files (SHOW BINARY LOGS needs the REPLICATION CLIENT privilege): %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil || len(cols) < 2 {
		return nil, fmt.Errorf("listing the binlog files: unexpected columns %v: %v", cols, err)
	}
	var out []binaryLog
	for rows.Next() {
		vals := make([]any, len(cols))
		var l binaryLog
		vals[0], vals[1] = &l.name, &l.size
		for i := 2; i < len(vals); i++ {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			return nil, fmt.Errorf("listing the binlog files: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the binlog files: %w", err)
	}
	return out, nil
}
