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

package clientconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Settings are one client's settings, parsed from the table: the franz-go
// options, plus what the task runner applies itself.
type Settings struct {
	// Kind is the client these settings are for.
	Kind Kind
	// Opts are the franz-go options, to be given after the runner's own.
	Opts []kgo.Opt
	// MaxPollRecords is max.poll.records (0 = unset).
	MaxPollRecords int
	// FetchMaxBytes and FetchMaxPartitionBytes are fetch.max.bytes and
	// max.partition.fetch.bytes (0 = unset): the sink runner has its own
	// defaults for them.
	FetchMaxBytes, FetchMaxPartitionBytes int32
	// Security is set when the settings name the client's own identity
	// (security.protocol, sasl.mechanism, sasl.jaas.config); see Resolve.
	Security *SecurityOverride
	// Idempotent says whether the producer writes idempotently (acks=all
	// and enable.idempotence not false).
	Idempotent bool

	// metricsPush is enable.metrics.push: KIP-714 client metrics are off
	// unless a user asks for them.
	metricsPush bool

	acks, compression              string
	idempotence                    *bool
	batchMax, maxRequest, inflight int64
	keys                           map[string]string // property name -> key as given, for messages
}

func (s *Settings) security() *SecurityOverride {
	if s.Security == nil {
		s.Security = &SecurityOverride{}
	}
	return s.Security
}

// Error is a bad client setting: the key as the user wrote it (with its
// prefix) and what is wrong with it.
type Error struct {
	Key     string
	Message string
}

func (e *Error) Error() string {
	if strings.Contains(e.Message, e.Key) {
		return e.Message
	}
	return e.Key + ": " + e.Message
}

