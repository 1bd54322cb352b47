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

package plugin

import (
	"context"
	"fmt"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"strconv"
	"strings"
	"time"
)

// Exactly-once keys of source connectors (KIP-618), as Kafka Connect names
// them.
const (
	// KeyExactlyOnceSupport is "requested" (the default: the connector runs
	// transactionally when the worker has exactly-once enabled) or
	// "required" (validation fails unless the worker has it enabled and
	// the connector declares support).
	KeyExactlyOnceSupport = "exactly.once.support"
	// KeyTransactionBoundary is "poll" (one transaction per polled batch,
	// the default), "interval" (one per transaction.boundary.interval.ms)
	// or "connector" (the task commits and aborts through its
	// TransactionContext).
	KeyTransactionBoundary = "transaction.boundary"
	// KeyTransactionBoundaryInterval is the length of a transaction with
	// transaction.boundary=interval, in ms; unset, the worker's
	// offset.flush.interval.ms.
	KeyTransactionBoundaryInterval = "transaction.boundary.interval.ms"
	// KeyOffsetsStorageTopic names a connector-specific offsets topic; its
	// offsets are written there inside the task's transactions.
	KeyOffsetsStorageTopic = "offsets.storage.topic"
)

// Values of exactly.once.support and transaction.boundary.
const (
	ExactlyOnceRequested = "requested"
	ExactlyOnceRequired  = "required"

	BoundaryPoll      = "poll"
	BoundaryInterval  = "interval"
	BoundaryConnector = "connector"
)

// Values of the worker's exactly.once.source.support.
const (
	WorkerExactlyOnceDisabled  = "disabled"
	WorkerExactlyOncePreparing = "preparing"
	WorkerExactlyOnceEnabled   = "enabled"
)

// ExactlyOnceSupport is a source connector's answer to whether it can run
// exactly-once with a configuration (Kafka's ExactlyOnceSupport).
type ExactlyOnceSupport int

const (
	// ExactlyOnceUnknown is the answer of a connector that does not say.
	ExactlyOnceUnknown ExactlyOnceSupport = iota
	// ExactlyOnceSupported: its offsets describe exactly what was polled,
	// and a task restarted from stored offsets polls the same records again.
	ExactlyOnceSupported
	// ExactlyOnceUnsupported: it cannot run exactly-once.
	ExactlyOnceUnsupported
)

// ExactlyOnceSupporter is implemented by a source Connector that says
// whether it supports exactly-once delivery with a configuration. A
// connector without it counts as unknown: it runs transactionally on
// request, and "required" refuses it.
type ExactlyOnceSupporter interface {
	ExactlyOnceSupport(config map[string]string) ExactlyOnceSupport
}

// TransactionBoundaryDefiner is implemented by a source Connector whose
// tasks can define their own transaction boundaries
// (transaction.boundary=connector) with a configuration.
type TransactionBoundaryDefiner interface {
	CanDefineTransactionBoundaries(config map[string]string) bool
}

// TransactionContext lets a source task of a connector with
// transaction.boundary=connector end its transactions. The calls only
// record the request; the runtime acts on it after the current Poll
// returned (the After variants once the record was handed to Kafka).
type TransactionContext interface {
	// CommitTransaction commits the records polled so far.
	CommitTransaction()
	// CommitTransactionAfter commits up to and including record.
	CommitTransactionAfter(record *SourceRecord)
	// AbortTransaction aborts the records of the open transaction; their
	// offsets are not stored, so the task must poll them again if it
	// wants them written.
	AbortTransaction()
	// AbortTransactionAfter aborts up to and including record.
	AbortTransactionAfter(record *SourceRecord)
}

// TransactionContextProvider is implemented by a SourceTaskContext that
// offers a TransactionContext.
type TransactionContextProvider interface {
	TransactionContext() TransactionContext
}

// TransactionContextOf returns the TransactionContext of a source task,
// or nil unless the connector runs exactly-once with
// transaction.boundary=connector (as Kafka's transactionContext()).
func TransactionContextOf(tc SourceTaskContext) TransactionContext {
	if p, ok := tc.(TransactionContextProvider); ok {
		return p.TransactionContext()
	}
	return nil
}

