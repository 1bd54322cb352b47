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

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// validateOpts checks source connectors' exactly-once keys against the
// worker's mode, paths and credentials against its grants, topic keys against the
// reserved topics and client overrides against the worker's policy.
func (h *Herder) validateOpts() []plugin.ValidateOption {
	mode := h.opts.ExactlyOnce
	if mode == "" {
		mode = plugin.WorkerExactlyOnceDisabled
	}
	opts := []plugin.ValidateOption{plugin.WithWorkerExactlyOnce(mode), plugin.WithGrants(h.opts.Grants), plugin.WithReservedTopics(h.opts.Reserved),
		plugin.WithClientOverridePolicy(h.opts.ClientOverrides)}
	if h.opts.ClientSecurity != nil {
		opts = append(opts, plugin.WithWorkerSecurity(*h.opts.ClientSecurity))
	}
	return opts
}

// exactlyOnceSource reports whether a connector's tasks run
// transactionally: a source connector on a worker with exactly-once on.
func (h *Herder) exactlyOnceSource(name string) bool {
	if h.opts.ExactlyOnce != plugin.WorkerExactlyOnceEnabled {
		return false
	}
	cfg, ok := h.opts.Configs.Connector(name)
	if !ok {
		return false
	}
	p, ok := h.opts.Plugins.Lookup(cfg[plugin.KeyConnectorClass])
	return ok && p.Kind == plugin.KindSource
}

// putTaskConfigs writes a connector's new task configs (leader only). For
// an exactly-once source connector it is Kafka's fencing round
// (KIP-618): first the producers of every task of the earlier generation
// are fenced (its task count record, or its committed task configs, say
// how many), so none of them can commit again; then the configs are
// written; then the task count record, which records that the new
// generation's predecessors are fenced. A task whose id survives is
// fenced again by its own new instance; a task that no longer exists is
// fenced only here.
func (h *Herder) putTaskConfigs(ctx context.Context, name string, cfgs []map[string]string) error {
	eos := h.exactlyOnceSource(name)
	if eos {
		prev := len(h.opts.Configs.TaskConfigs(name))
		if n, ok := h.opts.Configs.TaskCount(name); ok && n > prev {
			prev = n
		}
		if prev > 0 {
			if h.opts.FenceTasks == nil {
				return errors.New("exactly-once is enabled but the herder has no FenceTasks")
			}
			if err := h.opts.FenceTasks(ctx, name, prev); err != nil {
				return fmt.Errorf("fencing the transactional producers of the %d earlier tasks of connector %s: %w", prev, name, err)
			}
			h.log.Info("fenced the earlier tasks' producers", "connector", name, "tasks", prev)
		}
	}
	if err := h.opts.Configs.PutTaskConfigs(ctx, name, cfgs); err != nil {
		return err
	}
	if eos {
		if err := h.opts.Configs.PutTaskCount(ctx, name, len(cfgs)); err != nil {
			return fmt.Errorf("writing the task count record of connector %s: %w", name, err)
		}
	}
	return nil
}
