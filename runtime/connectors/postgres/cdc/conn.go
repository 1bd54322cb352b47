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
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// TEMPORARY: replaced by the shared runtime/connectors/postgres code.

const (
	keyURL      = "connection.url"
	keyUser     = "connection.user"
	keyPassword = "connection.password"
)

func connectionFields() []plugin.ConfigField {
	return []plugin.ConfigField{
		{Name: keyURL, Type: plugin.TypeString, Required: true, Group: "Connection", Doc: "postgres:// URL"},
		{Name: keyUser, Type: plugin.TypeString, Group: "Connection", Doc: "user"},
		{Name: keyPassword, Type: plugin.TypePassword, Group: "Connection", Doc: "password"},
	}
}

type connSettings struct {
	url, user string
	password  plugin.Password
}

func parseConnSettings(cfg plugin.Config) (connSettings, error) {
	return connSettings{url: cfg.String(keyURL), user: cfg.String(keyUser), password: cfg.Password(keyPassword)}, nil
}

func (c connSettings) pgxConfig() (*pgx.ConnConfig, error) {
	pc, err := pgx.ParseConfig(c.url)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid PostgreSQL URL", keyURL)
	}
	if c.user != "" {
		pc.User = c.user
	}
	if c.password.Value() != "" {
		pc.Password = c.password.Value()
	}
	return pc, nil
}

func (c connSettings) connect(ctx context.Context) (*pgx.Conn, error) {
	pc, err := c.pgxConfig()
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, pc)
}

func (c connSettings) connectReplication(ctx context.Context) (*pgconn.PgConn, error) {
	pc, err := c.pgxConfig()
	if err != nil {
		return nil, err
	}
	cfg := pc.Config.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["replication"] = "database"
	return pgconn.ConnectConfig(ctx, cfg)
}

func (c connSettings) redact(err error) error { return err }
