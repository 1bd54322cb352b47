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
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

var _ plugin.BacklogReporter = (*Connector)(nil)

// BacklogUnit: bytes, always.
func (c *Connector) BacklogUnit(map[string]string) string { return plugin.BacklogBytes }

// Backlog is the replication slot's lag in bytes of WAL: the server's
// current WAL position minus the slot's confirmed_flush_lsn, what the
// server keeps for the slot and the connector has not yet stored in Kafka
// (the task confirms a position only once Kafka has its records, so the
// slot, not the offsets topic, is where the figure lives). It counts the
// server's WAL, not only the captured tables' changes: WAL of other tables
// and databases written while the task is behind is counted too, and the
// task passes over it as it catches up. A slot that does not exist yet
// (the task creates it when it first starts) has no lag: 0. A slot of
// another database is an error naming slot.name, as the task's is.
func (c *Connector) Backlog(ctx context.Context, config map[string]string, _ plugin.OffsetReader) (plugin.Backlog, error) {
	s, err := parseSettings(config)
	if err != nil {
		return plugin.Backlog{}, err
	}
	conn, err := s.conn.connect(ctx)
	if err != nil {
		return plugin.Backlog{}, err
	}
	defer conn.Close(context.Background())
	var db, here string
	var lag *int64
	err = conn.QueryRow(ctx, `SELECT coalesce(database::text, ''), current_database()::text,
	pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint
	FROM pg_replication_slots WHERE slot_name = $1`, s.slot).Scan(&db, &here, &lag)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return plugin.Backlog{Value: 0, Unit: plugin.BacklogBytes}, nil
	case err != nil:
		return plugin.Backlog{}, s.conn.redact(fmt.Errorf("reading the lag of replication slot %s: %w", s.slot, err))
	}
	if db != here {
		return plugin.Backlog{}, fmt.Errorf("%s: replication slot %s belongs to database %s, not %s: set %s to a slot of this database", KeySlotName, s.slot, db, here, KeySlotName)
	}
	var v int64
	if lag != nil { // a slot being created has no confirmed position yet
		v = max(0, *lag)
	}
	return plugin.Backlog{Value: v, Unit: plugin.BacklogBytes}, nil
}
