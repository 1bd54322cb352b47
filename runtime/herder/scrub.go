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
// worker (configprovider.Resolver implements it). A Resolver that is also a
// Scrubber has every trace, task config and validation message that the
// herder writes passed through Scrub.
type Scrubber interface {
	Scrub(msg string) string
}

// Checker refuses placeholders the worker may not resolve (a ${file:} or
// ${env:} the cluster's owner did not allow), naming the config key.
type Checker interface {
	Check(config map[string]string) error
}

func (h *Herder) scrub(msg string) string {
	if s, ok := h.opts.Resolver.(Scrubber); ok && msg != "" {
		return s.Scrub(msg)
	}
	return msg
}

func (h *Herder) scrubConfig(cfg map[string]string) map[string]string {
	s, ok := h.opts.Resolver.(Scrubber)
	if !ok {
		return cfg
	}
	for k, v := range cfg {
		cfg[k] = s.Scrub(v)
	}
	return cfg
}

// resolveForValidation returns the config to validate a write against:
// resolved where the placeholders resolve (resolved values are not kept,
// and messages about them are scrubbed), the config as written where they
// do not yet (a Secret created later), and an error for a placeholder the
// worker refuses to resolve at all.
func (h *Herder) resolveForValidation(ctx context.Context, cfg map[string]string) (map[string]string, error) {
	if h.opts.Resolver == nil {
		return cfg, nil
	}
	if c, ok := h.opts.Resolver.(Checker); ok {
		if err := c.Check(cfg); err != nil {
			return nil, fmt.Errorf("Connector configuration is invalid: %w", err)
		}
	}
	r, err := h.opts.Resolver.Resolve(ctx, cfg)
	if err != nil {
		return cfg, nil
	}
	return r, nil
}
