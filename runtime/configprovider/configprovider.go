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

// Package configprovider resolves placeholders in connector configuration:
//
//	${secret:<name>:<key>}   key of a Kubernetes Secret in the worker's namespace
//	${file:<path>:<key>}     key of a properties file
//	${file:<path>}           whole content of a file (trailing newline removed)
//	${env:<VAR>}             environment variable
//
// The config topic, REST responses, statuses and logs only ever hold the
// placeholders; the worker resolves them into a copy of the configuration
// when a connector or task starts. Use [Redact] before logging a resolved
// configuration.
package configprovider

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Provider supplies values for one placeholder prefix.
type Provider interface {
	// Get returns the values of keys at path (a Secret name, a file path,
	// or "" for env). It must return every key or an error; errors must not
	// contain secret values.
	Get(ctx context.Context, path string, keys []string) (map[string]string, error)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context, path string, keys []string) (map[string]string, error)

// Get calls f.
func (f ProviderFunc) Get(ctx context.Context, path string, keys []string) (map[string]string, error) {
	return f(ctx, path, keys)
}

// Placeholder is one ${provider:path:key} reference.
type Placeholder struct {
	// Raw is the placeholder text, for example "${secret:db:password}".
	Raw string
	// Provider is the prefix, for example "secret".
	Provider string
	// Path is the middle part ("" when there are only two parts).
	Path string
	// Key is the last part.
	Key string
}

var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z][A-Za-z0-9_.-]*):([^}]*)\}`)

// Parse returns the placeholders in s, in order.
func Parse(s string) []Placeholder {
	var out []Placeholder
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		p := Placeholder{Raw: m[0], Provider: m[1]}
		rest := m[2]
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			p.Path, p.Key = rest[:i], rest[i+1:]
		} else {
			p.Key = rest
		}
		out = append(out, p)
	}
	return out
}

// ContainsPlaceholder reports whether s holds a ${provider:...} placeholder.
func ContainsPlaceholder(s string) bool { return placeholderRE.MatchString(s) }

// Resolver replaces placeholders using registered providers.
type Resolver struct {
	providers map[string]Provider
	// strict (distributed mode) refuses placeholders outside the access
	// lists instead of leaving them unresolved (see Check).
	strict bool
	// seen remembers every value resolved, for Scrub.
	seen scrubSet
	mu   sync.RWMutex
	// byConnector remembers the values resolved for each connector, for
	// ScrubFor.
	byConnector map[string]*scrubSet
}

// NewResolver returns a resolver with the given providers by prefix.
func NewResolver(providers map[string]Provider) *Resolver {
	r := &Resolver{providers: map[string]Provider{}}
	for k, v := range providers {
		r.providers[k] = v
	}
	return r
}

// Register adds or replaces the provider for a prefix.
func (r *Resolver) Register(prefix string, p Provider) { r.providers[prefix] = p }

// Providers returns the registered prefixes, sorted.
func (r *Resolver) Providers() []string {
	out := make([]string, 0, len(r.providers))
	for k := range r.providers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type group struct{ provider, path string }

// Resolve returns a copy of config with every placeholder of a registered
// provider replaced. Placeholders of unknown providers are left as they
// are (as Kafka does). Each provider is asked once per path with all keys
// needed (one Secret GET per Secret). The input map is never modified.
func (r *Resolver) Resolve(ctx context.Context, config map[string]string) (map[string]string, error) {
	return r.resolve(ctx, nil, config)
}

// ResolveFor is Resolve for connector's config: the values it resolves are
// hidden by ScrubFor(connector, ...) as well as by Scrub.
func (r *Resolver) ResolveFor(ctx context.Context, connector string, config map[string]string) (map[string]string, error) {
	return r.resolve(ctx, r.connectorSet(connector), config)
}

func (r *Resolver) resolve(ctx context.Context, own *scrubSet, config map[string]string) (map[string]string, error) {
	if err := r.Check(config); err != nil {
		return nil, err
	}
	needed := map[group][]string{}
	for _, v := range config {
		for _, p := range Parse(v) {
			if _, ok := r.providers[p.Provider]; !ok {
				continue
			}
			g := group{p.Provider, p.Path}
			if !contains(needed[g], p.Key) {
				needed[g] = append(needed[g], p.Key)
			}
		}
	}
	out := make(map[string]string, len(config))
	for k, v := range config {
		out[k] = v
	}
	if len(needed) == 0 {
		return out, nil
	}
	// Resolve groups in a stable order so errors are deterministic.
	groups := make([]group, 0, len(needed))
	for g := range needed {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].provider != groups[j].provider {
			return groups[i].provider < groups[j].provider
		}
		return groups[i].path < groups[j].path
	})
	values := map[group]map[string]string{}
	for _, g := range groups {
		keys := needed[g]
		sort.Strings(keys)
		vals, err := r.providers[g.provider].Get(ctx, g.path, keys)
		if err != nil {
			return nil, fmt.Errorf("resolving ${%s:%s} placeholders (config keys %s): %w", g.provider, describePath(g.path), strings.Join(keysUsing(config, g), ", "), err)
		}
		for _, k := range keys {
			if _, ok := vals[k]; !ok {
				return nil, fmt.Errorf("resolving ${%s:%s}: provider returned no value for key %q", g.provider, describePath(g.path), k)
			}
		}
		values[g] = vals
	}
	for k, v := range out {
		if !ContainsPlaceholder(v) {
			continue
		}
		out[k] = placeholderRE.ReplaceAllStringFunc(v, func(raw string) string {
			ps := Parse(raw)
			if len(ps) != 1 {
				return raw
			}
			p := ps[0]
			vals, ok := values[group{p.Provider, p.Path}]
			if !ok {
				return raw
			}
			r.seen.add(vals[p.Key], raw)
			if own != nil {
				own.add(vals[p.Key], raw)
			}
			return vals[p.Key]
		})
	}
	return out, nil
}

func describePath(p string) string {
	if p == "" {
		return "..."
	}
	return p + ":..."
}

func keysUsing(config map[string]string, g group) []string {
	var out []string
	for k, v := range config {
		for _, p := range Parse(v) {
			if p.Provider == g.provider && p.Path == g.path {
				out = append(out, k)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// Redacted replaces values that must not be shown.
const Redacted = "[hidden]"

// Redact returns a copy of resolved that is safe to log: wherever the
// original value held a placeholder, the original (the placeholder) is
// shown instead of the resolved value. Keys in sensitive (for example a
// plugin's PASSWORD fields) are shown as [hidden] unless they held a
// placeholder.
func Redact(original, resolved map[string]string, sensitive ...string) map[string]string {
	out := make(map[string]string, len(resolved))
	for k, v := range resolved {
		switch {
		case ContainsPlaceholder(original[k]):
			out[k] = original[k]
		case contains(sensitive, k):
			out[k] = Redacted
		default:
			out[k] = v
		}
	}
	return out
}
