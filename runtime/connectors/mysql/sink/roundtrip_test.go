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

package sink

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/offsettest"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/mariadbtest"
)

var srv *mariadbtest.Server

func TestMain(m *testing.M) { os.Exit(mariadbtest.Run(m, &srv)) }

// typesDDL has a column of every type the MySQL connectors map.
const typesDDL = `(
	id BIGINT PRIMARY KEY,
	c_tiny TINYINT, c_utiny TINYINT UNSIGNED, c_small SMALLINT, c_usmall SMALLINT UNSIGNED,
	c_medium MEDIUMINT, c_int INT, c_uint INT UNSIGNED, c_big BIGINT, c_ubig BIGINT UNSIGNED,
	c_float FLOAT, c_double DOUBLE, c_dec DECIMAL(20,6), c_dec0 DECIMAL(5,0),
	c_bit1 BIT(1), c_bit12 BIT(12),
	c_char CHAR(4), c_varchar VARCHAR(64), c_text TEXT, c_long LONGTEXT,
	c_enum ENUM('small','medium','large'), c_set SET('a','b','c'), c_json JSON,
	c_bin BINARY(4), c_varbin VARBINARY(16), c_blob BLOB,
	c_date DATE, c_time TIME(3), c_dt DATETIME(3), c_dt6 DATETIME(6), c_ts TIMESTAMP(3) NULL, c_year YEAR,
	c_uuid UUID, c_inet6 INET6
)`

