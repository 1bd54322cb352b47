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

package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var pg *Server

func TestMain(m *testing.M) { os.Exit(Run(m, &pg)) }

// The server runs as conveyor-pg with logical WAL, and each test gets its
// own database reachable with the superuser's password.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := pg.CreateDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var wal, user, db string
	if err := conn.QueryRow(ctx, "SELECT current_setting('wal_level'), current_user, current_database()").Scan(&wal, &user, &db); err != nil {
		t.Fatal(err)
	}
	if wal != "logical" || user != Superuser {
		t.Fatalf("wal_level=%s user=%s, want logical and %s", wal, user, Superuser)
	}
	if os.Geteuid() == 0 {
		st, err := os.Stat(pg.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if !ownedBy(st, User) {
			t.Fatalf("data folder %s is not owned by %s", pg.Dir, User)
		}
	}
	if _, err := pgx.Connect(ctx, pg.URLAs(Superuser, "wrong", db)); err == nil {
		t.Fatal("a wrong password was accepted: authentication is not enforced")
	}
	other := pg.CreateDatabase(t)
	if other == url {
		t.Fatal("two tests got the same database")
	}
}
