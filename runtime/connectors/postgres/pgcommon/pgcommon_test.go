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

package pgcommon

import (
	"context"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg)) }

func TestParseTable(t *testing.T) {
	for in, want := range map[string]Table{
		"orders":           {Name: "orders"},
		"shop.orders":      {Schema: "shop", Name: "orders"},
		`"My Shop"."a.b"`:  {Schema: "My Shop", Name: "a.b"},
		`"say ""hi"""`:     {Name: `say "hi"`},
		"Mixed-Case_topic": {Name: "Mixed-Case_topic"},
		` public . x `:     {Schema: "public", Name: "x"},
	} {
		got, err := ParseTable(in)
		if err != nil || got != want {
			t.Errorf("ParseTable(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a.b.c", "a.", ".a", `"open`, `a"b"`} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("ParseTable(%q) accepted", bad)
		}
	}
	if q := (Table{Schema: "s", Name: `x"y`}).Quoted(); q != `"s"."x""y"` {
		t.Errorf("Quoted = %s", q)
	}
}

// Connection errors name the field and never show the password, whether it
// sits in the URL or in connection.password.
func TestConnectionErrorsRedactThePassword(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cr3t-Pa55"
	db := pgtest.DatabaseName(pg.CreateDatabase(t))
	cases := []struct {
		name   string
		config map[string]string
		field  string
		want   string
	}{
		{"bad url", map[string]string{KeyConnectionURL: "postgres://u:" + secret + "@127.0.0.1:notaport/db"}, KeyConnectionURL, "invalid PostgreSQL URL"},
		{"bad scheme", map[string]string{KeyConnectionURL: "mysql://u:" + secret + "@h/db"}, KeyConnectionURL, "unsupported scheme"},
		{"wrong password in url", map[string]string{KeyConnectionURL: pg.URLAs(pgtest.Superuser, secret, db)}, KeyConnectionPassword, "refused the login"},
		{"wrong password field", map[string]string{KeyConnectionURL: pg.URLAs(pgtest.Superuser, "", db), KeyConnectionPassword: secret}, KeyConnectionPassword, "refused the login"},
		{"unreachable", map[string]string{KeyConnectionURL: "postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=2"}, KeyConnectionURL, "cannot connect"},
		{"missing database", map[string]string{KeyConnectionURL: pg.URL("nope_db")}, KeyConnectionURL, `database "nope_db" does not exist`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, errs := CheckConnection(ctx, c.config)
			if conn != nil {
				conn.Close(ctx)
				t.Fatal("connected")
			}
			found := false
			for _, fe := range errs {
				if strings.Contains(fe.Message, secret) || strings.Contains(fe.Message, pg.Password) {
					t.Fatalf("error shows the password: %s", fe.Message)
				}
				if fe.Name == c.field && strings.Contains(fe.Message, c.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want an error on %s containing %q, got %v", c.field, c.want, errs)
			}
		})
	}
	// connection.password and connection.user override the URL.
	conn, errs := CheckConnection(ctx, map[string]string{KeyConnectionURL: "jdbc:" + pg.URLAs("nobody", "", db), KeyConnectionUser: pgtest.Superuser, KeyConnectionPassword: pg.Password})
	if len(errs) > 0 {
		t.Fatalf("overrides: %v", errs)
	}
	conn.Close(ctx)
	if got := RedactURL(pg.URL(db)); strings.Contains(got, pg.Password) || !strings.Contains(got, "xxxxx") {
		t.Fatalf("RedactURL = %s", got)
	}
}