// ExactlyOnceConfig is the parsed exactly-once settings of a source
// connector.
type ExactlyOnceConfig struct {
	Support  string        // requested | required
	Boundary string        // poll | interval | connector
	Interval time.Duration // 0: the worker's offset flush interval
	// OffsetsTopic is the connector's own offsets topic, "" for the worker's.
	OffsetsTopic string
}

// ParseExactlyOnce reads the exactly-once keys of a source connector
// config; each bad value is a FieldError naming its key.
func ParseExactlyOnce(config map[string]string) (ExactlyOnceConfig, []FieldError) {
	c := ExactlyOnceConfig{Support: ExactlyOnceRequested, Boundary: BoundaryPoll}
	var errs []FieldError
	if v := strings.ToLower(strings.TrimSpace(config[KeyExactlyOnceSupport])); v != "" {
		if v != ExactlyOnceRequested && v != ExactlyOnceRequired {
			errs = append(errs, FieldError{Name: KeyExactlyOnceSupport, Message: fmt.Sprintf("%s=%q: use %s or %s", KeyExactlyOnceSupport, config[KeyExactlyOnceSupport], ExactlyOnceRequested, ExactlyOnceRequired)})
		}
		c.Support = v
	}
	if v := strings.ToLower(strings.TrimSpace(config[KeyTransactionBoundary])); v != "" {
		if v != BoundaryPoll && v != BoundaryInterval && v != BoundaryConnector {
			errs = append(errs, FieldError{Name: KeyTransactionBoundary, Message: fmt.Sprintf("%s=%q: use %s, %s or %s", KeyTransactionBoundary, config[KeyTransactionBoundary], BoundaryPoll, BoundaryInterval, BoundaryConnector)})
		}
		c.Boundary = v
	}
	if v := strings.TrimSpace(config[KeyTransactionBoundaryInterval]); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || n <= 0:
			errs = append(errs, FieldError{Name: KeyTransactionBoundaryInterval, Message: fmt.Sprintf("%s=%q: want a positive number of milliseconds", KeyTransactionBoundaryInterval, v)})
		case c.Boundary != BoundaryInterval:
			errs = append(errs, FieldError{Name: KeyTransactionBoundaryInterval, Message: fmt.Sprintf("%s is only used with %s=%s; remove it or set the boundary", KeyTransactionBoundaryInterval, KeyTransactionBoundary, BoundaryInterval)})
		default:
			c.Interval = time.Duration(n) * time.Millisecond
		}
	}
	c.OffsetsTopic = strings.TrimSpace(config[KeyOffsetsStorageTopic])
	return c, errs
}

// ValidateExactlyOnce checks a source connector's exactly-once keys
// against its plugin and the worker's exactly.once.source.support (mode),
// as Kafka's DistributedHerder does: "required" on a worker without
// exactly-once, or with a connector that does not declare support, is an
// error naming exactly.once.support; transaction.boundary=connector with a
// connector that cannot define boundaries names transaction.boundary.
func ValidateExactlyOnce(conn Connector, config map[string]string, mode string) []FieldError {
	c, errs := ParseExactlyOnce(config)
	if len(errs) > 0 {
		return errs
	}
	if c.Support == ExactlyOnceRequired {
		if mode != WorkerExactlyOnceEnabled {
			errs = append(errs, FieldError{Name: KeyExactlyOnceSupport, Message: fmt.Sprintf(
				"%s=%s but the worker's exactly.once.source.support is %q: enable exactly-once on the cluster (spec.exactlyOnce) or use %s",
				KeyExactlyOnceSupport, ExactlyOnceRequired, mode, ExactlyOnceRequested)})
		} else if s, ok := conn.(ExactlyOnceSupporter); !ok || s.ExactlyOnceSupport(config) != ExactlyOnceSupported {
			why := "does not declare exactly-once support"
			if ok && s.ExactlyOnceSupport(config) == ExactlyOnceUnsupported {
				why = "cannot run exactly-once with this configuration"
			}
			errs = append(errs, FieldError{Name: KeyExactlyOnceSupport, Message: fmt.Sprintf(
				"%s=%s but the connector %s: use %s, or a connector that supports it", KeyExactlyOnceSupport, ExactlyOnceRequired, why, ExactlyOnceRequested)})
		}
	}
	if c.Boundary == BoundaryConnector {
		if d, ok := conn.(TransactionBoundaryDefiner); !ok || !d.CanDefineTransactionBoundaries(config) {
			errs = append(errs, FieldError{Name: KeyTransactionBoundary, Message: fmt.Sprintf(
				"%s=%s but the connector does not define its own transaction boundaries: use %s or %s", KeyTransactionBoundary, BoundaryConnector, BoundaryPoll, BoundaryInterval)})
		}
	}
	return errs
}

