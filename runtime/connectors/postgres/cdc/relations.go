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

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// pkQuery lists the primary key columns of a table in key order.
const pkQuery = `SELECT a.attname
FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = $1 AND i.indisprimary
ORDER BY array_position(i.indkey::int2[], a.attnum)`

// primaryKey returns the primary key columns of the table with the OID.
func primaryKey(ctx context.Context, q querier, oid uint32) ([]string, error) {
	rows, err := q.Query(ctx, pkQuery, oid)
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of relation %d: %w", oid, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of relation %d: %w", oid, err)
	}
	return keys, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// relations caches the captured tables by OID; a nil entry is a table of
// the publication that is not captured.
type relations struct {
	s     settings
	db    querier // for primary key look-ups
	byOID map[uint32]*relation
	tm    *pgtype.Map
}

func newRelations(s settings, db querier) *relations {
	return &relations{s: s, db: db, byOID: map[uint32]*relation{}, tm: pgtype.NewMap()}
}

// fromMessage (re)builds a relation from a pgoutput Relation message, which
// the server sends before the first change of a table in a session and
// after every change of its definition.
func (rs *relations) fromMessage(ctx context.Context, m *pglogrepl.RelationMessage) error {
	if !rs.s.includes(m.Namespace, m.RelationName) {
		rs.byOID[m.RelationID] = nil
		return nil
	}
	cols := make([]column, len(m.Columns))
	var identity []string
	for i, c := range m.Columns {
		cols[i] = newColumn(rs.tm, c.Name, c.DataType, c.TypeModifier)
		if c.Flags&1 != 0 {
			identity = append(identity, c.Name)
		}
	}
	keys, err := primaryKey(ctx, rs.db, m.RelationID)
	if err != nil {
		return err
	}
	// Without a primary key, a replica identity index (REPLICA IDENTITY
	// USING INDEX) is the key; FULL flags every column, which is no key.
	if len(keys) == 0 && m.ReplicaIdentity == 'i' {
		keys = identity
	}
	r, err := newRelation(rs.s, m.RelationID, m.Namespace, m.RelationName, cols, keys)
	if err != nil {
		return err
	}
	rs.byOID[m.RelationID] = r
	return nil
}
