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

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
)

// conn holds the connection settings (the shared connection.* keys).
type conn struct {
	config  map[string]string
	secrets []string
}

func newConn(config map[string]string) conn {
	c := conn{config: map[string]string{}, secrets: pgcommon.Secrets(config)}
	for _, k := range []string{pgcommon.KeyConnectionURL, pgcommon.KeyConnectionUser, pgcommon.KeyConnectionPassword} {
		if v, ok := config[k]; ok {
			c.config[k] = v
		}
	}
	return c
}

// connect opens a regular connection.
func (c conn) connect(ctx context.Context) (*pgx.Conn, error) {
	return pgcommon.Connect(ctx, c.config)
}

// connectReplication opens a logical replication connection (replication=database).
func (c conn) connectReplication(ctx context.Context) (*pgconn.PgConn, error) {
	cc, err := pgcommon.ConnConfig(c.config)
	if err != nil {
		return nil, err
	}
	cfg := cc.Config.Copy()
	cfg.RuntimeParams["replication"] = "database"
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, c.redact(fmt.Errorf("opening a replication connection to PostgreSQL at %s: %w", pgcommon.Describe(cc), err))
	}
	return pc, nil
}

// redact hides the password in an error's text.
func (c conn) redact(err error) error { return pgcommon.RedactError(err, c.secrets) }
