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
	var srv server
	var logBin, format string
	if err := q.QueryRowContext(ctx, "SELECT VERSION(), @@log_bin, @@binlog_format").Scan(&srv.version, &logBin, &format); err != nil {
		return srv, fmt.Errorf("reading the server's binlog settings: %w", err)
	}
	srv.mariadb = strings.Contains(strings.ToLower(srv.version), "mariadb")
	if logBin != "1" && !strings.EqualFold(logBin, "ON") {
		return srv, fmt.Errorf("the server's binary log is off: start it with log_bin (and binlog_format=ROW)")
	}
	if !strings.EqualFold(format, "ROW") {
		return srv, fmt.Errorf("binlog_format is %s: CDC needs ROW (SET GLOBAL binlog_format=ROW, and in the server's configuration)", format)
	}
	srv.gtid = srv.mariadb
	if !srv.mariadb {
		var mode string
		if err := q.QueryRowContext(ctx, "SELECT @@gtid_mode").Scan(&mode); err == nil {
			srv.gtid = strings.EqualFold(mode, "ON")
		}
	}
	return srv, nil
}

// currentPosition reads the server's binlog position now: the file and
// position of SHOW MASTER STATUS and the GTID set executed up to there.
func (srv server) currentPosition(ctx context.Context, conn *sql.Conn) (position, error) {
	var p position
	rows, err := conn.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return p, fmt.Errorf("reading the binlog position (SHOW MASTER STATUS needs the REPLICATION CLIENT privilege): %w", err)
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
		q := "SELECT @@GLOBAL.gtid_executed"
		if srv.mariadb {
			q = "SELECT @@GLOBAL.gtid_binlog_pos"
		}
		if err := conn.QueryRowContext(ctx, q).Scan(&p.gtids); err != nil {
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
