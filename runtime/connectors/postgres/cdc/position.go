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

	"github.com/jackc/pglogrepl"
)

// Source partition and offset keys.
const (
	// PartitionSlot names the replication slot; the connector has one
	// source partition.
	PartitionSlot = "slot"
	// OffsetLSN is the commit LSN of the record's transaction (for
	// snapshot rows: the slot's consistent point), as PostgreSQL prints
	// LSNs ("16/B374D848"): a string, so no JSON reader rounds it.
	OffsetLSN = "lsn"
	// OffsetSeq counts the changes of that transaction up to and including
	// the record's, so a restart in the middle of a transaction skips
	// exactly the changes already delivered.
	OffsetSeq = "seq"
	// OffsetSnapshot is "running" on the rows of an unfinished initial
	// snapshot; absent once the snapshot's last row or any streamed change
	// was delivered.
	OffsetSnapshot  = "snapshot"
	snapshotRunning = "running"
)

// position is a point in the change stream: every change of transactions
// committed before lsn, and the first seq changes of the transaction
// committed at lsn, were delivered.
type position struct {
	lsn      pglogrepl.LSN
	seq      int64
	snapshot bool // an unfinished initial snapshot
}

func (p position) offset() map[string]any {
	m := map[string]any{OffsetLSN: p.lsn.String(), OffsetSeq: p.seq}
	if p.snapshot {
		m[OffsetSnapshot] = snapshotRunning
	}
	return m
}

// covers reports whether the change number seq of the transaction
// committed at lsn was delivered up to p.
func (p position) covers(lsn pglogrepl.LSN, seq int64) bool {
	if p.snapshot {
		return false
	}
	return lsn < p.lsn || (lsn == p.lsn && seq <= p.seq)
}

func parsePosition(m map[string]any) (position, error) {
	var p position
	s, ok := m[OffsetLSN].(string)
	if !ok {
		return p, fmt.Errorf("stored offset %v has no %q string", m, OffsetLSN)
	}
	lsn, err := pglogrepl.ParseLSN(s)
	if err != nil {
		return p, fmt.Errorf("stored offset %q: %w", s, err)
	}
	p.lsn = lsn
	switch v := m[OffsetSeq].(type) {
	case int64:
		p.seq = v
	case int:
		p.seq = int64(v)
	case float64:
		p.seq = int64(v)
	case json.Number:
		if p.seq, err = v.Int64(); err != nil {
			return p, fmt.Errorf("stored offset: %s %v: %w", OffsetSeq, v, err)
		}
	case nil:
	default:
		return p, fmt.Errorf("stored offset: %s is %T, not a number", OffsetSeq, v)
	}
	p.snapshot = m[OffsetSnapshot] == snapshotRunning
	return p, nil
}
