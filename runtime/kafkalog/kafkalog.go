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

// Package kafkalog is a log kept on a compacted Kafka topic: it reads the
// topic to its end, then follows it, handing every record to an apply function.
// The worker's config, offset and status stores are built on it.
package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is one entry of the log. A nil Value is a tombstone.
type Record struct {
	Key       []byte
	Value     []byte
	Partition int32
	Offset    int64
	// Timestamp is the record's timestamp (the producer's create time).
	Timestamp time.Time
}

// Tombstone reports whether the record deletes its key.
func (r Record) Tombstone() bool { return r.Value == nil }

// Topic describes the topic a log lives on and what the worker expects of it.
type Topic struct {
	// Name of the topic.
	Name string
	// Partitions is the exact partition count required; 0 accepts any count.
	Partitions int32
	// CreatePartitions is the partition count used when the topic is created;
	// it defaults to Partitions, or 1.
	CreatePartitions int32
	// ReplicationFactor used when the topic is created; -1 uses the broker default.
	ReplicationFactor int16
	// Create allows the log to create a missing topic (standalone mode or the
	// worker's explicit internal-topic-creation flag).
	Create bool
	// CreateFlag names the setting that allows creation, for error messages.
	CreateFlag string
	// ReadCommitted reads the topic read_committed (a topic that
	// transactions write, such as the offsets topic with exactly-once
	// sources): records of aborted
	// transactions are never applied, and ReadToEnd waits for the last
	// stable offset, not the high watermark, so an open transaction (of a
	// task that is about to be fenced) does not hold it up. Transaction
	// markers are read too (and not applied), so the position moves past
	// them.
	ReadCommitted bool
}

// Config configures a Log.
type Config struct {
	Topic Topic
	// ClientOpts are the franz-go options to reach the cluster (seed brokers,
	// TLS, SASL). The log adds its own consume and produce options.
	ClientOpts []kgo.Opt
	// Apply is called for every record, in offset order per partition, from a
	// single goroutine.
	Apply func(Record)
}

// ErrClosed is returned by operations on a closed log.
var ErrClosed = errors.New("kafkalog: log is closed")

// Log is a compacted-topic log. Create it with Open.
type Log struct {
	cfg    Config
	client *kgo.Client
	adm    *kadm.Client

	mu      sync.Mutex
	pos     map[int32]int64 // next offset to apply per partition
	changed chan struct{}   // closed and replaced whenever pos moves
	fatal   error

	cancel context.CancelFunc
	done   chan struct{}
}

// Open checks (or creates) the topic, reads it to its end and starts following it.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	if cfg.Apply == nil {
		return nil, fmt.Errorf("kafkalog: topic %q: Apply function is required", cfg.Topic.Name)
	}
	if cfg.Topic.Name == "" {
		return nil, errors.New("kafkalog: topic name is empty")
	}
	opts := append([]kgo.Opt{}, cfg.ClientOpts...)
	opts = append(opts,
		kgo.ConsumeTopics(cfg.Topic.Name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(cfg.Topic.Name),
		kgo.ProducerLinger(0),
		kgo.MetadataMinAge(250*time.Millisecond), // 250ms: notice a (re)created topic quickly
	)
	if cfg.Topic.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: creating client for topic %q: %w", cfg.Topic.Name, err)
	}
	l := &Log{
		cfg:     cfg,
		client:  client,
		adm:     kadm.NewClient(client),
		pos:     map[int32]int64{},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := l.ensureTopic(ctx); err != nil {
		client.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.follow(runCtx)
	if err := l.ReadToEnd(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("kafkalog: reading topic %q to its end: %w", cfg.Topic.Name, err)
	}
	return l, nil
}

// CheckTopic verifies that an existing topic fits t; it returns a nil error
// and exists=false when the topic is missing.
func CheckTopic(ctx context.Context, adm *kadm.Client, t Topic) (exists bool, err error) {
	details, err := adm.ListTopics(ctx, t.Name)
	if err != nil {
		return false, fmt.Errorf("listing topic %q: %w", t.Name, err)
	}
	d, ok := details[t.Name]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return false, nil
	}
	if d.Err != nil {
		return false, fmt.Errorf("describing topic %q: %w", t.Name, d.Err)
	}
	var problems []string
	if t.Partitions > 0 && int32(len(d.Partitions)) != t.Partitions {
		problems = append(problems, fmt.Sprintf("it has %d partitions but must have exactly %d", len(d.Partitions), t.Partitions))
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, t.Name)
	if err != nil {
		return true, fmt.Errorf("describing configs of topic %q: %w", t.Name, err)
	}
	rc, err := rcs.On(t.Name, nil)
	if err != nil {
		return true, fmt.Errorf("describing configs of topic %q: %w", t.Name, err)
	}
	if rc.Err != nil {
		return true, fmt.Errorf("describing configs of topic %q: %w", t.Name, rc.Err)
	}
	policy := ""
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" {
			policy = c.MaybeValue()
		}
	}
	if !hasCompact(policy) {
		if policy == "" {
			policy = "unset"
		}
		problems = append(problems, fmt.Sprintf("its cleanup.policy is %q but must be \"compact\"", policy))
	}
	if len(problems) > 0 {
		return true, fmt.Errorf("internal topic %q is unusable: %s; fix the topic (for example kafka-configs --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact) or point the worker at a correct topic",
			t.Name, strings.Join(problems, " and "), t.Name)
	}
	return true, nil
}

