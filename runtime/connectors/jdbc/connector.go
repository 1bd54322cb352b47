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

package jdbc

import (
	"context"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// TableConnector is the connector side of a table source: it lists the
// tables (List, the database's), reports their number as the natural task
// limit (reason Tables), spreads them over tasks by estimated size
// (Assign) and, every table.poll.interval.ms, asks for task
// reconfiguration when the set of tables changed. T is a database's
// table listing entry.
type TableConnector[T any] struct {
	// List reads the current tables with their estimates.
	List func(ctx context.Context) ([]T, error)
	// Name and Size name a table (schema.table) and give its estimate.
	Name func(T) string
	Size func(T) float64
	// Pair is the table's [schema, table] for KeyTaskTables.
	Pair func(T) [2]string

	raw    map[string]string
	cc     plugin.ConnectorContext
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	tables []T // from the last NaturalLimit
}

// StartWatching keeps the configuration for the task configs and starts
// the table watcher when every is positive.
func (c *TableConnector[T]) StartWatching(ctx context.Context, cc plugin.ConnectorContext, raw map[string]string, every time.Duration) {
	c.raw, c.cc = raw, cc
	if every <= 0 {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.wg.Add(1)
	cc.Go(func() error {
		defer c.wg.Done()
		c.watch(wctx, every)
		return nil
	})
}

func (c *TableConnector[T]) watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tables, err := c.List(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.cc.Logger().Warn("listing tables", "error", err)
			}
			continue
		}
		c.mu.Lock()
		changed := !SameNames(c.tables, tables, c.Name)
		c.mu.Unlock()
		if changed {
			c.cc.Logger().Info("the set of tables changed; requesting task reconfiguration", "tables", len(tables))
			c.cc.RequestTaskReconfiguration()
		}
	}
}

// NaturalLimit is the number of tables (reason Tables).
func (c *TableConnector[T]) NaturalLimit(ctx context.Context) (int, plugin.Reason, error) {
	tables, err := c.List(ctx)
	if err != nil {
		return 0, plugin.Tables, err
	}
	c.mu.Lock()
	c.tables = tables
	c.mu.Unlock()
	return len(tables), plugin.Tables, nil
}

// TaskConfigs spreads the tables of the last NaturalLimit over
// min(max, tables) tasks, balancing their estimated sizes (Assign).
func (c *TableConnector[T]) TaskConfigs(max int) ([]map[string]string, error) {
	c.mu.Lock()
	tables := c.tables
	c.mu.Unlock()
	groups := Assign(tables, max, c.Size, c.Name)
	pairs := make([][][2]string, len(groups))
	for i, g := range groups {
		for _, t := range g {
			pairs[i] = append(pairs[i], c.Pair(t))
		}
	}
	return TaskConfigs(c.raw, pairs)
}

// Stop stops the table watcher.
func (c *TableConnector[T]) Stop() error {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	return nil
}

// ExactlyOnceSupport: see the package function.
func (c *TableConnector[T]) ExactlyOnceSupport(config map[string]string) plugin.ExactlyOnceSupport {
	return ExactlyOnceSupport(config)
}
