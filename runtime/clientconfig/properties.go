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

// Package clientconfig is the one table of the Kafka client properties
// Conveyor supports, for the worker's producer.*, consumer.* and admin.*
// keys and for connectors' producer.override.*, consumer.override.* and
// admin.override.* keys (KIP-458): each property's name, the clients it
// applies to, its type and range, and the franz-go option it maps to. It
// also holds the override policy (connector.client.config.override.policy)
// and the SASL identity a connector may give its own clients.
package clientconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Kind is a Kafka client a connector's tasks use; kinds combine as a set.
type Kind uint8

// The client kinds.
const (
	// Producer writes a source task's records and a sink's dead letters.
	Producer Kind = 1 << iota
	// Consumer reads a sink task's records.
	Consumer
	// Admin creates a sink's dead letter queue topic.
	Admin
)

// Kinds lists every client kind, in the order of their prefixes.
var Kinds = []Kind{Producer, Consumer, Admin}

// String is the kind's key prefix without its dot: producer, consumer, admin.
func (k Kind) String() string {
	switch k {
	case Producer:
		return "producer"
	case Consumer:
		return "consumer"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// OverridePrefix is the prefix of a connector's overrides of this client:
// producer.override., consumer.override. or admin.override.
func (k Kind) OverridePrefix() string { return k.String() + ".override." }

// WorkerPrefix is the prefix of the worker's settings of this client:
// producer., consumer. or admin.
func (k Kind) WorkerPrefix() string { return k.String() + "." }

// Type is a property's type, by Kafka's ConfigDef.Type names.
type Type string

// Property types.
const (
	TypeInt      Type = "INT"
	TypeLong     Type = "LONG"
	TypeBoolean  Type = "BOOLEAN"
	TypeString   Type = "STRING"
	TypePassword Type = "PASSWORD" // never shown in a message
)

// Property is one Kafka client property Conveyor supports.
type Property struct {
	// Name is Kafka's name of the property, without a prefix.
	Name string
	// Kinds are the clients it applies to.
	Kinds Kind
	// Type is its type; numbers lie in [Min, Max], strings are one of
	// Values (any case) when Values is set.
	Type     Type
	Min, Max int64
	Values   []string
	// Principal marks the keys of a client's identity (security.protocol,
	// sasl.mechanism, sasl.jaas.config): the Principal policy lets
	// connectors override only these.
	Principal bool
	// Option names the franz-go option(s) the property maps to.
	Option string
	// Doc says what it does, and where Conveyor differs from Kafka.
	Doc string
	// apply records the parsed value in the settings.
	apply func(v value, s *Settings)
}

// value is a parsed property value: n for numbers, b for booleans, s for
// strings (lower case where Values are set, as given otherwise).
type value struct {
	s string
	n int64
	b bool
}

const maxInt32 = 1<<31 - 1

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// properties is the table. Keep it sorted by name.
var properties = []Property{
	{Name: "acks", Kinds: Producer, Type: TypeString, Values: []string{"all", "-1", "1", "0"},
		Option: "kgo.RequiredAcks (and kgo.DisableIdempotentWrite unless acks=all)",
		Doc:    "Acknowledgements a write waits for: all (-1), 1 (the leader) or 0 (none). Anything but all turns idempotent writes off, as in Kafka; exactly-once source tasks refuse it.",
		apply:  func(v value, s *Settings) { s.acks = v.s }},
	// Kafka's none (fail when a partition has no committed offset) has no
	// franz-go equivalent: kgo.NoResetOffset starts a new group at the
	// start. It is refused rather than approximated.
	{Name: "auto.offset.reset", Kinds: Consumer, Type: TypeString, Values: []string{"earliest", "latest"},
		Option: "kgo.ConsumeResetOffset",
		Doc:    "Where a sink starts on a partition without a committed offset: earliest (the default for sinks, as Kafka Connect) or latest.",
		apply: func(v value, s *Settings) {
			if v.s == "latest" {
				s.Opts = append(s.Opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
			} else {
				s.Opts = append(s.Opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			}
		}},
	{Name: "batch.size", Kinds: Producer, Type: TypeInt, Min: 512, Max: 1 << 30,
		Option: "kgo.ProducerBatchMaxBytes",
		Doc:    "Largest record batch in bytes (franz-go fills batches up to this size; Kafka's default is 16384, franz-go's 1000012).",
		apply:  func(v value, s *Settings) { s.batchMax = v.n }},
	{Name: "client.id", Kinds: Producer | Consumer | Admin, Type: TypeString,
		Option: "kgo.ClientID",
		Doc:    "Client id sent with every request (quotas, broker logs); default conveyor-worker.",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.ClientID(v.s)) }},
	{Name: "compression.type", Kinds: Producer, Type: TypeString, Values: []string{"none", "gzip", "snappy", "lz4", "zstd"},
		Option: "kgo.ProducerBatchCompression",
		Doc:    "Codec of produced batches; snappy unless set (Kafka's default is none: batches of schema-carrying JSON shrink several times).",
		apply:  func(v value, s *Settings) { s.compression = v.s }},
	// delivery.timeout.ms is not here: franz-go's RecordDeliveryTimeout
	// counts from a record's own timestamp, not from when it was sent, so
	// a source's records that carry their event time (a CDC change from
	// an hour ago) would time out before they are sent.
	{Name: "enable.idempotence", Kinds: Producer, Type: TypeBoolean,
		Option: "kgo.DisableIdempotentWrite when false",
		Doc:    "Idempotent writes (the default); false turns them off. true with acks other than all is refused, as in Kafka; exactly-once source tasks refuse false.",
		apply:  func(v value, s *Settings) { b := v.b; s.idempotence = &b }},
	// Kafka's default is true. Conveyor's is false: a worker runs a
	// client or two per task, each would gather its metrics and ask the
	// broker for a subscription, and most clusters want none.
	{Name: "enable.metrics.push", Kinds: Producer | Consumer | Admin, Type: TypeBoolean,
		Option: "kgo.DisableClientMetrics unless true",
		Doc:    "Push the client's metrics to the brokers when they subscribe to them (KIP-714). Off unless set to true (Kafka's default is true): with it off the client neither gathers them nor asks the brokers for a subscription.",
		apply:  func(v value, s *Settings) { s.metricsPush = v.b }},
	{Name: "fetch.max.bytes", Kinds: Consumer, Type: TypeInt, Min: 1024, Max: 1 << 30,
		Option: "kgo.FetchMaxBytes",
		Doc:    "Most bytes one fetch response holds; sinks default to 1 MiB (Kafka's default is 50 MiB).",
		apply:  func(v value, s *Settings) { s.FetchMaxBytes = int32(v.n) }},
	{Name: "fetch.max.wait.ms", Kinds: Consumer, Type: TypeInt, Min: 0, Max: maxInt32,
		Option: "kgo.FetchMaxWait",
		Doc:    "How long the broker may hold a fetch waiting for fetch.min.bytes.",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.FetchMaxWait(ms(v.n))) }},
	{Name: "fetch.min.bytes", Kinds: Consumer, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.FetchMinBytes",
		Doc:    "Fewest bytes the broker gathers before it answers a fetch (up to fetch.max.wait.ms).",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.FetchMinBytes(int32(v.n))) }},
	{Name: "heartbeat.interval.ms", Kinds: Consumer, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.HeartbeatInterval",
		Doc:    "How often a sink's consumer heartbeats to its group.",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.HeartbeatInterval(ms(v.n))) }},
	{Name: "isolation.level", Kinds: Consumer, Type: TypeString, Values: []string{"read_uncommitted", "read_committed"},
		Option: "kgo.FetchIsolationLevel",
		Doc:    "read_committed hides records of aborted and open transactions (read an exactly-once source's topics with it).",
		apply: func(v value, s *Settings) {
			if v.s == "read_committed" {
				s.Opts = append(s.Opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			} else {
				s.Opts = append(s.Opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
			}
		}},
	{Name: "linger.ms", Kinds: Producer, Type: TypeInt, Min: 0, Max: maxInt32,
		Option: "kgo.ProducerLinger",
		Doc:    "How long a batch waits for more records before it is sent.",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.ProducerLinger(ms(v.n))) }},
	{Name: "max.in.flight.requests.per.connection", Kinds: Producer, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.MaxProduceRequestsInflightPerBroker",
		Doc:    "Produce requests in flight per broker with enable.idempotence=false; idempotent writes keep up to 5 in flight, in order, whatever it says (so it may be at most 5, as in Kafka).",
		apply:  func(v value, s *Settings) { s.inflight = v.n }},
	{Name: "max.partition.fetch.bytes", Kinds: Consumer, Type: TypeInt, Min: 1, Max: 1 << 30,
		Option: "kgo.FetchMaxPartitionBytes",
		Doc:    "Most bytes one fetch returns for one partition; sinks default to fetch.max.bytes.",
		apply:  func(v value, s *Settings) { s.FetchMaxPartitionBytes = int32(v.n) }},
	{Name: "max.poll.interval.ms", Kinds: Consumer, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.RebalanceTimeout",
		Doc:    "How long a sink's consumer may take to rejoin its group during a rebalance (Kafka's rebalance timeout).",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.RebalanceTimeout(ms(v.n))) }},
	{Name: "max.poll.records", Kinds: Consumer, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.Client.PollRecords (its count)",
		Doc:    "Most records one poll returns, so the most one Put gets; default 500.",
		apply:  func(v value, s *Settings) { s.MaxPollRecords = int(v.n) }},
	{Name: "max.request.size", Kinds: Producer, Type: TypeInt, Min: 1024, Max: 1 << 30,
		Option: "kgo.BrokerMaxWriteBytes, and caps kgo.ProducerBatchMaxBytes",
		Doc:    "Largest produce request in bytes; also caps the batch size, so a larger record fails with MESSAGE_TOO_LARGE.",
		apply:  func(v value, s *Settings) { s.maxRequest = v.n }},
	{Name: "rebalance.timeout.ms", Kinds: Consumer, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.RebalanceTimeout",
		Doc:    "Conveyor's older name of max.poll.interval.ms.",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.RebalanceTimeout(ms(v.n))) }},
	{Name: "request.timeout.ms", Kinds: Producer | Consumer | Admin, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.RequestTimeoutOverhead",
		Doc:    "How long a request may wait for its answer (franz-go adds a request's own timeout, such as a fetch's wait, to it).",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.RequestTimeoutOverhead(ms(v.n))) }},
	{Name: "retries", Kinds: Producer, Type: TypeInt, Min: 0, Max: maxInt32,
		Option: "kgo.RecordRetries",
		Doc:    "How often a failed write of a record is retried (bounded by delivery.timeout.ms).",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.RecordRetries(int(v.n))) }},
	{Name: KeySASLJAASConfig, Kinds: Producer | Consumer | Admin, Type: TypePassword, Principal: true,
		Option: "kgo.SASL (plain.Auth or scram.Auth)",
		Doc:    "The client's own SASL login: PlainLoginModule or ScramLoginModule with username and password, usually through a ${secret:...} placeholder.",
		apply:  func(v value, s *Settings) { s.security().jaas = v.s }},
	{Name: KeySASLMechanism, Kinds: Producer | Consumer | Admin, Type: TypeString, Values: []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}, Principal: true,
		Option: "kgo.SASL",
		Doc:    "SASL mechanism of the client's own login: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; the worker's when unset.",
		apply:  func(v value, s *Settings) { s.security().Mechanism = strings.ToUpper(v.s) }},
	{Name: KeySecurityProtocol, Kinds: Producer | Consumer | Admin, Type: TypeString, Values: []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL}, Principal: true,
		Option: "kgo.DialTLSConfig and kgo.SASL",
		Doc:    "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; the worker's when unset (TLS then uses the worker's CA, else the system roots).",
		apply:  func(v value, s *Settings) { s.security().Protocol = strings.ToUpper(v.s) }},
	{Name: "session.timeout.ms", Kinds: Consumer, Type: TypeInt, Min: 1, Max: maxInt32,
		Option: "kgo.SessionTimeout",
		Doc:    "How long the group waits for a sink's consumer's heartbeat before it drops the member.",
		apply:  func(v value, s *Settings) { s.Opts = append(s.Opts, kgo.SessionTimeout(ms(v.n))) }},
}

