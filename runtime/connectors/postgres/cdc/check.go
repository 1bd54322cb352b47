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
	"log/slog"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// CheckWalLevel returns an error naming the setting and the fix unless the
// server's wal_level is logical.
func CheckWalLevel(level string) error {
	if strings.EqualFold(strings.TrimSpace(level), "logical") {
		return nil
	}
	return fmt.Errorf("the server runs with wal_level=%s, but logical replication needs wal_level=logical: "+
		"run ALTER SYSTEM SET wal_level = logical (or set it in postgresql.conf) and restart PostgreSQL", level)
}

// CheckReplicationPrivilege returns an error naming the fix unless the
// user may open replication connections.
func CheckReplicationPrivilege(user string, superuser, replication bool) error {
	if superuser || replication {
		return nil
	}
	return fmt.Errorf("user %s lacks the REPLICATION privilege that reading a replication slot needs: run ALTER ROLE %s REPLICATION",
		user, pgx.Identifier{user}.Sanitize())
}

// slotInfo is a row of pg_replication_slots.
type slotInfo struct {
	plugin    string
	database  string
	active    bool
	activePID *int32
	confirmed pglogrepl.LSN
}

// readSlot returns the slot, or nil when it does not exist.
func readSlot(ctx context.Context, q querier, name string) (*slotInfo, error) {
	rows, err := q.Query(ctx, `SELECT coalesce(plugin::text, ''), coalesce(database::text, ''), active, active_pid,
	coalesce(confirmed_flush_lsn::text, '0/0') FROM pg_replication_slots WHERE slot_name = $1`, name)
	if err != nil {
		return nil, fmt.Errorf("reading replication slot %s: %w", name, err)
	}
	infos, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (slotInfo, error) {
		var si slotInfo
		var lsn string
		if err := r.Scan(&si.plugin, &si.database, &si.active, &si.activePID, &lsn); err != nil {
			return si, err
		}
		l, err := pglogrepl.ParseLSN(lsn)
		si.confirmed = l
		return si, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading replication slot %s: %w", name, err)
	}
	if len(infos) == 0 {
		return nil, nil
	}
	return &infos[0], nil
}

// publicationExists reports whether the publication exists.
func publicationExists(ctx context.Context, q querier, name string) (bool, error) {
	rows, err := q.Query(ctx, "SELECT 1 FROM pg_publication WHERE pubname = $1", name)
	if err != nil {
		return false, fmt.Errorf("reading publication %s: %w", name, err)
	}
	n, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return false, fmt.Errorf("reading publication %s: %w", name, err)
	}
	return len(n) > 0, nil
}

// ensurePublication creates the publication for the listed tables (all
// tables for an empty list) or adds the listed tables it lacks.
func ensurePublication(ctx context.Context, conn *pgx.Conn, s settings, log *slog.Logger) error {
	exists, err := publicationExists(ctx, conn, s.publication)
	if err != nil {
		return err
	}
	pub := pgx.Identifier{s.publication}.Sanitize()
	if !exists {
		sql := "CREATE PUBLICATION " + pub + " FOR ALL TABLES"
		if len(s.tables) > 0 {
			names := make([]string, len(s.tables))
			for i, t := range s.tables {
				names[i] = t.Quoted()
			}
			sql = "CREATE PUBLICATION " + pub + " FOR TABLE " + strings.Join(names, ", ")
		}
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("creating publication %s (%s=true): %w", s.publication, KeyPublicationAutocreate, err)
		}
		log.Info("created publication", "publication", s.publication, "tables", len(s.tables))
		return nil
	}
	if len(s.tables) == 0 {
		return nil
	}
	have, err := publicationTables(ctx, conn, settings{publication: s.publication})
	if err != nil {
		return err
	}
	in := map[pgcommon.Table]bool{}
	for _, t := range have {
		in[t] = true
	}
	for _, t := range s.tables {
		if in[t] {
			continue
		}
		if _, err := conn.Exec(ctx, "ALTER PUBLICATION "+pub+" ADD TABLE "+t.Quoted()); err != nil {
			return fmt.Errorf("adding table %s to publication %s (%s=true): %w", t, s.publication, KeyPublicationAutocreate, err)
		}
		log.Info("added table to publication", "publication", s.publication, "table", t.String())
	}
	return nil
}

