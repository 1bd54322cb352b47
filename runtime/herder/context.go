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
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyor-dev/conveyor/runtime/guard"
)

// connContext is the plugin.ConnectorContext of a running connector
// instance; ctx ends when that instance stops. config is the connector's
// resolved config: its topic lookups log in as its admin client does.
type connContext struct {
	w      *connWorker
	ctx    context.Context
	config map[string]string

	// The running instance's admin client, made at its first look-up
	// (a sink re-reads its partition counts every few seconds) and
	// released when ctx ends.
	mu  sync.Mutex
	adm *kadm.Client
}

// admin returns the connector's admin client and the func to call when
// done with it: the instance's own while it runs, else one for this call.
func (c *connContext) admin() (*kadm.Client, func(), error) {
	if c.ctx == nil {
		return c.w.h.adminFor(c.config)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ctx.Err(); err != nil {
		return nil, nil, err
	}
	if c.adm == nil {
		adm, release, err := c.w.h.adminFor(c.config)
		if err != nil {
			return nil, nil, err
		}
		c.adm = adm
		context.AfterFunc(c.ctx, release)
	}
	return c.adm, func() {}, nil
}

func (c *connContext) Logger() *slog.Logger {
	return c.w.h.log.With("connector", c.w.name)
}

func (c *connContext) RequestTaskReconfiguration() { c.w.kick(kickReconfigure) }

// TopicPartitions counts the partitions of topics; a missing topic has
// none. A topic the connector's principal may not describe fails the call
// (kadm returns the broker's TOPIC_AUTHORIZATION_FAILED as the error).
func (c *connContext) TopicPartitions(ctx context.Context, topics []string) (map[string]int32, error) {
	adm, done, err := c.admin()
	if err != nil {
		return nil, err
	}
	defer done()
	details, err := adm.ListTopics(ctx, topics...)
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

// ListTopics lists the topics the connector's principal may describe,
// without the cluster's internal topics.
func (c *connContext) ListTopics(ctx context.Context) ([]string, error) {
	adm, done, err := c.admin()
	if err != nil {
		return nil, err
	}
	defer done()
	details, err := adm.ListTopics(ctx)
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

// adminFor returns the admin client of a connector with resolved config
// (Options.ConnectorAdmin, else the worker's) and the func that releases
// it.
func (h *Herder) adminFor(config map[string]string) (*kadm.Client, func(), error) {
	if h.opts.ConnectorAdmin != nil {
		return h.opts.ConnectorAdmin(config)
	}
	if h.opts.Admin == nil {
		return nil, nil, errors.New("no Kafka admin client configured")
	}
	return h.opts.Admin, func() {}, nil
}

// connectorAdmin is adminFor a stored connector config: resolved first,
// since its login may be a placeholder.
func (h *Herder) connectorAdmin(ctx context.Context, name string, cfg map[string]string) (*kadm.Client, func(), error) {
	if h.opts.Resolver != nil {
		var err error
		if cfg, err = h.resolveFor(ctx, name, cfg); err != nil {
			return nil, nil, fmt.Errorf("resolving config placeholders of connector %q: %w", name, err)
		}
	}
	return h.adminFor(cfg)
}