// Properties returns the table, sorted by name.
func Properties() []Property { return slices.Clone(properties) }

// Lookup returns the property named name (no prefix).
func Lookup(name string) (*Property, bool) {
	i, ok := slices.BinarySearchFunc(properties, name, func(p Property, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return nil, false
	}
	return &properties[i], true
}

// parse checks raw against the property's type and range. The message
// never quotes a password.
func (p *Property) parse(raw string) (value, error) {
	s := strings.TrimSpace(raw)
	switch p.Type {
	case TypeInt, TypeLong:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < p.Min || n > p.Max {
			return value{}, fmt.Errorf("%q is not a whole number from %d to %d", raw, p.Min, p.Max)
		}
		return value{n: n}, nil
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			return value{b: true}, nil
		case "false":
			return value{b: false}, nil
		}
		return value{}, fmt.Errorf("%q is neither true nor false", raw)
	case TypePassword:
		if s == "" {
			return value{}, fmt.Errorf("is empty")
		}
		return value{s: s}, nil
	}
	if len(p.Values) > 0 {
		for _, v := range p.Values {
			if strings.EqualFold(v, s) {
				return value{s: strings.ToLower(v)}, nil
			}
		}
		return value{}, fmt.Errorf("%q is not one of %s", raw, strings.Join(p.Values, ", "))
	}
	if s == "" {
		return value{}, fmt.Errorf("is empty")
	}
	return value{s: s}, nil
}
