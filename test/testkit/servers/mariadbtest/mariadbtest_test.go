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

package mariadbtest

import (
	"context"
	"database/sql"
	"os"
	"os/user"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

var srv *Server

func TestMain(m *testing.M) { os.Exit(Run(m, &srv)) }

// The server runs as mysql with a row-based binary log carrying GTIDs, and
// each test gets its own database reachable with the test account's
// password (a wrong one is refused).
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := srv.CreateDatabase(t)
	db, err := sql.Open("mysql", srv.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logBin, format, gtidPos, current string
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin, @@binlog_format, @@gtid_binlog_pos, DATABASE()").Scan(&logBin, &format, &gtidPos, &current); err != nil {
		t.Fatal(err)
	}
	srv.ExecT(t, name, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	var after string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if logBin != "1" || format != "ROW" || current != name || after == "" || after == gtidPos {
		t.Fatalf("log_bin=%s binlog_format=%s database=%s gtid_binlog_pos %q → %q; want 1, ROW, %s and a new GTID", logBin, format, current, name, gtidPos, after)
	}
	if os.Geteuid() == 0 {
		st, err := os.Stat(srv.Dir + "/data")
		if err != nil {
			t.Fatal(err)
		}
		u, err := user.Lookup(User)
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); strconv.FormatUint(uint64(sys.Uid), 10) != u.Uid {
			t.Fatalf("data folder is owned by uid %d, want %s (%s)", sys.Uid, User, u.Uid)
		}
	}
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr = Superuser, "wrong", "tcp", srv.Host+":"+strconv.Itoa(srv.Port)
	bad, _ := sql.Open("mysql", c.FormatDSN())
	defer bad.Close()
	if err := bad.PingContext(ctx); err == nil {
		t.Fatal("a wrong password was accepted: authentication is not enforced")
	}
	if other := srv.CreateDatabase(t); other == name {
		t.Fatal("two tests got the same database")
	}
}
