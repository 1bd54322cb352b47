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

	"github.com/conveyor-dev/conveyor/runtime/connectors/cdcevent"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Connector is the CDC source connector: one task, whatever tasks.max says
// (cdcevent.SingleTask: the binlog is one linear log with one reader).
type Connector struct {
	cdcevent.SingleTask
}

func newConnector() *Connector {
	return &Connector{cdcevent.SingleTask{Check: func(config map[string]string) error {
		_, err := parseSettings(config)
		return err
	}}}
}

// Validate parses the configuration and checks the server: the login, the
// binary log in ROW format and the listed tables.
func (c *Connector) Validate(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parseSettings(config)
	if err != nil {
		return plugin.AsFieldErrors(err, KeyTableIncludeList)
	}
	return checkServer(ctx, s)
}