// Parse turns the properties of one client (Kafka's names, without a
// prefix; later maps win) into settings. keyOf names a property as the
// user wrote it, for messages (producer.override.linger.ms). A property
// the table does not have, one that does not apply to kind, or a bad
// value is an *Error naming the key.
func Parse(kind Kind, keyOf func(name string) string, props ...map[string]string) (Settings, error) {
	merged := map[string]string{}
	for _, m := range props {
		maps.Copy(merged, m)
	}
	s := Settings{Kind: kind, keys: map[string]string{}}
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		key := keyOf(name)
		p, ok := Lookup(name)
		if !ok || p.Kinds&kind == 0 {
			return Settings{}, &Error{Key: key, Message: unsupported(kind, name, key)}
		}
		v, err := p.parse(merged[name])
		if err != nil {
			return Settings{}, &Error{Key: key, Message: invalid(key, err)}
		}
		s.keys[name] = key
		p.apply(v, &s)
	}
	if err := s.finish(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// invalid says that key has a bad value (the error never quotes a password).
func invalid(key string, err error) string {
	return fmt.Sprintf("invalid value for %s: %v", key, err)
}

// unsupported says that key names no property of kind that Conveyor
// supports (name is key without its prefix), and which ones are.
func unsupported(kind Kind, name, key string) string {
	if p, ok := Lookup(name); ok {
		var kinds []string
		for _, k := range Kinds {
			if p.Kinds&k != 0 {
				kinds = append(kinds, k.String())
			}
		}
		return fmt.Sprintf("%s: %s applies to the %s client(s), not the %s", key, name, strings.Join(kinds, " and "), kind)
	}
	return fmt.Sprintf("%s: %s is not a %s property Conveyor supports; supported: %s", key, name, kind, strings.Join(Names(kind), ", "))
}

// Names lists the properties of kind, sorted.
func Names(kind Kind) []string {
	var out []string
	for _, p := range properties {
		if p.Kinds&kind != 0 {
			out = append(out, p.Name)
		}
	}
	return out
}

// finish applies the rules between properties and adds their options.
func (s *Settings) finish() error {
	if s.Kind != Producer {
		return nil
	}
	// Idempotent writes need acks=all: another acks turns them off unless
	// enable.idempotence=true asks for them, which Kafka refuses too.
	acksAll := s.acks == "" || s.acks == "all" || s.acks == "-1"
	s.Idempotent = acksAll && (s.idempotence == nil || *s.idempotence)
	if !acksAll && s.idempotence != nil && *s.idempotence {
		return &Error{Key: s.Key("enable.idempotence"), Message: fmt.Sprintf("idempotent writes need acks=all, but %s=%s; set acks=all or enable.idempotence=false", s.Key("acks"), s.acks)}
	}
	if s.Idempotent && s.inflight > 5 {
		return &Error{Key: s.Key("max.in.flight.requests.per.connection"), Message: fmt.Sprintf("%d is more than 5, the most idempotent writes allow; set enable.idempotence=false or at most 5", s.inflight)}
	}
	switch s.acks {
	case "all", "-1":
		s.Opts = append(s.Opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		s.Opts = append(s.Opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		s.Opts = append(s.Opts, kgo.RequiredAcks(kgo.NoAck()))
	}
	if !s.Idempotent {
		s.Opts = append(s.Opts, kgo.DisableIdempotentWrite())
	}
	if s.inflight > 0 && !s.Idempotent {
		s.Opts = append(s.Opts, kgo.MaxProduceRequestsInflightPerBroker(int(s.inflight)))
	}
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	codec := codecs["snappy"]
	if c, ok := codecs[s.compression]; ok {
		codec = c
	}
	s.Opts = append(s.Opts, kgo.ProducerBatchCompression(codec))
	// max.request.size bounds a produce request and so the batch in it
	// (franz-go refuses a batch larger than a request).
	batch := s.batchMax
	if s.maxRequest > 0 {
		s.Opts = append(s.Opts, kgo.BrokerMaxWriteBytes(int32(s.maxRequest)))
		if batch == 0 || batch > s.maxRequest {
			batch = min(s.maxRequest, max(batch, defaultBatchMax))
		}
	}
	if batch > 0 {
		s.Opts = append(s.Opts, kgo.ProducerBatchMaxBytes(int32(batch)))
	}
	return nil
}

// defaultBatchMax is franz-go's default ProducerBatchMaxBytes.
const defaultBatchMax = 1000012

// KeyOf returns the keyOf of a worker's settings of kind (producer.linger.ms).
func (k Kind) workerKey(name string) string { return k.WorkerPrefix() + name }

// overrideKey names a connector's override (producer.override.linger.ms).
func (k Kind) overrideKey(name string) string { return k.OverridePrefix() + name }

// Worker parses the worker's settings of kind: its keys with the prefix
// kind.WorkerPrefix() removed.
func Worker(kind Kind, worker map[string]string) (Settings, error) {
	return Parse(kind, kind.workerKey, worker)
}

// Overrides returns a connector config's overrides of kind, without the
// prefix.
func Overrides(kind Kind, config map[string]string) map[string]string {
	out := map[string]string{}
	prefix := kind.OverridePrefix()
	for k, v := range config {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			out[name] = v
		}
	}
	return out
}

// IsOverride reports whether key is a client override
// (producer.override.*, consumer.override.*, admin.override.*).
func IsOverride(key string) bool {
	for _, k := range Kinds {
		if strings.HasPrefix(key, k.OverridePrefix()) {
			return true
		}
	}
	return false
}

// For returns the settings of one client of a connector: the worker's
// settings of kind (prefix removed) with the connector's overrides over
// them, each override allowed by policy. An error names the key.
func For(kind Kind, worker, connector map[string]string, policy Policy) (Settings, error) {
	over := Overrides(kind, connector)
	for _, name := range slices.Sorted(maps.Keys(over)) {
		if p, ok := Lookup(name); ok && p.Kinds&kind != 0 && !policy.Allows(name) {
			return Settings{}, &Error{Key: kind.overrideKey(name), Message: policy.Refusal(kind.overrideKey(name))}
		}
	}
	keyOf := func(name string) string {
		if _, ok := over[name]; ok {
			return kind.overrideKey(name)
		}
		return kind.workerKey(name)
	}
	return Parse(kind, keyOf, worker, over)
}

// Check validates every client override of a connector config against
// the table and the policy, and returns the problems, one per bad key
// (sorted by key): a key the table does not have, one the policy refuses,
// a bad value, or a conflict between overrides of one client or with the
// worker's security (worker; nil when unknown, see SecurityOverride.check).
func Check(config map[string]string, policy Policy, worker *Security) []Error {
	var out []Error
	for _, kind := range Kinds {
		over := Overrides(kind, config)
		allowed := map[string]string{}
		bad := false
		for _, name := range slices.Sorted(maps.Keys(over)) {
			key := kind.overrideKey(name)
			p, ok := Lookup(name)
			switch {
			case !ok || p.Kinds&kind == 0:
				out = append(out, Error{Key: key, Message: unsupported(kind, name, key)})
				bad = true
			case !policy.Allows(name):
				out = append(out, Error{Key: key, Message: policy.Refusal(key)})
				bad = true
			default:
				if _, err := p.parse(over[name]); err != nil {
					out = append(out, Error{Key: key, Message: invalid(key, err)})
					bad = true
					continue
				}
				allowed[name] = over[name]
			}
		}
		if bad {
			continue // conflicts between values are checked once each value is good
		}
		s, err := Parse(kind, kind.overrideKey, allowed)
		if err == nil && s.Security != nil {
			err = s.Security.check(kind.overrideKey, worker)
		}
		if e, ok := err.(*Error); ok {
			out = append(out, *e)
		}
	}
	slices.SortFunc(out, func(a, b Error) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// IsPassword reports whether key is a client override whose value is a
// secret (sasl.jaas.config): it is never shown.
func IsPassword(key string) bool {
	for _, k := range Kinds {
		if name, ok := strings.CutPrefix(key, k.OverridePrefix()); ok {
			p, found := Lookup(name)
			return found && p.Type == TypePassword
		}
	}
	return false
}
