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

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
)

// querier runs queries: a *pgx.Conn, or its transaction.
type querier = pgcommon.Querier

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
	keys, err := pgcommon.PrimaryKey(ctx, rs.db, pgcommon.Table{Schema: m.Namespace, Name: m.RelationName})
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
