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

// Package mycommon holds what the MySQL and MariaDB connectors share: the
// connection settings (a jdbc:mysql:// or mysql:// URL) and how they are
// checked without leaking the password, identifier quoting, the catalog
// queries, and the mapping between MySQL column types and runtime/data
// schemas and values.
package mycommon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Connection keys (the JDBC connectors' names).
const (
	KeyConnectionURL      = jdbc.KeyConnectionURL
	KeyConnectionUser     = jdbc.KeyConnectionUser
	KeyConnectionPassword = jdbc.KeyConnectionPassword
	KeyPoolMax            = jdbc.KeyPoolMax
)

// GroupConnection is the config group of the connection fields.
const GroupConnection = jdbc.GroupConnection

// ConnectionFields are the config fields of the connection, for a plugin's
// spec (see jdbc.ConnectionFields).
func ConnectionFields(poolDefault string) []plugin.ConfigField {
	return jdbc.ConnectionFields("MySQL or MariaDB URL with the database, for example jdbc:mysql://db.example:3306/shop (mysql://, jdbc:mariadb:// and mariadb:// work too; query parameters are go-sql-driver/mysql's, such as tls=true).", poolDefault)
}

// Secrets returns the secret strings of a connection config (the URL's
// password and connection.password), for redaction.
func Secrets(config map[string]string) []string {
	var out []string
	if p := config[KeyConnectionPassword]; p != "" {
		out = append(out, p)
	}
	if u, err := url.Parse(normalizeURL(config[KeyConnectionURL])); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
		}
	}
	return out
}

var schemes = []string{"mysql://", "mariadb://"}

func normalizeURL(raw string) string {
	return strings.TrimPrefix(strings.TrimSpace(raw), "jdbc:")
}

// Config parses the connection settings into a driver configuration.
// Errors name the field and never contain the password.
//
// Every session reads and writes TIMESTAMP columns in UTC (time_zone
// '+00:00'), and DATETIME columns are wall-clock times taken as UTC.
func Config(config map[string]string) (*mysql.Config, error) {
	secrets := Secrets(config)
	raw := normalizeURL(config[KeyConnectionURL])
	if raw == "" {
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: "missing: set a jdbc:mysql://host:port/database URL"}
	}
	ok := false
	for _, s := range schemes {
		ok = ok || strings.HasPrefix(raw, s)
	}
	if !ok {
		scheme, _, _ := strings.Cut(raw, "://")
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: fmt.Sprintf("unsupported scheme %q: use jdbc:mysql://host:port/database", scheme)}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: "invalid MySQL URL: " + jdbc.Redact(err.Error(), secrets...)}
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: fmt.Sprintf("the URL names no database (%q): use jdbc:mysql://host:port/database", u.Path)}
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "3306")
	}
	dsn := "tcp(" + host + ")/" + db
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: "invalid MySQL URL parameters: " + jdbc.Redact(err.Error(), secrets...)}
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if v := strings.TrimSpace(config[KeyConnectionUser]); v != "" {
		cfg.User = v
	}
	if p := config[KeyConnectionPassword]; p != "" {
		cfg.Passwd = p
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.Loc = time.UTC
	cfg.ParseTime = false // values are decoded from their text form
	cfg.InterpolateParams = true
	cfg.MultiStatements = false
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if _, ok := cfg.Params["sql_mode"]; !ok {
		// ANSI_QUOTES stays off: identifiers are quoted with backticks.
		cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"
	}
	return cfg, nil
}

// Describe names a connection target without secrets: user@host/db.
func Describe(cfg *mysql.Config) string {
	return fmt.Sprintf("%s@%s/%s", cfg.User, cfg.Addr, cfg.DBName)
}

// Open opens a connection pool of at most maxConns connections (opened
// lazily) and checks that the server answers. Errors never contain the
// password.
func Open(ctx context.Context, config map[string]string, maxConns int) (*sql.DB, error) {
	cfg, err := Config(config)
	if err != nil {
		return nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, jdbc.RedactError(fmt.Errorf("MySQL connection settings: %w", err), Secrets(config))
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(max(maxConns, 1))
	db.SetMaxIdleConns(max(maxConns, 1))
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, jdbc.RedactError(fmt.Errorf("connecting to MySQL at %s: %w", Describe(cfg), err), Secrets(config))
	}
	return db, nil
}

// CheckConnection connects with the settings and returns problems as
// field errors: a bad URL or an unreachable server on connection.url, a
// refused login on connection.user and connection.password. On success the
// open pool is returned; the caller closes it.
func CheckConnection(ctx context.Context, config map[string]string) (*sql.DB, []plugin.FieldError) {
	cfg, err := Config(config)
	if err != nil {
		return nil, plugin.AsFieldErrors(err, KeyConnectionURL)
	}
	db, err := Open(ctx, config, 1)
	if err == nil {
		return db, nil
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1045: // ER_ACCESS_DENIED_ERROR
			m := fmt.Sprintf("MySQL refused the login of user %q: %s; check connection.user and connection.password", cfg.User, jdbc.Redact(me.Message, Secrets(config)...))
			return nil, []plugin.FieldError{{Name: KeyConnectionUser, Message: m}, {Name: KeyConnectionPassword, Message: m}}
		case 1049: // ER_BAD_DB_ERROR
			return nil, []plugin.FieldError{{Name: KeyConnectionURL, Message: fmt.Sprintf("database %q does not exist on %s", cfg.DBName, cfg.Addr)}}
		case 1044: // ER_DBACCESS_DENIED_ERROR
			return nil, []plugin.FieldError{{Name: KeyConnectionURL, Message: fmt.Sprintf("user %q may not use database %q: GRANT SELECT ON `%s`.* TO the user", cfg.User, cfg.DBName, cfg.DBName)}}
		}
	}
	return nil, []plugin.FieldError{{Name: KeyConnectionURL, Message: err.Error()}}
}

// Retriable reports whether a MySQL error is worth retrying: the
// connection broke, a deadlock, a lock wait timeout, too many connections.
func Retriable(err error) bool {
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1205, 1213, 1040, 1053, 2006, 2013: // lock wait timeout, deadlock, too many connections, shutdown, gone away, lost
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, sql.ErrConnDone)
}
