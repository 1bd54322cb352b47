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

package kafkaconnector

import (
	"sort"
	"strconv"
	"strings"
)

// Connector config keys that the operator sets from the KafkaConnector's
// spec and metadata rather than from spec.config.
const (
	KeyName     = "name"
	KeyClass    = "connector.class"
	KeyTasksMax = "tasks.max"
)

// Exactly-once keys the operator derives from spec.exactlyOnce.
const (
	KeyExactlyOnceSupport        = "exactly.once.support"
	KeyConsumerIsolationOverride = "consumer.override.isolation.level"
	// KeySinkExactlyOnce is the PostgreSQL sink's exactly.once.
	KeySinkExactlyOnce = "exactly.once"
)

// RuntimeAddedKeys are keys that the worker adds to a stored connector
// config on its own. A stored key in this set that the desired config does
// not carry is not a difference. (Kafka Connect adds "name"; the operator
// sends it anyway, so it never differs.)
var RuntimeAddedKeys = map[string]bool{KeyName: true}

// DesiredConfig is the connector config the operator sends: spec.config
// with name, connector.class and tasks.max from the resource. This is the
// one place tasks.max is set: exactly as written in spec.tasksMax, never the
// effective count (the runtime applies the natural limit itself).
func DesiredConfig(name, class string, tasksMax int32, config map[string]string) map[string]string {
	out := make(map[string]string, len(config)+3)
	for k, v := range config {
		out[k] = v
	}
	out[KeyName] = name
	out[KeyClass] = class
	out[KeyTasksMax] = strconv.FormatInt(int64(tasksMax), 10)
	return out
}

// ConfigDiff lists the keys that differ between the desired config and the
// one the worker holds, sorted. It carries key names only: values may hold
// secret placeholders and never go into events or logs anyway.
type ConfigDiff struct {
	Added   []string // desired, not stored
	Changed []string // stored with another value
	Removed []string // stored, no longer desired (and not runtime-added)
}

// Empty reports whether the configs are equivalent, i.e. no write is needed.
func (d ConfigDiff) Empty() bool {
	return len(d.Added) == 0 && len(d.Changed) == 0 && len(d.Removed) == 0
}

// Keys is every differing key, sorted.
func (d ConfigDiff) Keys() []string {
	out := append(append(append([]string(nil), d.Added...), d.Changed...), d.Removed...)
	sort.Strings(out)
	return out
}

// DiffConfig compares desired with stored, ignoring key order and the keys
// the runtime adds. Values compare exactly: the worker stores strings as
// given, so any other difference is a real change.
func DiffConfig(desired, stored map[string]string) ConfigDiff {
	var d ConfigDiff
	for k, v := range desired {
		sv, ok := stored[k]
		switch {
		case !ok:
			d.Added = append(d.Added, k)
		case sv != v:
			d.Changed = append(d.Changed, k)
		}
	}
	for k := range stored {
		if _, ok := desired[k]; !ok && !RuntimeAddedKeys[k] {
			d.Removed = append(d.Removed, k)
		}
	}
	sort.Strings(d.Added)
	sort.Strings(d.Changed)
	sort.Strings(d.Removed)
	return d
}

// WithExactlyOnce applies a KafkaConnector's spec.exactlyOnce to its
// desired config: Requested or Required sets exactly.once.support (read
// by source connectors) and makes a sink's consumer read_committed; a
// config with exactly.once=true (an exactly-once sink) gets read_committed
// too. Keys the user set in spec.config win.
func WithExactlyOnce(desired map[string]string, req string) map[string]string {
	setDefault := func(k, v string) {
		if _, ok := desired[k]; !ok {
			desired[k] = v
		}
	}
	if req != "" {
		setDefault(KeyExactlyOnceSupport, strings.ToLower(req))
		setDefault(KeyConsumerIsolationOverride, "read_committed")
	}
	if strings.EqualFold(strings.TrimSpace(desired[KeySinkExactlyOnce]), "true") {
		setDefault(KeyConsumerIsolationOverride, "read_committed")
	}
	return desired
}
