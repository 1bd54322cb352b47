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
	"errors"
	"fmt"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// server is what the task learned about the server.
type server struct {
	mariadb bool // MariaDB (domain-server-sequence GTIDs) or MySQL (uuid:sequence)
	gtid    bool // GTIDs in the binlog: always on MariaDB, gtid_mode=ON on MySQL
	version string
}

func (s server) flavor() string {
	if s.mariadb {
		return gomysql.MariaDBFlavor
	}
	return gomysql.MySQLFlavor
}

// inspect reads the server's flavor and checks the binlog settings CDC
// needs.
func inspect(ctx context.Context, q mycommon.Querier) (server, error) {
	var version, logBin, format string
	if err := q.QueryRowContext(ctx, "SELECT VERSION(), @@log_bin, @@binlog_format").Scan(&version, &logBin, &format); err != nil {
		return server{}, fmt.Errorf("reading the server's binlog settings: %w", err)
	}
	var gtidMode string
	if !isMariaDB(version) {
		// MySQL only; a server too old to know it runs without GTIDs.
		_ = q.QueryRowContext(ctx, "SELECT @@gtid_mode").Scan(&gtidMode)
	}
	return classify(version, logBin, format, gtidMode)
}

// isMariaDB tells MariaDB's version string (10.11.6-MariaDB-0+deb12u1-log)
// from MySQL's (8.0.36, 8.4.3-commercial).
func isMariaDB(version string) bool {
	return strings.Contains(strings.ToLower(version), "mariadb")
}

// classify turns what the server reports into its flavor, or an error
// naming the setting CDC needs. gtidMode is MySQL's @@gtid_mode: only ON
// gives every transaction a GTID (ON_PERMISSIVE still lets anonymous ones
// through, so the task tracks file and position then). MariaDB always
// writes GTIDs.
func classify(version, logBin, format, gtidMode string) (server, error) {
	srv := server{version: version, mariadb: isMariaDB(version)}
	if logBin != "1" && !strings.EqualFold(logBin, "ON") {
		return srv, fmt.Errorf("the server's binary log is off: start it with log_bin (and binlog_format=ROW)")
	}
	if !strings.EqualFold(format, "ROW") {
		return srv, fmt.Errorf("binlog_format is %s: CDC needs ROW (SET GLOBAL binlog_format=ROW, and in the server's configuration)", format)
	}
	srv.gtid = srv.mariadb || strings.EqualFold(gtidMode, "ON")
	return srv, nil
}

// statusQuery is the statement that reports the binlog's current file and
// position: MySQL 8.4 removed SHOW MASTER STATUS for SHOW BINARY LOG STATUS
// (present since 8.2); MariaDB and older MySQL know only the first.
func (srv server) statusQuery() string {
	if srv.mariadb {
		return "SHOW MASTER STATUS"
	}
	var major, minor int
	if _, err := fmt.Sscanf(srv.version, "%d.%d", &major, &minor); err == nil && (major > 8 || major == 8 && minor >= 2) {
		return "SHOW BINARY LOG STATUS"
	}
	return "SHOW MASTER STATUS"
}

// executedQuery reads the GTID set executed so far: MariaDB's binlog
// position list (domain-server-sequence per domain) or MySQL's
// gtid_executed (uuid:interval sets).
func (srv server) executedQuery() string {
	if srv.mariadb {
		return "SELECT @@GLOBAL.gtid_binlog_pos"
	}
	return "SELECT @@GLOBAL.gtid_executed"
}

// currentPosition reads the server's binlog position now: the file and
// position of SHOW MASTER STATUS (SHOW BINARY LOG STATUS) and the GTID set
// executed up to there.
func (srv server) currentPosition(ctx context.Context, conn *sql.Conn) (position, error) {
	var p position
	q := srv.statusQuery()
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return p, fmt.Errorf("reading the binlog position (%s needs the REPLICATION CLIENT privilege): %w", q, err)
	}
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	args := make([]any, len(cols))
	for i := range vals {
		args[i] = &vals[i]
	}
	found := rows.Next()
	if found {
		err = rows.Scan(args...)
	}
	rows.Close()
	if err != nil {
		return p, fmt.Errorf("reading the binlog position: %w", err)
	}
	if !found || len(vals) < 2 {
		return p, fmt.Errorf("the server reports no binlog position (is log_bin on?)")
	}
	p.file = vals[0].String
	n, err := number(map[string]any{"pos": vals[1].String}, "pos")
	if err != nil {
		return p, err
	}
	p.pos = uint32(n)
	if srv.gtid {
		if err := conn.QueryRowContext(ctx, srv.executedQuery()).Scan(&p.gtids); err != nil {
			return p, fmt.Errorf("reading the executed GTIDs: %w", err)
		}
	}
	return p, nil
}

// capturedTables lists the tables to capture: the listed ones (each must
// exist) or every base table of the URL's database.
func capturedTables(ctx context.Context, q mycommon.Querier, s settings) ([]mycommon.Table, error) {
	if len(s.tables) > 0 {
		out := make([]mycommon.Table, 0, len(s.tables))
		for _, t := range s.tables {
			r, err := mycommon.Resolve(ctx, q, t)
			if err != nil {
				if errors.Is(err, mycommon.ErrNoTable) {
					return nil, plugin.FieldError{Name: KeyTableIncludeList, Message: err.Error()}
				}
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	all, err := mycommon.ListTables(ctx, q, nil, func(string, string) bool { return true })
	if err != nil {
		return nil, err
	}
	out := make([]mycommon.Table, len(all))
	for i, t := range all {
		out[i] = t.Table
	}
	return out, nil
}

// checkServer connects and checks what the binlog CDC needs.
func checkServer(ctx context.Context, s settings) []plugin.FieldError {
	db, errs := mycommon.CheckConnection(ctx, s.config)
	if errs != nil {
		return errs
	}
	defer db.Close()
	if _, err := inspect(ctx, db); err != nil {
		return []plugin.FieldError{{Name: mycommon.KeyConnectionURL, Message: err.Error()}}
	}
	if _, err := capturedTables(ctx, db, s); err != nil {
		return plugin.AsFieldErrors(err, KeyTableIncludeList)
	}
	return nil
}