// typesRows exercise the edges: extremes, NULLs, multibyte text, binary
// bytes, fractional seconds.
var typesRows = []string{
	`(1, -128, 255, -32768, 65535, -8388608, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
		1.5, 2.718281828459045, -12345678901234.123456, 99999, b'1', b'101010101010',
		'abcd', 'grüße ✓', 'a text', REPEAT('x', 70000), 'large', 'a,c', '{"k": [1, 2, {"n": null}]}',
		x'00ff10ee', x'deadbeef', x'000102',
		'1000-01-01', '23:59:59.999', '9999-12-31 23:59:59.999', '2024-05-06 07:08:09.123456', '2038-01-19 03:14:07.999', 2155,
		'123e4567-e89b-12d3-a456-426614174000', '2001:db8::1')`,
	`(2, 127, 0, 32767, 0, 8388607, 2147483647, 0, 9223372036854775807, 0,
		-0.25, -1e300, 0.000001, -99999, b'0', b'000000000001',
		'', '', '', '', 'small', '', '[]',
		x'00000000', x'', x'',
		'2024-02-29', '00:00:00', '1970-01-01 00:00:00.001', '1970-01-01 00:00:01.000000', '1970-01-01 00:00:01', 1901,
		'00000000-0000-0000-0000-000000000000', '::')`,
	`(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
}

func columnNames(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// Every supported column type from MariaDB through Kafka (kfake, the
// worker's JSON converter with schemas) into the MySQL sink and back,
// compared value for value with NULL-safe equality, column by column: once
// into a table of the same definition (upsert by record key) and once
// into a table the sink creates (auto.create). DATETIME(6) travels as a
// Connect Timestamp, in milliseconds: the row with microseconds is the one
// documented difference, checked as such.
func TestTypeRoundTripThroughKafka(t *testing.T) {
	srcDB, dstDB := srv.CreateDatabase(t), srv.CreateDatabase(t)
	srv.ExecT(t, srcDB, "CREATE TABLE alltypes "+typesDDL, "INSERT INTO alltypes VALUES "+strings.Join(typesRows, ", "))
	srv.ExecT(t, dstDB, "CREATE TABLE rt_alltypes "+typesDDL)

	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "rt_alltypes"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srcCfg := map[string]string{
		"name": "rt-source", plugin.KeyConnectorClass: tablesource.Class, jdbc.KeyConnectionURL: "jdbc:" + srv.URL(srcDB),
		jdbc.KeyMode: jdbc.ModeIncrementing, jdbc.KeyIncrementingColumn: "id", jdbc.KeyTableWhitelist: "alltypes",
		jdbc.KeyTopicPrefix: "rt_", jdbc.KeyPollIntervalMs: "100", jdbc.KeyTablePollIntervalMs: "0",
	}
	src, err := task.New(task.Spec{Common: task.Common{
		ID: task.ID{Connector: "rt-source"}, Config: srcCfg,
		Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Status: task.StatusFunc(func(task.ID, task.State, string) {}),
		OffsetFlushInterval: 100 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
	}, Plugin: tablesource.Plugin(), Connector: srcCfg, Offsets: offsettest.New()})
	tasktest.Start(t, src, err)

	sinkCfg := func(name, format string, extra ...string) map[string]string {
		m := map[string]string{
			"name": name, plugin.KeyConnectorClass: Class, plugin.KeyTopics: "rt_alltypes", jdbc.KeyConnectionURL: "jdbc:" + srv.URL(dstDB),
			jdbc.KeyInsertMode: jdbc.InsertModeUpsert, jdbc.KeyPKMode: jdbc.PKModeRecordKey, jdbc.KeyTableNameFormat: format,
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	for _, cfg := range []map[string]string{sinkCfg("rt-sink", "${topic}"), sinkCfg("rt-sink-created", "created_${topic}", jdbc.KeyAutoCreate, "true")} {
		if res := plugin.ValidateConfig(context.Background(), Plugin(), cfg); res.ErrorCount != 0 {
			t.Fatalf("valid sink config refused: %v", res.Errors())
		}
		r, err := task.New(task.Spec{Common: task.Common{
			ID: task.ID{Connector: cfg["name"]}, Config: cfg,
			Kafka:  []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.HeartbeatInterval(100 * time.Millisecond)},
			Status: task.StatusFunc(func(task.ID, task.State, string) {}), OffsetFlushInterval: 200 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
		}, Plugin: Plugin(), Connector: cfg})
		tasktest.Start(t, r, err)
	}

	db, err := sql.Open("mysql", srv.DSN(dstDB))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, table := range []string{"rt_alltypes", "created_rt_alltypes"} {
		err := testkit.Until(ctx, 30*time.Second, table+" holds the 3 rows", func(ctx context.Context) (bool, error) {
			var n int
			err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
			return n == len(typesRows), err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Same definition: every column equal (NULL-safe), row by row, except
	// the documented millisecond precision of DATETIME(6).
	cols := columnNames(t, db, "rt_alltypes")
	for _, col := range cols {
		want := len(typesRows)
		var n int
		q := fmt.Sprintf("SELECT COUNT(*) FROM `%s`.alltypes s JOIN `%s`.rt_alltypes d ON s.id = d.id AND s.`%s` <=> d.`%s`", srcDB, dstDB, col, col)
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if col == "c_dt6" {
			want-- // row 1's microseconds: checked below
		}
		if n != want {
			var sv, dv sql.NullString
			_ = db.QueryRow(fmt.Sprintf("SELECT CAST(s.`%s` AS CHAR), CAST(d.`%s` AS CHAR) FROM `%s`.alltypes s JOIN `%s`.rt_alltypes d ON s.id = d.id AND NOT (s.`%s` <=> d.`%s`) LIMIT 1", col, col, srcDB, dstDB, col, col)).Scan(&sv, &dv)
			t.Errorf("column %s: %d of %d rows equal after the round trip; first difference: source %v, sink %v", col, n, want, sv, dv)
		}
	}
	var dt6 string
	if err := db.QueryRow("SELECT CAST(c_dt6 AS CHAR) FROM rt_alltypes WHERE id = 1").Scan(&dt6); err != nil {
		t.Fatal(err)
	}
	if dt6 != "2024-05-06 07:08:09.123000" {
		t.Errorf("DATETIME(6) 07:08:09.123456 arrived as %s; want the Connect Timestamp's milliseconds, 07:08:09.123000", dt6)
	}
	// auto.create: the same values through the types the sink chose.
	for _, col := range cols {
		if col == "c_dt6" || col == "c_bit12" || col == "c_bin" {
			continue // milliseconds (above); BIT(12) and BINARY(4) become LONGBLOB bytes: compared below
		}
		var n int
		q := fmt.Sprintf("SELECT COUNT(*) FROM `%s`.alltypes s JOIN `%s`.created_rt_alltypes d ON s.id = d.id AND s.`%s` <=> d.`%s`", srcDB, dstDB, col, col)
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != len(typesRows) {
			t.Errorf("auto.create: column %s: %d of %d rows equal", col, n, len(typesRows))
		}
	}
	var bits, bin string
	if err := db.QueryRow("SELECT HEX(c_bit12), HEX(c_bin) FROM created_rt_alltypes WHERE id = 1").Scan(&bits, &bin); err != nil {
		t.Fatal(err)
	}
	if bits != "0AAA" || bin != "00FF10EE" {
		t.Errorf("auto.create: BIT(12) b'101010101010' as %s (want 0AAA), BINARY(4) as %s (want 00FF10EE)", bits, bin)
	}
}
