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
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/cdcevent"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// snapshot reads every row of the captured tables in one consistent
// transaction, whose binlog position (and GTID set) is where the stream
// starts afterwards.
type snapshot struct {
	s         settings
	conn      *sql.Conn
	at        position // the binlog position of the snapshot
	tables    []*table
	ti        int
	rows      *sql.Rows
	vals      []sql.RawBytes
	pending   *plugin.SourceRecord // held back until the next row shows it is not the last
	partition map[string]any
	n         int64
}

// beginSnapshot opens the consistent snapshot on conn and reads its binlog
// position: MariaDB reports the position of the snapshot itself
// (binlog_snapshot_file/position, without locks); MySQL needs a short
// global read lock (FLUSH TABLES WITH READ LOCK, the RELOAD privilege)
// while the snapshot starts and the position is read.
func beginSnapshot(ctx context.Context, s settings, conn *sql.Conn, srv server, tables []*table, partition map[string]any) (*snapshot, error) {
	sn := &snapshot{s: s, conn: conn, tables: tables, partition: partition}
	exec := func(q string) error {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("snapshot: %s: %w", q, err)
		}
		return nil
	}
	if err := exec("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return nil, err
	}
	if srv.mariadb {
		if err := exec("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
			return nil, err
		}
		var name, file, pos string
		rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
		if err != nil {
			return nil, fmt.Errorf("snapshot: reading its binlog position: %w", err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&name, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("snapshot: reading its binlog position: %w", err)
			}
			switch strings.ToLower(name) {
			case "binlog_snapshot_file":
				file = v
			case "binlog_snapshot_position":
				pos = v
			}
		}
		rows.Close()
		if file == "" {
			return nil, fmt.Errorf("snapshot: the server reports no binlog position (is log_bin on?)")
		}
		var gtids sql.NullString
		if err := conn.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", file, pos).Scan(&gtids); err != nil {
			return nil, fmt.Errorf("snapshot: the GTID position of %s:%s: %w", file, pos, err)
		}
		p, err := number(map[string]any{"pos": pos}, "pos")
		if err != nil {
			return nil, err
		}
		sn.at = position{gtids: gtids.String, file: file, pos: uint32(p)}
	} else {
		if err := exec("FLUSH TABLES WITH READ LOCK"); err != nil {
			return nil, err
		}
		err := exec("START TRANSACTION WITH CONSISTENT SNAPSHOT")
		if err == nil {
			sn.at, err = srv.currentPosition(ctx, conn)
		}
		if uerr := exec("UNLOCK TABLES"); err == nil {
			err = uerr
		}
		if err != nil {
			return nil, err
		}
	}
	sn.at.snapshot = true
	return sn, nil
}

// next returns up to max rows; done is true with the last ones.
func (sn *snapshot) next(ctx context.Context, max int) (recs []*plugin.SourceRecord, done bool, err error) {
	for len(recs) < max {
		if sn.rows == nil {
			if sn.ti == len(sn.tables) {
				if sn.pending != nil {
					final := sn.at
					final.snapshot = false
					sn.pending.SourceOffset = final.offset()
					recs = append(recs, sn.pending)
					sn.pending = nil
				}
				return recs, true, nil
			}
			t := sn.tables[sn.ti]
			if sn.rows, err = sn.conn.QueryContext(ctx, "SELECT * FROM "+t.id.Quoted()); err != nil {
				return recs, false, fmt.Errorf("reading table %s: %w", t.id, err)
			}
			sn.vals = make([]sql.RawBytes, len(t.columns))
		}
		t := sn.tables[sn.ti]
		if !sn.rows.Next() {
			err := sn.rows.Err()
			sn.rows.Close()
			sn.rows = nil
			if err != nil {
				return recs, false, fmt.Errorf("reading table %s: %w", t.id, err)
			}
			sn.ti++
			continue
		}
		args := make([]any, len(sn.vals))
		for i := range sn.vals {
			args[i] = &sn.vals[i]
		}
		if err := sn.rows.Scan(args...); err != nil {
			return recs, false, fmt.Errorf("reading table %s: %w", t.id, err)
		}
		vals := make([][]byte, len(sn.vals))
		for i, v := range sn.vals {
			if v != nil {
				vals[i] = v
			}
		}
		row, err := t.rowFromText(vals)
		if err != nil {
			return recs, false, err
		}
		rec := t.schemas.Record(t.topic, cdcevent.Change{Op: cdcevent.OpRead, After: row, Source: sn.source(t)})
		rec.SourcePartition = sn.partition
		rec.SourceOffset = sn.at.offset()
		sn.n++
		if sn.pending != nil {
			recs = append(recs, sn.pending)
		}
		sn.pending = rec
	}
	return recs, false, nil
}

func (sn *snapshot) source(t *table) *data.Struct {
	return data.NewStruct(SourceSchema).
		Put("connector", "mysql").
		Put("name", sn.s.topicPrefix).
		Put("db", t.id.Schema).
		Put("table", t.id.Name).
		Put("snapshot", "true").
		Put("file", sn.at.file).
		Put("pos", int64(sn.at.pos))
}

// close ends the snapshot's transaction and gives the connection back.
func (sn *snapshot) close(ctx context.Context) {
	if sn.rows != nil {
		sn.rows.Close()
	}
	_, _ = sn.conn.ExecContext(ctx, "COMMIT")
	_ = sn.conn.Close()
}
