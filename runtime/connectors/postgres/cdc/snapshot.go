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
	"fmt"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// snapshotTable is one table to read in the snapshot.
type snapshotTable struct {
	name pgcommon.Table
	oid  uint32
	keys []string
}

// snapshot reads the captured tables in the snapshot exported when the
// slot was created: every row as of the slot's consistent point, which is
// where streaming then starts, so nothing is missed and nothing is read
// twice. The rows of all tables go out in order; the last one carries
// the offset that marks the snapshot finished (every earlier one is
// marked running), so a restart before it repeats the snapshot.
type snapshot struct {
	s         settings
	db        string
	partition map[string]any
	conn      *pgx.Conn // in the snapshot's transaction
	tables    []snapshotTable
	cp        pglogrepl.LSN // the slot's consistent point
	cur       *relation
	rr        *pgconn.ResultReader
	held      *plugin.SourceRecord // the last row read, held back until the next one shows it is not the last
	rows      int64
	tm        *pgtype.Map
}

// begin opens the snapshot's transaction on conn with the exported
// snapshot and lists the tables to read.
func beginSnapshot(ctx context.Context, s settings, conn *pgx.Conn, name string, cp pglogrepl.LSN, db string, partition map[string]any) (*snapshot, error) {
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return nil, fmt.Errorf("beginning the snapshot transaction: %w", err)
	}
	if _, err := conn.Exec(ctx, "SET TRANSACTION SNAPSHOT "+quoteLiteral(name)); err != nil {
		return nil, fmt.Errorf("importing snapshot %s of slot %s: %w", name, s.slot, err)
	}
	tables, err := publicationTables(ctx, conn, s)
	if err != nil {
		return nil, err
	}
	sn := &snapshot{s: s, db: db, partition: partition, conn: conn, cp: cp, tm: pgtype.NewMap()}
	for _, t := range tables {
		var oid uint32
		if err := conn.QueryRow(ctx, "SELECT $1::regclass::oid", t.Quoted()).Scan(&oid); err != nil {
			return nil, fmt.Errorf("looking up table %s: %w", t, err)
		}
		keys, err := pgcommon.PrimaryKey(ctx, conn, t)
		if err != nil {
			return nil, err
		}
		sn.tables = append(sn.tables, snapshotTable{name: t, oid: oid, keys: keys})
	}
	return sn, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// publicationTables lists the captured tables of the publication, sorted.
func publicationTables(ctx context.Context, q querier, s settings) ([]pgcommon.Table, error) {
	rows, err := q.Query(ctx, "SELECT schemaname::text, tablename::text FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1, 2", s.publication)
	if err != nil {
		return nil, fmt.Errorf("listing the tables of publication %s: %w", s.publication, err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgcommon.Table, error) {
		var t pgcommon.Table
		err := r.Scan(&t.Schema, &t.Name)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing the tables of publication %s: %w", s.publication, err)
	}
	var out []pgcommon.Table
	for _, t := range all {
		if s.includes(t.Schema, t.Name) {
			out = append(out, t)
		}
	}
	return out, nil
}

// next returns up to n records; done says the snapshot is complete (the
// transaction is then committed and the connection free).
func (sn *snapshot) next(ctx context.Context, n int) (recs []*plugin.SourceRecord, done bool, err error) {
	for len(recs) < n {
		if sn.rr == nil {
			if len(sn.tables) == 0 {
				if sn.held != nil {
					sn.held.SourceOffset = position{lsn: sn.cp}.offset() // the last row: snapshot finished
					recs = append(recs, sn.held)
					sn.held = nil
				}
				if _, err := sn.conn.Exec(ctx, "COMMIT"); err != nil {
					return nil, false, fmt.Errorf("ending the snapshot transaction: %w", err)
				}
				return recs, true, nil
			}
			if err := sn.open(ctx); err != nil {
				return nil, false, err
			}
		}
		if !sn.rr.NextRow() {
			if _, err := sn.rr.Close(); err != nil {
				return nil, false, fmt.Errorf("reading table %s.%s: %w", sn.cur.schema, sn.cur.table, err)
			}
			sn.rr, sn.cur = nil, nil
			continue
		}
		row, err := sn.cur.rowFromText(sn.rr.Values())
		if err != nil {
			return nil, false, err
		}
		rec := sn.cur.record(sn.s, sn.db, sn.partition, change{op: OpRead, after: row, snapshot: true, lsn: sn.cp})
		rec.SourceOffset = position{lsn: sn.cp, snapshot: true}.offset()
		sn.rows++
		if sn.held != nil {
			recs = append(recs, sn.held)
		}
		sn.held = rec
	}
	return recs, false, nil
}

// open starts reading the next table, in text format like pgoutput sends
// values, so both go through the same conversion.
func (sn *snapshot) open(ctx context.Context) error {
	t := sn.tables[0]
	sn.tables = sn.tables[1:]
	sn.rr = sn.conn.PgConn().ExecParams(ctx, "SELECT * FROM "+t.name.Quoted(), nil, nil, nil, nil)
	fds := sn.rr.FieldDescriptions()
	if fds == nil {
		_, err := sn.rr.Close()
		sn.rr = nil
		return fmt.Errorf("reading table %s: %w", t.name, err)
	}
	cols := make([]column, len(fds))
	for i, fd := range fds {
		cols[i] = newColumn(sn.tm, fd.Name, fd.DataTypeOID, fd.TypeModifier)
	}
	r, err := newRelation(sn.s, t.oid, t.name.Schema, t.name.Name, cols, t.keys)
	if err != nil {
		_, _ = sn.rr.Close()
		sn.rr = nil
		return err
	}
	sn.cur = r
	return nil
}

// close abandons an unfinished snapshot.
func (sn *snapshot) close(ctx context.Context) {
	if sn.rr != nil {
		_, _ = sn.rr.Close()
		sn.rr = nil
	}
	_, _ = sn.conn.Exec(ctx, "ROLLBACK")
}
