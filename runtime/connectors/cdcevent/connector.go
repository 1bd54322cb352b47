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

package cdcevent

import (
	"context"
	"maps"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// SingleTask is the part of a CDC source connector that every database
// shares: a change log has one reader, so the connector runs exactly one
// task, whatever tasks.max says, with the connector's whole configuration.
// A connector embeds it and adds Validate.
type SingleTask struct {
	// Check parses a configuration; Start refuses one it rejects.
	Check  func(config map[string]string) error
	config map[string]string
}

// Start checks and keeps the configuration.
func (c *SingleTask) Start(_ context.Context, _ plugin.ConnectorContext, config map[string]string) error {
	if err := c.Check(config); err != nil {
		return err
	}
	c.config = maps.Clone(config)
	return nil
}

// NaturalLimit is 1: the log has one reader (a binlog replica, a
// replication slot).
func (c *SingleTask) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	return 1, plugin.SingleReader, nil
}

// TaskConfigs returns the one task's configuration.
func (c *SingleTask) TaskConfigs(max int) ([]map[string]string, error) {
	if max < 1 {
		return nil, nil
	}
	return []map[string]string{maps.Clone(c.config)}, nil
}

// Stop does nothing: the task holds the connections.
func (c *SingleTask) Stop() error { return nil }
