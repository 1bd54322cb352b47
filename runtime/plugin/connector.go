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
	"errors"
	"log/slog"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Connector is the part of a plugin that manages a job as a whole: it
// validates configuration, knows how many tasks the job can use and splits
// the work into task configurations. The runtime runs one connector
// instance per connector on one worker; the tasks run anywhere in the
// cluster.
//
// Lifecycle: NewConnector → (Validate) → Start → NaturalLimit / TaskConfigs
// (again whenever the connector calls RequestTaskReconfiguration) → Stop.
// Validate may be called on an instance that is never started.
type Connector interface {
	// Validate checks the configuration beyond what the plugin's
	// [ConfigSpec] already checks (types, required fields, validators):
	// cross-field rules, reachability of the source system, and so on. It
	// returns one FieldError per problem; nil means valid. It must not keep
	// state: the runtime calls it on a fresh instance, and only when the
	// spec-level checks of the plugin's own fields passed (so
	// ConfigSpec.Parse succeeds on the plugin's fields).
	Validate(ctx context.Context, config map[string]string) []FieldError

	// Start starts the connector with its (validated, placeholder-resolved)
	// configuration. It must return promptly; long work belongs in
	// goroutines that stop with Stop. The context is cancelled when the
	// connector stops; cc stays valid until Stop returns.
	Start(ctx context.Context, cc ConnectorContext, config map[string]string) error

	// NaturalLimit reports how many tasks the connector could use at most
	// and why (for example 4 and [TopicPartitions] for a sink on a
	// 4-partition topic). Return [NoLimit] (and [TasksMax]) when any number
	// works. Called after Start, before each TaskConfigs.
	NaturalLimit(ctx context.Context) (limit int, reason Reason, err error)

	// TaskConfigs splits the work into at most max task configurations, one
	// map per task. Returning more than max is an error the runtime refuses
	// (KIP-1004). Each map is the full config of one task.
	TaskConfigs(max int) ([]map[string]string, error)

	// Stop stops the connector and releases its resources.
	Stop() error
}

// ConnectorContext is what the runtime offers a running connector.
type ConnectorContext interface {
	// Logger returns a logger tagged with the connector name.
	Logger() *slog.Logger
	// RequestTaskReconfiguration asks the runtime to call NaturalLimit and
	// TaskConfigs again (for example when a sink's topics grew partitions or a
	// table appeared). Cheap and non-blocking; repeated requests coalesce.
	RequestTaskReconfiguration()
	// TopicPartitions returns the partition count of each named topic that
	// exists; topics that do not exist are missing from the map.
	TopicPartitions(ctx context.Context, topics []string) (map[string]int32, error)
	// ListTopics returns the names of all (non-internal) topics on the
	// cluster, for sinks with topics.regex.
	ListTopics(ctx context.Context) ([]string, error)
	// RaiseError reports an unrecoverable error from a connector goroutine:
	// the runtime marks the connector FAILED with err as its trace.
	RaiseError(err error)
	// Go runs f on a goroutine of its own that the runtime watches: a
	// panic in f, or an error f returns, fails the connector (FAILED, with the
	// panic and its stack, scrubbed, as the trace) instead of ending the
	// worker process and every other connector on it. Every goroutine a
	// connector starts goes through Go; an error returned after the connector was told
	// to stop is only logged.
	Go(f func() error)
}

// SourceTask reads from a source system and returns records for Kafka.
//
// Lifecycle: NewSourceTask → Start → Poll … (CommitRecord … Commit)… → Stop.
// Poll, CommitRecord and Commit are called from one goroutine at a time,
// never concurrently with each other.
type SourceTask interface {
	// Start initialises the task with its task configuration (one of the
	// maps from Connector.TaskConfigs). Resume positions come from
	// tc.OffsetReader().
	Start(ctx context.Context, tc SourceTaskContext, config map[string]string) error

	// Poll returns the next batch of records. It should block until records
	// are available or a short while (about a second at most) has passed,
	// and return nil, nil when there is nothing to send. It must return
	// promptly when ctx is cancelled. An error fails the task, unless it
	// wraps [ErrRetriable], in which case Poll is called again.
	Poll(ctx context.Context) ([]*SourceRecord, error)

	// CommitRecord is called once per record after Kafka acknowledged it
	// (metadata says where it landed), or with nil metadata when a transform
	// dropped the record or errors.tolerance=all skipped it after an error.
	// Records arrive in acknowledgement order.
	CommitRecord(record *SourceRecord, metadata *RecordMetadata) error

	// Commit is called after source offsets have been stored in the offset
	// store: per source partition, the offset of the last record that Kafka
	// acknowledged together with every record returned before it (Kafka
	// acknowledges topic partitions independently, so a later record may be
	// acknowledged before an earlier one; CommitRecord tells which). The
	// task may now acknowledge up to there in the source system (for
	// example delete processed files or advance a replication slot).
	Commit(ctx context.Context) error

	// Stop releases the task's resources. It is called after the last Poll
	// returned; no further calls follow.
	Stop() error
}

