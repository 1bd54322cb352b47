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
	"encoding/json"
	"fmt"
	"strconv"
)

// Source partition and offset keys.
const (
	// PartitionServer names the server (host:port); the connector has one
	// source partition.
	PartitionServer = "server"
	// OffsetGTIDs is the GTID set executed before the record's transaction
	// (MariaDB's domain-server-sequence list or MySQL's uuid:interval
	// set); absent when the server runs without GTIDs.
	OffsetGTIDs = "gtids"
	// OffsetGTID is the GTID of the record's transaction.
	OffsetGTID = "gtid"
	// OffsetFile and OffsetPos are the binlog file and position where the
	// record's transaction starts: the fallback without GTIDs.
	OffsetFile = "file"
	OffsetPos  = "pos"
	// OffsetRow counts the changes of that transaction up to and including
	// the record's, so a restart in the middle of a transaction skips
	// exactly the changes already delivered.
	OffsetRow = "row"
	// OffsetSnapshot is "running" on the rows of an unfinished snapshot.
	OffsetSnapshot  = "snapshot"
	snapshotRunning = "running"
)

// position is a point in the binlog: every change of the transactions in
// gtids (or before file:pos), and the first row changes of the
// transaction gtid (starting at file:pos), were delivered.
type position struct {
	gtids    string
	gtid     string
	file     string
	pos      uint32
	row      int64
	snapshot bool
}

func (p position) offset() map[string]any {
	m := map[string]any{OffsetFile: p.file, OffsetPos: int64(p.pos), OffsetRow: p.row}
	if p.gtids != "" || p.gtid != "" {
		m[OffsetGTIDs] = p.gtids
	}
	if p.gtid != "" {
		m[OffsetGTID] = p.gtid
	}
	if p.snapshot {
		m[OffsetSnapshot] = snapshotRunning
	}
	return m
}

// sameTx reports whether a transaction (its GTID, or without GTIDs its
// start) is the one of p.
func (p position) sameTx(gtid, file string, pos uint32) bool {
	if p.gtid != "" || gtid != "" {
		return p.gtid == gtid
	}
	return p.file == file && p.pos == pos
}

func parsePosition(m map[string]any) (position, error) {
	var p position
	var err error
	p.file, _ = m[OffsetFile].(string)
	p.gtids, _ = m[OffsetGTIDs].(string)
	p.gtid, _ = m[OffsetGTID].(string)
	_, hasGTIDs := m[OffsetGTIDs]
	if p.file == "" && !hasGTIDs {
		return p, fmt.Errorf("stored offset %v has neither %q nor %q", m, OffsetGTIDs, OffsetFile)
	}
	pos, err := number(m, OffsetPos)
	if err != nil {
		return p, err
	}
	if pos < 0 || pos > 1<<32-1 {
		return p, fmt.Errorf("stored offset: %s %d is out of range", OffsetPos, pos)
	}
	p.pos = uint32(pos)
	if p.row, err = number(m, OffsetRow); err != nil {
		return p, err
	}
	p.snapshot = m[OffsetSnapshot] == snapshotRunning
	return p, nil
}

func number(m map[string]any, key string) (int64, error) {
	switch v := m[key].(type) {
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case float64:
		return int64(v), nil
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			return 0, fmt.Errorf("stored offset: %s %v: %w", key, v, err)
		}
		return n, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stored offset: %s %q: %w", key, v, err)
		}
		return n, nil
	case nil:
		return 0, nil
	default:
		return 0, fmt.Errorf("stored offset: %s is %T, not a number", key, v)
	}
}
