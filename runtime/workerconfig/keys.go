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

package workerconfig

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/properties"
)

// Field documents one configuration key.
type Field struct {
	// Key is the configuration key.
	Key string
	// Default is the default in text form ("" when none).
	Default string
	// Doc is the one-line documentation.
	Doc string
	get func(*Config) string
	set func(*Config, string) error
}

func strField(key, def, doc string, p func(*Config) *string) Field {
	return Field{Key: key, Default: def, Doc: doc,
		get: func(c *Config) string { return *p(c) },
		set: func(c *Config, v string) error { *p(c) = strings.TrimSpace(v); return nil }}
}

func intField(key, def, doc string, p func(*Config) *int) Field {
	return Field{Key: key, Default: def, Doc: doc,
		get: func(c *Config) string { return strconv.Itoa(*p(c)) },
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%s=%q: not an integer", key, v)
			}
			*p(c) = n
			return nil
		}}
}

func int16Field(key, def, doc string, p func(*Config) *int16) Field {
	return Field{Key: key, Default: def, Doc: doc,
		get: func(c *Config) string { return strconv.Itoa(int(*p(c))) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 16)
			if err != nil {
				return fmt.Errorf("%s=%q: not a 16-bit integer", key, v)
			}
			*p(c) = int16(n)
			return nil
		}}
}

func int32Field(key, def, doc string, p func(*Config) *int32) Field {
	return Field{Key: key, Default: def, Doc: doc,
		get: func(c *Config) string { return strconv.Itoa(int(*p(c))) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return fmt.Errorf("%s=%q: not a 32-bit integer", key, v)
			}
			*p(c) = int32(n)
			return nil
		}}
}

func boolField(key, def, doc string, p func(*Config) *bool) Field {
	return Field{Key: key, Default: def, Doc: doc,
		get: func(c *Config) string { return strconv.FormatBool(*p(c)) },
		set: func(c *Config, v string) error {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				*p(c) = true
			case "false":
				*p(c) = false
			default:
				return fmt.Errorf("%s=%q: expected true or false", key, v)
			}
			return nil
		}}
}

func msField(key, def, doc string, p func(*Config) *time.Duration) Field {
	return Field{Key: key, Default: def, Doc: doc,
		get: func(c *Config) string { return strconv.FormatInt(p(c).Milliseconds(), 10) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%s=%q: not a number of milliseconds", key, v)
			}
			*p(c) = time.Duration(n) * time.Millisecond
			return nil
		}}
}

func listField(key, def, doc string, p func(*Config) *[]string) Field {
	return Field{Key: key, Default: def, Doc: doc,
		get: func(c *Config) string { return strings.Join(*p(c), ",") },
		set: func(c *Config, v string) error {
			var out []string
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			*p(c) = out
			return nil
		}}
}

var fieldIndex = func() map[string]int {
	m := map[string]int{}
	for i, f := range fields {
		m[f.Key] = i
	}
	return m
}()

// Fields returns the documentation table of every known key, in the order
// Render writes them (for --help).
func Fields() []Field {
	out := make([]Field, len(fields))
	copy(out, fields)
	return out
}

// IsKnownKey reports whether key is one of the documented keys.
func IsKnownKey(key string) bool {
	_, ok := fieldIndex[key]
	return ok
}

// Get returns the text value of a key (known or Extra) and whether it is set.
func (c *Config) Get(key string) (string, bool) {
	if i, ok := fieldIndex[key]; ok {
		return fields[i].get(c), true
	}
	v, ok := c.Extra[key]
	return v, ok
}

// Set sets a key from text: a known field, or an Extra entry.
func (c *Config) Set(key, value string) error {
	if i, ok := fieldIndex[key]; ok {
		return fields[i].set(c, value)
	}
	if c.Extra == nil {
		c.Extra = map[string]string{}
	}
	c.Extra[key] = value
	return nil
}

// ToMap returns every known key with its value plus Extra.
func (c *Config) ToMap() map[string]string {
	m := make(map[string]string, len(fields)+len(c.Extra))
	for k, v := range c.Extra {
		m[k] = v
	}
	for _, f := range fields {
		m[f.Key] = f.get(c)
	}
	return m
}

// Render writes the configuration as a properties file: a header comment,
// bootstrap.servers and group.id, then every other known key whose value
// differs from its default, in [Fields] order, then Extra sorted by key.
// Parse(Render()) yields an equal configuration.
func (c *Config) Render() []byte {
	var entries []properties.Entry
	for _, f := range fields {
		v := f.get(c)
		if v == f.Default && f.Key != KeyBootstrapServers && f.Key != KeyGroupID {
			continue
		}
		entries = append(entries, properties.Entry{Key: f.Key, Value: v})
	}
	extra := make([]string, 0, len(c.Extra))
	for k := range c.Extra {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		entries = append(entries, properties.Entry{Key: k, Value: c.Extra[k]})
	}
	var b bytes.Buffer
	b.WriteString("# Conveyor worker configuration. Keys: conveyor-worker --help.\n")
	_ = properties.Write(&b, entries) // writing to a bytes.Buffer cannot fail
	return b.Bytes()
}

// passthroughPrefixes are Extra key prefixes with a known consumer.
var passthroughPrefixes = []string{
	"producer.", "consumer.", "admin.", "key.converter.", "value.converter.", "header.converter.",
}

// UnknownKeys returns Extra keys that are neither documented nor under a
// passthrough prefix (producer., consumer., admin., *.converter.), sorted:
// likely typos, worth a warning.
func (c *Config) UnknownKeys() []string {
	var out []string
	for k := range c.Extra {
		known := false
		for _, p := range passthroughPrefixes {
			if strings.HasPrefix(k, p) {
				known = true
				break
			}
		}
		if !known {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Prefixed returns the Extra entries under prefix (for example "producer."),
// with the prefix removed.
func (c *Config) Prefixed(prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range c.Extra {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// HelpText renders the key table for --help: one block per key with its
// default and documentation.
func HelpText() string {
	var b strings.Builder
	for _, f := range fields {
		def := f.Default
		if def == "" {
			def = "(none)"
		}
		fmt.Fprintf(&b, "  %s (default %s)\n      %s\n", f.Key, def, f.Doc)
	}
	b.WriteString(prefixedHelp)
	return b.String()
}

// prefixedHelp documents the client settings the worker reads from the
// producer.* and consumer.* passthrough keys.
const prefixedHelp = `  producer.compression.type (default snappy)
      Compression of the record batches source tasks produce: none, gzip, snappy, lz4 or zstd.
  producer.linger.ms (default 10)
      How long source tasks' producers wait for more records before sending a batch.
  producer.batch.size (default 1000012)
      Largest record batch in bytes source tasks' producers send (1024 to 1073741824).
  consumer.max.poll.records (default 500)
      Most records a sink task receives in one put.
  consumer.session.timeout.ms, consumer.rebalance.timeout.ms
      Session and rebalance timeouts of sink tasks' consumer groups.
`
