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
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/cdcevent"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// validateTimeout bounds the server checks of Validate.
const validateTimeout = 15 * time.Second

// Connector is the CDC source connector: one task, whatever tasks.max says
// (cdcevent.SingleTask: a replication slot has exactly one reader).
type Connector struct {
	cdcevent.SingleTask
}

func newConnector() *Connector {
	return &Connector{cdcevent.SingleTask{Check: func(config map[string]string) error {
		_, err := parseSettings(config)
		return err
	}}}
}

// Validate connects to the server and checks what logical replication
// needs: wal_level, the REPLICATION privilege, the listed tables, the
// publication and a free slot.
func (c *Connector) Validate(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parseSettings(config)
	if err != nil {
		return pgcommon.FieldErrors(err, KeyTableIncludeList)
	}
	ctx, cancel := context.WithTimeout(ctx, validateTimeout)
	defer cancel()
	return checkServer(ctx, s)
}

// ExactlyOnceSupport: the offsets are WAL positions and the slot is
// confirmed only in Commit, which an exactly-once task calls after the
// transaction that carried the position committed; a restarted task
// streams from the stored position again.
func (c *Connector) ExactlyOnceSupport(map[string]string) plugin.ExactlyOnceSupport {
	return plugin.ExactlyOnceSupported
}
