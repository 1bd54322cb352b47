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

package herder

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/conveyor-dev/conveyor/runtime/guard"
)

// connContext is the plugin.ConnectorContext of a running connector
// instance; ctx ends when that instance stops.
type connContext struct {
	w   *connWorker
	ctx context.Context
}

func (c *connContext) Logger() *slog.Logger {
	return c.w.h.log.With("connector", c.w.name)
}

func (c *connContext) RequestTaskReconfiguration() { c.w.kick(kickReconfigure) }

func (c *connContext) TopicPartitions(ctx context.Context, topics []string) (map[string]int32, error) {
	if c.w.h.opts.Admin == nil {
		return nil, errors.New("no Kafka admin client configured")
	}
	details, err := c.w.h.opts.Admin.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int32, len(topics))
	for _, t := range topics {
		d, ok := details[t]
		if !ok || d.Err != nil {
			out[t] = 0 // a missing topic has no partitions yet
			continue
		}
		out[t] = int32(len(d.Partitions))
	}
	return out, nil
}

func (c *connContext) ListTopics(ctx context.Context) ([]string, error) {
	if c.w.h.opts.Admin == nil {
		return nil, errors.New("no Kafka admin client configured")
	}
	details, err := c.w.h.opts.Admin.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	// Connectors never see the cluster's internal topics, so a
	// topics.regex sink neither counts nor reports them.
	names := details.Names()
	return slices.DeleteFunc(names, c.w.h.opts.Reserved.Reserved), nil
}

func (c *connContext) RaiseError(err error) {
	c.w.mu.Lock()
	c.w.raised = err
	c.w.mu.Unlock()
	c.w.kick(kickConnectorError)
}

// Go runs a goroutine of the connector: its panic or error fails this
// connector instance (as RaiseError), never the worker. After the instance
// stopped it is only logged, so a late goroutine of an old instance cannot
// fail its successor.
func (c *connContext) Go(f func() error) {
	guard.Go("connector goroutine", f, func(err error) {
		if c.ctx.Err() != nil {
			c.Logger().Warn("connector goroutine ended after the connector stopped", "error", err)
			return
		}
		c.RaiseError(err)
	})
}