// Every mapped type decodes the same in binary and text format, NULLs stay
// NULL, and values written back through SQLValue round-trip.
func TestTypeMappingRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.CreateDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE TABLE "Types" (
		id bigint PRIMARY KEY, i2 smallint, i4 integer NOT NULL, f4 real, f8 double precision, b boolean,
		t text, v varchar(10), c char(3), u uuid, j jsonb, by bytea, n numeric(10,2), nu numeric,
		d date, tm time, ts timestamp, tz timestamptz, iv interval, arr int[])`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO "Types" VALUES
		(1, -7, 42, 1.5, 2.25, true, 'héllo', 'v', 'ab', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 1}', '\x00ff', -12.30, 3.14159,
		 '2024-02-29', '13:14:15.123456', '2024-01-02 03:04:05.678901', '2024-01-02 03:04:05.5+02', '1 day', '{1,2}'),
		(2, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := Resolve(ctx, conn, Table{Name: "Types"})
	if err != nil || tbl != (Table{Schema: "public", Name: "Types"}) {
		t.Fatalf("Resolve = %+v, %v", tbl, err)
	}
	if _, err := Resolve(ctx, conn, Table{Name: "types"}); err == nil {
		t.Fatal("Resolve folded the case of a quoted name")
	}
	cols, err := Columns(ctx, conn, tbl)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := PrimaryKey(ctx, conn, tbl)
	if err != nil || len(pk) != 1 || pk[0] != "id" {
		t.Fatalf("PrimaryKey = %v, %v", pk, err)
	}
	var mapped []Mapped
	var exprs []string
	for _, c := range cols {
		m := MapColumn(c)
		if err := m.Schema.Check(); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		mapped = append(mapped, m)
		exprs = append(exprs, m.SelectExpr())
	}
	want := map[string]any{
		"id": int64(1), "i2": int16(-7), "i4": int32(42), "f4": float32(1.5), "f8": 2.25, "b": true,
		"t": "héllo", "v": "v", "c": "ab ", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "j": `{"a": 1}`,
		"by": []byte{0, 0xff}, "n": data.Decimal{Unscaled: big.NewInt(-1230), Scale: 2}, "nu": "3.14159",
		"d":  time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		"tm": time.Date(1970, 1, 1, 13, 14, 15, 123456000, time.UTC),
		"ts": time.Date(2024, 1, 2, 3, 4, 5, 678901000, time.UTC),
		"tz": time.Date(2024, 1, 2, 1, 4, 5, 500000000, time.UTC),
		"iv": "1 day", "arr": "{1,2}",
	}
	for _, format := range []int16{pgx.BinaryFormatCode, pgx.TextFormatCode} {
		rows, err := conn.Query(ctx, "SELECT "+strings.Join(exprs, ",")+` FROM "Types" ORDER BY id`, pgx.QueryResultFormats{format})
		if err != nil {
			t.Fatal(err)
		}
		fds := rows.FieldDescriptions()
		decs := make([]Decoder, len(mapped))
		for i, m := range mapped {
			decs[i] = NewDecoder(conn.TypeMap(), m, fds[i].DataTypeOID, fds[i].Format)
		}
		n := 0
		for rows.Next() {
			n++
			st := data.NewStruct(data.StructOf("Types", fieldsOf(mapped)...))
			for i, raw := range rows.RawValues() {
				v, err := decs[i](raw)
				if err != nil {
					t.Fatalf("format %d: %v", format, err)
				}
				if err := st.Set(mapped[i].Name, v); err != nil {
					t.Fatalf("format %d: %v", format, err)
				}
				if n == 2 && mapped[i].Name != "id" && mapped[i].Name != "i4" && v != nil {
					t.Fatalf("format %d: NULL %s decoded as %v", format, mapped[i].Name, v)
				}
				if n == 1 && !data.ValuesEqual(v, want[mapped[i].Name]) {
					t.Errorf("format %d: %s = %#v, want %#v", format, mapped[i].Name, v, want[mapped[i].Name])
				}
			}
		}
		if err := rows.Err(); err != nil || n != 2 {
			t.Fatalf("format %d: %d rows, %v", format, n, err)
		}
	}
	// Back into PostgreSQL through SQLValue.
	if _, err := conn.Exec(ctx, `CREATE TABLE back (n numeric(10,2), d date, tm time, ts timestamp, j jsonb)`); err != nil {
		t.Fatal(err)
	}
	args := []any{}
	for _, kv := range []struct {
		s *data.Schema
		v any
	}{{data.DecimalSchema(2), want["n"]}, {data.DateSchema(), want["d"]}, {data.TimeSchema(), want["tm"]}, {data.TimestampSchema(), want["ts"]},
		{data.MapOf(data.StringSchema, data.Int32Schema), map[string]any{"a": int32(1)}}} {
		v, err := SQLValue(kv.s, kv.v)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, v)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO back VALUES ($1, $2, $3, $4, $5)`, args...); err != nil {
		t.Fatal(err)
	}
	var n, d, tm, ts, j string
	if err := conn.QueryRow(ctx, `SELECT n::text, d::text, tm::text, ts::text, j::text FROM back`).Scan(&n, &d, &tm, &ts, &j); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join([]string{n, d, tm, ts, j}, "|"); got != `-12.30|2024-02-29|13:14:15.123456|2024-01-02 03:04:05.678901|{"a": 1}` {
		t.Fatalf("round trip = %s", got)
	}
	_ = pgtype.Numeric{}
}

func fieldsOf(ms []Mapped) []data.Field {
	out := make([]data.Field, len(ms))
	for i, m := range ms {
		out[i] = data.F(m.Name, m.Schema)
	}
	return out
}

func TestSQLType(t *testing.T) {
	for s, want := range map[*data.Schema]string{
		data.Int8Schema: "smallint", data.Int64Schema: "bigint", data.StringSchema: "text", data.BytesSchema: "bytea",
		data.DecimalSchema(3): "numeric", data.TimestampSchema(): "timestamp", data.DateSchema(): "date", data.Float32Schema: "real",
	} {
		if got, err := SQLType(s); err != nil || got != want {
			t.Errorf("SQLType(%s) = %s, %v; want %s", s, got, err, want)
		}
	}
}
