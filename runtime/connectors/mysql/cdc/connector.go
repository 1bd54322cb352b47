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
	"maps"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Connector is the CDC source connector: one task, whatever tasks.max says.
type Connector struct {
	config map[string]string
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

// Start keeps the configuration.
func (c *Connector) Start(_ context.Context, _ plugin.ConnectorContext, config map[string]string) error {
	if _, err := parseSettings(config); err != nil {
		return err
	}
	c.config = maps.Clone(config)
	return nil
}

// NaturalLimit is 1: the binlog is one linear log with one reader.
func (c *Connector) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	return 1, plugin.SingleReader, nil
}

// TaskConfigs returns the one task's configuration.
func (c *Connector) TaskConfigs(max int) ([]map[string]string, error) {
	if max < 1 {
		return nil, nil
	}
	return []map[string]string{maps.Clone(c.config)}, nil
}

// Stop does nothing: the task holds the connections.
func (c *Connector) Stop() error { return nil }