// RecordMetadata says where Kafka stored a produced record.
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
}

// SourceTaskContext is what the runtime offers a source task.
type SourceTaskContext interface {
	// Logger returns a logger tagged with connector and task.
	Logger() *slog.Logger
	// OffsetReader reads the stored source offsets of this connector.
	OffsetReader() OffsetReader
	// Go runs f on a goroutine of its own that the runtime watches: a
	// panic in f, or an error f returns, fails the task (FAILED, with the
	// panic and its stack, scrubbed, as the trace) instead of ending the
	// worker process and every other connector on it. Every goroutine a
	// task starts goes through Go; an error returned after the task was told
	// to stop is only logged.
	Go(f func() error)
}

// OffsetReader reads the latest stored source offsets of a connector.
type OffsetReader interface {
	// Offset returns the stored offset of one source partition, or nil when
	// none was stored.
	Offset(ctx context.Context, partition map[string]any) (map[string]any, error)
	// Offsets returns the stored offsets of several source partitions; the
	// result is aligned with the input (nil where none was stored).
	Offsets(ctx context.Context, partitions []map[string]any) ([]map[string]any, error)
}

// SinkTask writes records consumed from Kafka into a destination system.
//
// Lifecycle: NewSinkTask → Start → Open(assigned) → Put … Flush … →
// Close(revoked) / Open(assigned) on rebalances → Stop. Calls never overlap.
// The runtime commits consumer offsets only for what Flush acknowledged, so
// delivery is at-least-once.
type SinkTask interface {
	// Start initialises the task with its task configuration.
	Start(ctx context.Context, tc SinkTaskContext, config map[string]string) error
	// Open is called when partitions are assigned to the task, before any
	// of their records are put.
	Open(ctx context.Context, partitions []TopicPartition) error
	// Put hands a batch of records to the task. The task may write them at
	// once or buffer them until Flush. An error wrapping [ErrRetriable]
	// makes the runtime retry the same batch after a pause; any other
	// error fails the task.
	Put(ctx context.Context, records []*SinkRecord) error
	// Flush makes every record put so far durable in the destination. offsets
	// holds, per partition, the offset of the next record to consume (last
	// put offset + 1); after Flush returns nil the runtime commits them.
	Flush(ctx context.Context, offsets map[TopicPartition]int64) error
	// Close is called when partitions are revoked, after a final Flush of
	// their records; the task drops their state.
	Close(ctx context.Context, partitions []TopicPartition) error
	// Stop releases the task's resources; no further calls follow.
	Stop() error
}

// SinkPreCommitter is an optional interface of a SinkTask that makes
// records durable on its own schedule, as Kafka Connect's
// SinkTask.preCommit: an object store sink uploads a file of flush.size
// records at once and must not have the offsets of a file still being
// filled committed. When a task implements it, the runtime calls PreCommit
// instead of Flush, with the same offsets (per partition the offset after
// the last record put), and commits the offsets it returns: per
// partition the offset of the first record not yet durable, never more
// than given; a partition left out is not committed. After a restart or
// a rebalance the records from the committed offsets on are delivered
// again. An error is handled as a failed Flush.
type SinkPreCommitter interface {
	PreCommit(ctx context.Context, offsets map[TopicPartition]int64) (map[TopicPartition]int64, error)
}

// SinkPutLimiter is an optional interface of a SinkTask whose Put takes
// time in proportion to its records by design (a rate limit): the runtime
// hands it at most MaxPutRecords records per Put (0 or less: no limit but
// max.poll.records). The runtime commits offsets and lets its consumer take
// part in group rebalances only between Puts, so a task that spends
// seconds per record should keep its Puts to about a second of work; a
// Put of a whole max.poll.records batch could hold a rebalance up beyond
// the rebalance timeout.
type SinkPutLimiter interface {
	MaxPutRecords() int
}

