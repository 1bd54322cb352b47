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

package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/conveyor-dev/conveyor/test/localcluster"
)

// mysqlPipeline prepares the mariadb scenario: a database on the MariaDB
// server with the source table src, a feeder that inserts myRecords rows
// into it at myRate per second (ids in commit order: one connection), and
// the MySqlTableSource → MySqlSink pair into table dst of the same
// database. It returns the connectors' manifest, the counter of dst and
// the source's topic.
func mysqlPipeline(t *testing.T, ctx context.Context, name string) (string, *rowCounter, string) {
	t.Helper()
	database, err := my.NewDatabase(ctx, "chaos_"+name)
	if err != nil {
		t.Fatal(err)
	}
	if err := my.Exec(ctx, database, "CREATE TABLE src (id BIGINT AUTO_INCREMENT PRIMARY KEY, n BIGINT NOT NULL, pad VARCHAR(16) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", my.DSN(database))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	feedCtx, stop := context.WithCancel(context.Background())
	fed := make(chan error, 1)
	t.Cleanup(func() {
		stop()
		if err := <-fed; err != nil {
			t.Errorf("feeding the source table: %v", err)
		}
	})
	go func() { fed <- feed(feedCtx, db) }()

	prefix := "chaos-" + name + "."
	url := "jdbc:" + my.URL(database)
	manifest := localcluster.MySqlPipeline{Name: name, Cluster: clusterName, SourceURL: url, Table: "src", TopicPrefix: prefix,
		SinkTasks: partitions, SinkURL: url, SinkTable: "dst"}.Manifest()
	counter := newRowCounter(func(ctx context.Context) (rows, distinct int64, err error) {
		err = db.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT id) FROM dst").Scan(&rows, &distinct)
		return rows, distinct, err
	})
	return manifest, counter, prefix + "src"
}

// feed inserts myRecords rows into src, a batch every 20ms, on one
// connection; it stops early when ctx ends.
func feed(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	const tick = 20 * time.Millisecond
	batch := myRate * int(tick/time.Millisecond) / 1000
	tk := time.NewTicker(tick)
	defer tk.Stop()
	var q strings.Builder
	for n := 0; n < myRecords; {
		select {
		case <-ctx.Done():
			return nil
		case <-tk.C: // the feeder's pace
		}
		q.Reset()
		q.WriteString("INSERT INTO src (n, pad) VALUES ")
		for i := 0; i < batch && n < myRecords; i++ {
			if i > 0 {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "(%d,'%016d')", n, n)
			n++
		}
		if _, err := conn.ExecContext(ctx, q.String()); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("inserting row %d: %w", n, err)
		}
	}
	return nil
}
