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
	"fmt"
)

// Scrubber hides resolved placeholder values in text that leaves the
// worker (configprovider.Resolver implements it). Scrub hides every value
// the worker resolved, for outputs all connectors share (logs); ScrubFor
// hides the values resolved for one connector, for that connector's own
// outputs (status traces, task configs, validation messages), so one
// connector's values never rewrite another's data.
type Scrubber interface {
	Scrub(msg string) string
	ScrubFor(connector, msg string) string
}

// ConnectorResolver resolves a config on behalf of one connector, so its
// values are remembered for ScrubFor (configprovider.Resolver implements it).
type ConnectorResolver interface {
	ResolveFor(ctx context.Context, connector string, config map[string]string) (map[string]string, error)
}

// Checker refuses placeholders the worker may not resolve (a ${file:} or
// ${env:} the cluster's owner did not allow), naming the config key.
type Checker interface {
	Check(config map[string]string) error
}

// scrubFor hides the values resolved for connector in msg.
func (h *Herder) scrubFor(connector, msg string) string {
	if s, ok := h.opts.Resolver.(Scrubber); ok && msg != "" {
		return s.ScrubFor(connector, msg)
	}
	return msg
}

// scrubConfigFor hides the values resolved for connector in cfg (in place).
func (h *Herder) scrubConfigFor(connector string, cfg map[string]string) map[string]string {
	s, ok := h.opts.Resolver.(Scrubber)
	if !ok {
		return cfg
	}
	for k, v := range cfg {
		cfg[k] = s.ScrubFor(connector, v)
	}
	return cfg
}

// resolveFor resolves cfg on behalf of connector.
func (h *Herder) resolveFor(ctx context.Context, connector string, cfg map[string]string) (map[string]string, error) {
	if r, ok := h.opts.Resolver.(ConnectorResolver); ok {
		return r.ResolveFor(ctx, connector, cfg)
	}
	return h.opts.Resolver.Resolve(ctx, cfg)
}

// resolveForValidation returns the config to validate a write against:
// resolved where the placeholders resolve (resolved values are not kept,
// and messages about them are scrubbed), the config as written where they
// do not yet (a Secret created later), and an error for a placeholder the
// worker refuses to resolve at all.
func (h *Herder) resolveForValidation(ctx context.Context, connector string, cfg map[string]string) (map[string]string, error) {
	if h.opts.Resolver == nil {
		return cfg, nil
	}
	if c, ok := h.opts.Resolver.(Checker); ok {
		if err := c.Check(cfg); err != nil {
			return nil, fmt.Errorf("Connector configuration is invalid: %w", err)
		}
	}
	r, err := h.resolveFor(ctx, connector, cfg)
	if err != nil {
		return cfg, nil
	}
	return r, nil
}
