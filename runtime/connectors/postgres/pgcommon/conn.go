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

// Package pgcommon holds what the PostgreSQL connectors (table source,
// sink, CDC source) share: the connection settings and how they are
// validated without leaking the password, identifier quoting, and the
// mapping between PostgreSQL column types and runtime/data schemas and
// values.
package pgcommon

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Connection configuration keys, shared by every PostgreSQL connector.
const (
	// KeyConnectionURL is a postgres:// (or postgresql://, or jdbc:postgresql://)
	// URL, or a libpq key=value string. Its password may be a placeholder
	// such as ${secret:name:key}, resolved by the worker before the
	// connector sees it.
	KeyConnectionURL = jdbc.KeyConnectionURL
	// KeyConnectionUser overrides the URL's user.
	KeyConnectionUser = jdbc.KeyConnectionUser
	// KeyConnectionPassword overrides the URL's password.
	KeyConnectionPassword = jdbc.KeyConnectionPassword
	// KeyPoolMax caps the connections a task opens.
	KeyPoolMax = jdbc.KeyPoolMax
)

// GroupConnection is the config group of the connection fields.
const GroupConnection = jdbc.GroupConnection

// ConnectionFields are the config fields of the connection, for a plugin's
// spec (see jdbc.ConnectionFields).
func ConnectionFields(poolDefault string) []plugin.ConfigField {
	return jdbc.ConnectionFields("PostgreSQL URL, for example postgres://user@db.example:5432/shop?sslmode=require (jdbc:postgresql:// and libpq key=value strings work too).", poolDefault)
}

// Secrets returns the secret strings of a connection config (the URL's
// password and connection.password), for redaction.
func Secrets(config map[string]string) []string {
	var out []string
	if p := config[KeyConnectionPassword]; p != "" {
		out = append(out, p)
	}
	raw := normalizeURL(config[KeyConnectionURL])
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
		}
	}
	if cfg, err := pgconn.ParseConfig(raw); err == nil && cfg.Password != "" {
		out = append(out, cfg.Password)
	}
	// A URL too broken to parse may still carry a password.
	if m := urlPassword.FindStringSubmatch(raw); m != nil && m[1] != "" {
		out = append(out, m[1])
	}
	return out
}

var (
	urlPassword   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^:/@]*:([^@/]*)@`)
	parseErrorPfx = regexp.MustCompile("^cannot parse `[^`]*`: ")
)

// Redact replaces every secret in s with xxxxx (see jdbc.Redact).
func Redact(s string, secrets ...string) string { return jdbc.Redact(s, secrets...) }

// RedactURL returns the URL with its password replaced by xxxxx.
func RedactURL(raw string) string {
	u, err := url.Parse(normalizeURL(raw))
	if err != nil || u.User == nil {
		return Redact(raw, Secrets(map[string]string{KeyConnectionURL: raw})...)
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// RedactError wraps err so that its text never shows the secrets.
func RedactError(err error, secrets []string) error { return jdbc.RedactError(err, secrets) }

func normalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	return strings.TrimPrefix(raw, "jdbc:")
}

// ConnConfig parses the connection settings. Errors name the field and
// never contain the password.
func ConnConfig(config map[string]string) (*pgx.ConnConfig, error) {
	secrets := Secrets(config)
	raw := normalizeURL(config[KeyConnectionURL])
	if raw == "" {
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: "missing: set a postgres:// URL"}
	}
	if strings.Contains(raw, "://") && !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") {
		scheme, _, _ := strings.Cut(raw, "://")
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: fmt.Sprintf("unsupported scheme %q: use postgres://host:port/database", scheme)}
	}
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		// The message without the connection string.
		msg := parseErrorPfx.ReplaceAllString(err.Error(), "")
		return nil, plugin.FieldError{Name: KeyConnectionURL, Message: "invalid PostgreSQL URL " + RedactURL(config[KeyConnectionURL]) + ": " + Redact(msg, secrets...)}
	}
	if u := strings.TrimSpace(config[KeyConnectionUser]); u != "" {
		cfg.User = u
	}
	if p, ok := config[KeyConnectionPassword]; ok && p != "" {
		cfg.Password = p
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "conveyor"
	}
	return cfg, nil
}

// Connect opens one connection. Errors never contain the password.
func Connect(ctx context.Context, config map[string]string) (*pgx.Conn, error) {
	cfg, err := ConnConfig(config)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, RedactError(fmt.Errorf("connecting to PostgreSQL at %s: %w", Describe(cfg), err), Secrets(config))
	}
	return conn, nil
}

// Pool opens a pool of at most maxConns connections (connections open
// lazily). Errors never contain the password.
func Pool(ctx context.Context, config map[string]string, maxConns int) (*pgxpool.Pool, error) {
	cc, err := ConnConfig(config)
	if err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, fmt.Errorf("pool config: %w", err)
	}
	pc.ConnConfig = cc
	pc.MaxConns = int32(max(maxConns, 1))
	pc.MinConns = 0
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, RedactError(fmt.Errorf("connecting to PostgreSQL at %s: %w", Describe(cc), err), Secrets(config))
	}
	return pool, nil
}

// Describe names a connection target without secrets: user@host:port/db.
func Describe(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// CheckConnection connects with the settings and returns problems as
// field errors: a bad URL or an unreachable server on connection.url, a
// refused login on connection.user and connection.password. On success
// the open connection is returned; the caller closes it.
func CheckConnection(ctx context.Context, config map[string]string) (*pgx.Conn, []plugin.FieldError) {
	cfg, err := ConnConfig(config)
	if err != nil {
		return nil, FieldErrors(err, KeyConnectionURL)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err == nil {
		return conn, nil
	}
	msg := Redact(err.Error(), Secrets(config)...)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			m := fmt.Sprintf("PostgreSQL refused the login of user %q: %s; check connection.user and connection.password", cfg.User, pgErr.Message)
			return nil, []plugin.FieldError{{Name: KeyConnectionUser, Message: m}, {Name: KeyConnectionPassword, Message: m}}
		case "3D000": // invalid_catalog_name
			return nil, []plugin.FieldError{{Name: KeyConnectionURL, Message: fmt.Sprintf("database %q does not exist on %s:%d", cfg.Database, cfg.Host, cfg.Port)}}
		}
	}
	return nil, []plugin.FieldError{{Name: KeyConnectionURL, Message: fmt.Sprintf("cannot connect to PostgreSQL at %s: %s", Describe(cfg), msg)}}
}

// FieldErrors returns the problems in err as field errors: those of a
// *plugin.ConfigError, a plugin.FieldError, or else err on field fallback.
func FieldErrors(err error, fallback string) []plugin.FieldError {
	return plugin.AsFieldErrors(err, fallback)
}