// checkServer runs the server-side checks of Validate.
func checkServer(ctx context.Context, s settings) []plugin.FieldError {
	conn, ferrs := pgcommon.CheckConnection(ctx, s.conn.config)
	if len(ferrs) > 0 {
		return ferrs
	}
	defer conn.Close(context.Background())
	var errs []plugin.FieldError
	add := func(field string, err error) {
		errs = append(errs, plugin.FieldError{Name: field, Message: err.Error()})
	}

	var walLevel, user, db string
	var super, repl bool
	if err := conn.QueryRow(ctx, `SELECT current_setting('wal_level'), current_user::text, current_database()::text, r.rolsuper, r.rolreplication
		FROM pg_roles r WHERE r.rolname = current_user`).Scan(&walLevel, &user, &db, &super, &repl); err != nil {
		return []plugin.FieldError{{Name: pgcommon.KeyConnectionURL, Message: fmt.Sprintf("reading server settings: %v", s.conn.redact(err))}}
	}
	if err := CheckWalLevel(walLevel); err != nil {
		add(pgcommon.KeyConnectionURL, err)
	}
	if err := CheckReplicationPrivilege(user, super, repl); err != nil {
		add(pgcommon.KeyConnectionUser, err)
	}

	for _, t := range s.tables {
		var oid *uint32
		var replident string
		var hasPK bool
		err := conn.QueryRow(ctx, `SELECT c.oid, c.relreplident::text, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)
			FROM pg_class c WHERE c.oid = to_regclass($1)`, t.Quoted()).Scan(&oid, &replident, &hasPK)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && oid == nil) {
			add(KeyTableIncludeList, fmt.Errorf("table %s does not exist (or user %s cannot see it)", t, user))
			continue
		}
		if err != nil {
			add(KeyTableIncludeList, fmt.Errorf("looking up table %s: %v", t, s.conn.redact(err)))
			continue
		}
		if replident == "d" && !hasPK || replident == "n" {
			add(KeyTableIncludeList, fmt.Errorf("table %s has no primary key and no usable replica identity: once it is in a publication, "+
				"UPDATE and DELETE on it fail; run ALTER TABLE %s REPLICA IDENTITY FULL (or add a primary key)",
				t, t.Quoted()))
		}
	}

	exists, err := publicationExists(ctx, conn, s.publication)
	switch {
	case err != nil:
		add(KeyPublicationName, err)
	case !exists && !s.autocreate:
		add(KeyPublicationName, fmt.Errorf("publication %s does not exist: run CREATE PUBLICATION %s FOR TABLE ... or set %s=true",
			s.publication, pgx.Identifier{s.publication}.Sanitize(), KeyPublicationAutocreate))
	case !exists && len(s.tables) == 0 && !super:
		add(KeyTableIncludeList, fmt.Errorf("publication %s does not exist and creating it FOR ALL TABLES needs a superuser: list the tables in %s",
			s.publication, KeyTableIncludeList))
	}

	slot, err := readSlot(ctx, conn, s.slot)
	switch {
	case err != nil:
		add(KeySlotName, err)
	case slot == nil:
		var used, maxSlots int
		if err := conn.QueryRow(ctx, "SELECT count(*)::int, current_setting('max_replication_slots')::int FROM pg_replication_slots").Scan(&used, &maxSlots); err == nil && used >= maxSlots {
			add(KeySlotName, fmt.Errorf("replication slot %s does not exist and all %d slots (max_replication_slots) are taken: drop an unused slot or raise max_replication_slots", s.slot, maxSlots))
		}
	case slot.active:
		pid := "another process"
		if slot.activePID != nil {
			pid = fmt.Sprintf("server process %d", *slot.activePID)
		}
		add(KeySlotName, fmt.Errorf("replication slot %s is in use by %s (another connector or client reads it): give this connector its own %s or stop the other reader",
			s.slot, pid, KeySlotName))
	case slot.plugin != "pgoutput":
		add(KeySlotName, fmt.Errorf("replication slot %s uses output plugin %s, not pgoutput: drop it or choose another %s", s.slot, slot.plugin, KeySlotName))
	case slot.database != db:
		add(KeySlotName, fmt.Errorf("replication slot %s belongs to database %s, not %s: choose another %s", s.slot, slot.database, db, KeySlotName))
	}
	return errs
}