// SinkTaskContext is what the runtime offers a sink task.
type SinkTaskContext interface {
	// Logger returns a logger tagged with connector and task.
	Logger() *slog.Logger
	// Assignment returns the partitions currently assigned to the task.
	Assignment() []TopicPartition
	// Pause stops fetching from the partitions until Resume.
	Pause(partitions ...TopicPartition)
	// Resume resumes fetching from paused partitions.
	Resume(partitions ...TopicPartition)
	// RequestCommit asks the runtime to flush and commit offsets soon rather
	// than waiting for the next offset.flush.interval.ms.
	RequestCommit()
	// ResetOffsets makes the consumer continue from the given offsets (for
	// sinks that keep their own offsets in the destination). Call it from
	// Open or Put. It takes effect before the next record of those
	// partitions is delivered: after Open, the first record Put receives
	// is the one at the offset given; after a Put, records of those
	// partitions fetched from the old position are not delivered.
	ResetOffsets(offsets map[TopicPartition]int64)
	// ErrantRecordReporter returns the reporter of records the task cannot
	// write, or nil when the connector has neither a dead letter queue
	// (errors.deadletterqueue.topic.name) nor errors.log.enable=true, as
	// Kafka Connect's SinkTaskContext.errantRecordReporter (KIP-610).
	ErrantRecordReporter() ErrantRecordReporter
	// Go runs f on a goroutine of its own that the runtime watches: a
	// panic in f, or an error f returns, fails the task (FAILED, with the
	// panic and its stack, scrubbed, as the trace) instead of ending the
	// worker process and every other connector on it. Every goroutine a
	// task starts goes through Go; an error returned after the task was told
	// to stop is only logged.
	Go(f func() error)
}

// ErrantRecordReporter takes the records a sink task could not write,
// one at a time, so that one bad record need not fail the task.
type ErrantRecordReporter interface {
	// Report hands a record that failed with err to the connector's
	// errors.* handling, in the stage TASK_PUT. Under errors.tolerance=all
	// the record is counted, logged with errors.log.enable and written to
	// the dead letter queue when there is one, and Report returns nil: the
	// task drops the record and goes on (the runtime commits its offset
	// only after the dead letter queue acknowledged it). Under
	// errors.tolerance=none it returns the error the task should fail with.
	// A task calls it from Put or Flush, or from its own goroutine before
	// the Flush that covers the record returns.
	Report(ctx context.Context, record *SinkRecord, err error) error
}

// ErrRetriable marks an error after which the runtime retries the same
// call (Poll, or Put with the same batch) instead of failing the task.
// Wrap it: fmt.Errorf("db busy: %w", plugin.ErrRetriable), or use [Retriable].
var ErrRetriable = errors.New("retriable")

// Retriable wraps err so that errors.Is(err, ErrRetriable) holds.
func Retriable(err error) error {
	if err == nil {
		return nil
	}
	return retriableError{err}
}

type retriableError struct{ err error }

func (e retriableError) Error() string   { return e.err.Error() }
func (e retriableError) Unwrap() []error { return []error{e.err, ErrRetriable} }

// IsRetriable reports whether err wraps [ErrRetriable].
func IsRetriable(err error) bool { return errors.Is(err, ErrRetriable) }

// NopCommitter implements SourceTask's CommitRecord and Commit as no-ops;
// embed it in tasks that need neither.
type NopCommitter struct{}

// CommitRecord does nothing.
func (NopCommitter) CommitRecord(*SourceRecord, *RecordMetadata) error { return nil }

// Commit does nothing.
func (NopCommitter) Commit(context.Context) error { return nil }

// SinkJSONValues is an optional interface of a SinkTask that uses a
// record's value only to render it as JSON with a data.JSONEncoder (and to
// tell a tombstone, a nil value). When JSONValues returns true, the
// runtime may hand a value as data.JSONText: the JSON that enc renders of
// the value the converter would return, made straight from the bytes in
// Kafka without building the value (JsonConverter can; it does so only
// while no transform runs, and gives the converted value wherever it
// cannot tell the text cheaply). The ValueSchema is the converted value's.
// Called once, after Start.
type SinkJSONValues interface {
	JSONValues() (enc data.JSONEncoder, ok bool)
}

// RecordCommitSkipper is an optional interface of a SourceTask whose
// CommitRecord does nothing: when SkipRecordCommits returns true, the
// runtime does not call CommitRecord at all and saves its per-record
// bookkeeping (the acknowledged records and their metadata). Source offsets
// and Commit are unaffected. Implement it on the task type itself, not on a
// type meant to be embedded, so that a task overriding CommitRecord cannot
// inherit it by accident (NopCommitter deliberately does not implement it).
type RecordCommitSkipper interface {
	SkipRecordCommits() bool
}

// SkipsRecordCommits reports whether t implements RecordCommitSkipper and
// asks to skip CommitRecord. Wrappers that embed a SourceTask should
// forward SkipRecordCommits to this function on the wrapped task.
func SkipsRecordCommits(t SourceTask) bool {
	s, ok := t.(RecordCommitSkipper)
	return ok && s.SkipRecordCommits()
}