// SinkOffsetAlterer is implemented by a sink Connector that keeps its
// consumer offsets outside Kafka (KIP-875's SinkConnector.alterOffsets):
// the runtime calls it when an operator alters (PATCH) or resets (DELETE)
// the connector's offsets, before it changes the consumer group's. A nil
// offset resets that partition. Reset passes every partition the
// connector stored (all=true, offsets nil).
type SinkOffsetAlterer interface {
	AlterSinkOffsets(ctx context.Context, config map[string]string, offsets map[TopicPartition]*int64, all bool) error
}

// GroupExactlyOnce is the group of the exactly-once fields.
const GroupExactlyOnce = "Exactly Once Support"

func exactlyOnceFields() []ConfigField {
	return []ConfigField{
		{Name: KeyExactlyOnceSupport, Type: TypeString, Default: ExactlyOnceRequested, Group: GroupExactlyOnce, Importance: ImportanceMedium, Width: WidthShort,
			DisplayName: "Exactly once support", Validator: OneOf(ExactlyOnceRequested, ExactlyOnceRequired), Recommended: []string{ExactlyOnceRequested, ExactlyOnceRequired},
			Doc: "requested: run transactionally when the worker has exactly.once.source.support=enabled; required: refuse the connector unless the worker has it enabled and the connector declares exactly-once support."},
		{Name: KeyTransactionBoundary, Type: TypeString, Default: BoundaryPoll, Group: GroupExactlyOnce, Importance: ImportanceMedium, Width: WidthShort,
			DisplayName: "Transaction boundary", Validator: OneOf(BoundaryPoll, BoundaryInterval, BoundaryConnector), Recommended: []string{BoundaryPoll, BoundaryInterval, BoundaryConnector},
			Doc: "poll: one transaction per polled batch; interval: one per transaction.boundary.interval.ms; connector: the connector's tasks commit and abort."},
		{Name: KeyTransactionBoundaryInterval, Type: TypeLong, Group: GroupExactlyOnce, Importance: ImportanceLow, Width: WidthShort,
			DisplayName: "Transaction boundary interval", Validator: AtLeast(1), Max: maxMillis,
			Doc: "Length of a transaction in ms with transaction.boundary=interval; unset = the worker's offset.flush.interval.ms."},
		{Name: KeyOffsetsStorageTopic, Type: TypeString, Group: GroupExactlyOnce, Importance: ImportanceLow, Width: WidthMedium,
			DisplayName: "Offsets storage topic",
			Doc:         "A compacted topic of the connector's own for its source offsets, written inside its transactions; unset = the worker's offset.storage.topic."},
	}
}

// ValidateOption tunes ValidateConfig.
type ValidateOption func(*validateOptions)

type validateOptions struct {
	eosMode  string
	grants   *Grants
	reserved *ReservedTopics
	policy   clientconfig.Policy
	security *clientconfig.Security
}

// WithClientOverridePolicy checks the connector's client overrides
// (producer.override.*, consumer.override.*, admin.override.*) against the
// worker's connector.client.config.override.policy; without it they are
// checked against Kafka's default policy (All). Either way an override the
// table of client properties does not have is refused.
func WithClientOverridePolicy(p clientconfig.Policy) ValidateOption {
	return func(o *validateOptions) { o.policy = p }
}

// WithWorkerSecurity checks a connector's own Kafka login
// (security.protocol, sasl.mechanism, sasl.jaas.config overrides) against
// the worker's security: its protocol, mechanism and whether it has a
// login (its password is not needed).
func WithWorkerSecurity(s clientconfig.Security) ValidateOption {
	return func(o *validateOptions) { o.security = &s }
}

// WithWorkerExactlyOnce checks source connectors' exactly-once keys
// against the worker's exactly.once.source.support mode.
func WithWorkerExactlyOnce(mode string) ValidateOption {
	return func(o *validateOptions) { o.eosMode = mode }
}