func hasCompact(policy string) bool {
	for _, p := range strings.Split(policy, ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}

func (l *Log) ensureTopic(ctx context.Context) error {
	t := l.cfg.Topic
	exists, err := CheckTopic(ctx, l.adm, t)
	if err != nil {
		return fmt.Errorf("kafkalog: %w", err)
	}
	if exists {
		return nil
	}
	if !t.Create {
		flag := t.CreateFlag
		if flag == "" {
			flag = "the worker's internal topic creation setting"
		}
		parts := "any number of"
		if t.Partitions > 0 {
			parts = fmt.Sprint(t.Partitions)
		}
		return fmt.Errorf("kafkalog: internal topic %q does not exist: create it with cleanup.policy=compact and %s partitions, or enable %s so the worker creates it", t.Name, parts, flag)
	}
	n := t.CreatePartitions
	if n <= 0 {
		n = t.Partitions
	}
	if n <= 0 {
		n = 1
	}
	rf := t.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	_, err = l.adm.CreateTopic(ctx, n, rf, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, t.Name)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafkalog: creating internal topic %q (%d partitions, compacted): %w", t.Name, n, err)
	}
	if _, err := CheckTopic(ctx, l.adm, t); err != nil {
		return fmt.Errorf("kafkalog: after creating: %w", err)
	}
	return nil
}

func (l *Log) follow(ctx context.Context) {
	defer close(l.done)
	for {
		fetches := l.client.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return
		}
		var fatal error
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			// Most fetch errors are retried by the client; data loss and
			// authorization problems are not and leave the log stale.
			if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
				fatal = fmt.Errorf("consuming topic %q partition %d: %w", topic, p, err)
			}
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			for _, r := range p.Records {
				if r.Attrs.IsControl() {
					continue
				}
				l.cfg.Apply(Record{Key: r.Key, Value: r.Value, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp})
			}
			last := p.Records[len(p.Records)-1].Offset + 1
			l.advance(p.Partition, last)
		})
		if fatal != nil {
			l.mu.Lock()
			l.fatal = fatal
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
	}
}

func (l *Log) advance(p int32, next int64) {
	l.mu.Lock()
	if next > l.pos[p] {
		l.pos[p] = next
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.mu.Unlock()
}

// ReadToEnd returns once every record that was in the topic when it was called
// has been applied: a barrier before decisions that need the latest state.
func (l *Log) ReadToEnd(ctx context.Context) error {
	var ends kadm.ListedOffsets
	for attempt := 0; ; attempt++ {
		var err error
		if l.cfg.Topic.ReadCommitted {
			ends, err = l.adm.ListCommittedOffsets(ctx, l.cfg.Topic.Name)
		} else {
			ends, err = l.adm.ListEndOffsets(ctx, l.cfg.Topic.Name)
		}
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			break
		}
		// A topic created a moment ago may not be known to every broker yet.
		if !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, kerr.LeaderNotAvailable) && !errors.Is(err, kerr.NotLeaderForPartition) || attempt >= 50 {
			return fmt.Errorf("listing end offsets of topic %q: %w", l.cfg.Topic.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("listing end offsets of topic %q: %w", l.cfg.Topic.Name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	return l.waitFor(ctx, want)
}

// WaitApplied blocks until every partition's applied position (next offset)
// reaches want, e.g. after writes acknowledged at known offsets.
func (l *Log) WaitApplied(ctx context.Context, want map[int32]int64) error {
	return l.waitFor(ctx, want)
}

// waitFor blocks until every partition's applied position reaches want.
func (l *Log) waitFor(ctx context.Context, want map[int32]int64) error {
	for {
		l.mu.Lock()
		if l.fatal != nil {
			err := l.fatal
			l.mu.Unlock()
			return err
		}
		ok := true
		for p, end := range want {
			if end > 0 && l.pos[p] < end {
				ok = false
				break
			}
		}
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-l.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Send writes key/value (nil value = tombstone) and returns once the broker
// acknowledged it. It does not wait for the record to be applied locally; use
// SendAndApply for that.
func (l *Log) Send(ctx context.Context, key, value []byte) (partition int32, offset int64, err error) {
	r := &kgo.Record{Topic: l.cfg.Topic.Name, Key: key, Value: value}
	if err := l.client.ProduceSync(ctx, r).FirstErr(); err != nil {
		return 0, 0, fmt.Errorf("writing key %q to topic %q: %w", key, l.cfg.Topic.Name, err)
	}
	return r.Partition, r.Offset, nil
}

// SendAndApply writes key/value and returns once this log has applied it, so
// the caller's own view includes the write.
func (l *Log) SendAndApply(ctx context.Context, key, value []byte) error {
	p, o, err := l.Send(ctx, key, value)
	if err != nil {
		return err
	}
	return l.waitFor(ctx, map[int32]int64{p: o + 1})
}

// Produce writes key/value asynchronously; done is called after the broker
// acknowledged (or refused) it. Bounded by the client's buffered records.
func (l *Log) Produce(ctx context.Context, key, value []byte, done func(partition int32, offset int64, err error)) {
	l.client.Produce(ctx, &kgo.Record{Topic: l.cfg.Topic.Name, Key: key, Value: value}, func(r *kgo.Record, err error) {
		if done != nil {
			done(r.Partition, r.Offset, err)
		}
	})
}

// Flush waits for every asynchronously produced record to be acknowledged.
func (l *Log) Flush(ctx context.Context) error { return l.client.Flush(ctx) }

// Positions returns the next offset to apply per partition (the log's
// position; for the config topic this is the offset workers exchange).
func (l *Log) Positions() map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int32]int64, len(l.pos))
	for p, o := range l.pos {
		out[p] = o
	}
	return out
}

// Topic returns the topic name.
func (l *Log) Topic() string { return l.cfg.Topic.Name }

// Close stops following and closes the client, flushing pending writes.
func (l *Log) Close() {
	fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = l.client.Flush(fctx)
	fcancel()
	if l.cancel != nil {
		l.cancel()
		<-l.done
	}
	l.client.Close()
}
