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

// Package rangesource holds RangeSource, a deterministic source connector
// for tests and benchmarks: it emits one record per ID of a range, split
// into contiguous sub-ranges across tasks, and resumes from stored offsets.
package rangesource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the range source.
const Version = "0.1.0"

// Configuration keys.
const (
	KeyStart          = "start"
	KeyEnd            = "end"
	KeyCount          = "count"
	KeyTopic          = "topic"
	KeyBatchSize      = "batch.size"
	KeyRecordSize     = "record.size"
	KeyRate           = "rate"
	KeyRanges         = "ranges"
	KeyPollIntervalMs = "poll.interval.ms"
	// KeyRangeStart, KeyRangeEnd and KeyRangeCount are accepted as aliases
	// of start, end and count.
	KeyRangeStart = "range.start"
	KeyRangeEnd   = "range.end"
	KeyRangeCount = "range.count"
	// KeyTaskRanges is set by the connector in each task config: the
	// task's sub-ranges as "start-end" items (end exclusive), comma-separated.
	KeyTaskRanges = "task.ranges"
	// KeyTaskCount is set by the connector: how many tasks share the rate.
	KeyTaskCount = "task.count"
)

// Source partition and offset keys.
const (
	PartitionRange = "range" // "start-end", end exclusive
	OffsetNext     = "next"  // next ID to emit
)

// ValueSchema is the schema of record values: the ID and a payload.
var ValueSchema = data.StructOf("dev.conveyor.connect.range.Record",
	data.F("id", data.Int64Schema),
	data.F("payload", data.StringSchema),
)

// Plugin returns the RangeSource plugin.
func Plugin() plugin.Plugin {
	return plugin.Plugin{
		Class:   "dev.conveyor.connect.range.RangeSourceConnector",
		Kind:    plugin.KindSource,
		Version: Version,
		Doc:     "Emits one record per ID in [start, end), split into contiguous sub-ranges across tasks; deterministic and resumable.",
		Spec: plugin.ConfigSpec{Fields: []plugin.ConfigField{
			{Name: KeyTopic, Type: plugin.TypeString, Required: true, Group: "Range", Importance: plugin.ImportanceHigh,
				Validator: plugin.NonEmpty(), Doc: "The topic to write records to."},
			{Name: KeyStart, Type: plugin.TypeLong, Default: "0", Group: "Range", Importance: plugin.ImportanceHigh,
				Validator: plugin.AtLeast(0), Max: maxID, Doc: "First ID (inclusive)."},
			{Name: KeyEnd, Type: plugin.TypeLong, Group: "Range", Importance: plugin.ImportanceHigh,
				Max: maxID, Doc: "Last ID (exclusive). Set end or count."},
			{Name: KeyCount, Type: plugin.TypeLong, Group: "Range", Importance: plugin.ImportanceHigh,
				Validator: plugin.AtLeast(0), Max: maxID, Doc: "Number of IDs from start. Set end or count."},
			{Name: KeyRangeStart, Type: plugin.TypeLong, Group: "Range", Importance: plugin.ImportanceLow,
				Validator: plugin.AtLeast(0), Max: maxID, Doc: "Alias of start."},
			{Name: KeyRangeEnd, Type: plugin.TypeLong, Group: "Range", Importance: plugin.ImportanceLow,
				Max: maxID, Doc: "Alias of end."},
			{Name: KeyRangeCount, Type: plugin.TypeLong, Group: "Range", Importance: plugin.ImportanceLow,
				Validator: plugin.AtLeast(0), Max: maxID, Doc: "Alias of count."},
			{Name: KeyRanges, Type: plugin.TypeInt, Group: "Range", Importance: plugin.ImportanceMedium,
				Validator: plugin.AtLeast(1), Max: MaxRanges, Doc: "Split the IDs into this many fixed sub-ranges (the natural task limit); offsets then survive tasks.max changes. Unset: min(tasks.max, count) sub-ranges."},
			{Name: KeyBatchSize, Type: plugin.TypeInt, Default: "1000", Group: "Range", Importance: plugin.ImportanceLow,
				Validator: plugin.AtLeast(1), Max: 100_000, Doc: "Maximum records returned by one poll."},
			{Name: KeyRecordSize, Type: plugin.TypeInt, Default: "200", Group: "Range", Importance: plugin.ImportanceLow,
				Validator: plugin.AtLeast(0), Max: 1 << 20, Doc: "Length of the payload string in bytes."},
			{Name: KeyRate, Type: plugin.TypeDouble, Default: "0", Group: "Range", Importance: plugin.ImportanceLow,
				Validator: plugin.AtLeast(0), Max: 1e9, Doc: "Maximum records per second for the whole connector, shared by its tasks; 0 = unlimited."},
			{Name: KeyPollIntervalMs, Type: plugin.TypeLong, Default: "500", Group: "Range", Importance: plugin.ImportanceLow,
				Validator: plugin.AtLeast(1), Max: 60000, Doc: "How long a poll waits once the task's ranges are done, in ms."},
		}},
		NewConnector:  func() plugin.Connector { return &Connector{} },
		NewSourceTask: func() plugin.SourceTask { return &Task{} },
	}
}

// MaxRanges bounds ranges: every sub-range is a string in a task config
// and a source partition with its own offset.
const MaxRanges = 10_000

// maxID bounds the IDs (start, end, count): a quadrillion, far beyond any
// run, and exact in a float64.
const maxID = 1e15

// Range is a half-open ID range [Start, End).
type Range struct{ Start, End int64 }

// String renders "start-end".
func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Start, r.End) }

// ParseRange parses "start-end".
func ParseRange(s string) (Range, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return Range{}, fmt.Errorf("range %q is not start-end", s)
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || end < start {
		return Range{}, fmt.Errorf("range %q is not start-end with start <= end", s)
	}
	return Range{start, end}, nil
}

// Split divides r into n contiguous sub-ranges whose sizes differ by at
// most one (n is capped at the size of r, and at least 1).
func Split(r Range, n int) []Range {
	size := r.End - r.Start
	if int64(n) > size {
		n = int(size)
	}
	if n < 1 {
		n = 1
	}
	out := make([]Range, n)
	base, extra := size/int64(n), size%int64(n)
	next := r.Start
	for i := range out {
		l := base
		if int64(i) < extra {
			l++
		}
		out[i] = Range{next, next + l}
		next += l
	}
	return out
}

var aliases = [][2]string{{KeyRangeStart, KeyStart}, {KeyRangeEnd, KeyEnd}, {KeyRangeCount, KeyCount}}

// normalize returns a copy of config with the range.* aliases moved to
// their canonical keys.
func normalize(config map[string]string) (map[string]string, []plugin.FieldError) {
	out := make(map[string]string, len(config))
	for k, v := range config {
		out[k] = v
	}
	var errs []plugin.FieldError
	for _, a := range aliases {
		v, ok := out[a[0]]
		if !ok {
			continue
		}
		if w, ok := out[a[1]]; ok && strings.TrimSpace(w) != strings.TrimSpace(v) {
			errs = append(errs, plugin.FieldError{Name: a[0], Message: fmt.Sprintf("%s is an alias of %s; set only one of them", a[0], a[1])})
			continue
		}
		delete(out, a[0])
		out[a[1]] = v
	}
	return out, errs
}

// parse normalizes and parses a configuration.
func parse(config map[string]string) (map[string]string, plugin.Config, error) {
	norm, errs := normalize(config)
	if len(errs) > 0 {
		return nil, plugin.Config{}, &plugin.ConfigError{Fields: errs}
	}
	cfg, err := Plugin().Spec.Parse(norm)
	return norm, cfg, err
}

// bounds reads [start, end) from a parsed config.
func bounds(cfg plugin.Config) (Range, error) {
	start := cfg.Long(KeyStart)
	_, hasEnd := cfg.Get(KeyEnd)
	_, hasCount := cfg.Get(KeyCount)
	switch {
	case hasEnd && hasCount:
		return Range{}, errors.New("set only one of end and count")
	case hasEnd:
		end := cfg.Long(KeyEnd)
		if end < start {
			return Range{}, fmt.Errorf("end %d is below start %d", end, start)
		}
		return Range{start, end}, nil
	case hasCount:
		return Range{start, start + cfg.Long(KeyCount)}, nil
	}
	return Range{}, errors.New("set end or count")
}

// Connector splits the ID range over tasks.
type Connector struct {
	config map[string]string
	all    Range
	ranges int // 0 = follow tasks.max
}

// Validate checks end/count.
func (c *Connector) Validate(_ context.Context, config map[string]string) []plugin.FieldError {
	norm, errs := normalize(config)
	if len(errs) > 0 {
		return errs
	}
	cfg, err := Plugin().Spec.Parse(norm)
	if err != nil {
		return nil // reported by the spec already
	}
	if _, err := bounds(cfg); err != nil {
		return []plugin.FieldError{{Name: KeyEnd, Message: err.Error()}, {Name: KeyCount, Message: err.Error()}}
	}
	return nil
}

// Start parses the configuration.
func (c *Connector) Start(_ context.Context, _ plugin.ConnectorContext, config map[string]string) error {
	config, cfg, err := parse(config)
	if err != nil {
		return err
	}
	r, err := bounds(cfg)
	if err != nil {
		return fmt.Errorf("range source: %w", err)
	}
	c.config, c.all, c.ranges = config, r, cfg.Int(KeyRanges)
	return nil
}

// NaturalLimit is the ranges setting, else the number of IDs.
func (c *Connector) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	size := c.all.End - c.all.Start
	limit := int64(c.ranges)
	if limit == 0 || limit > size {
		limit = size
	}
	const maxInt = int64(^uint(0) >> 1)
	return int(min(limit, maxInt)), plugin.Ranges, nil
}

// TaskConfigs splits the IDs into sub-ranges (ranges, or min(max, count))
// and deals contiguous groups of them to min(max, sub-ranges) tasks.
func (c *Connector) TaskConfigs(max int) ([]map[string]string, error) {
	if c.all.End == c.all.Start {
		return nil, nil
	}
	parts := c.ranges
	if parts == 0 {
		parts = max
	}
	subs := Split(c.all, parts)
	groups := Split(Range{0, int64(len(subs))}, min(max, len(subs)))
	out := make([]map[string]string, len(groups))
	for i, g := range groups {
		cfg := make(map[string]string, len(c.config)+2)
		for k, v := range c.config {
			cfg[k] = v
		}
		items := make([]string, 0, g.End-g.Start)
		for _, r := range subs[g.Start:g.End] {
			items = append(items, r.String())
		}
		cfg[KeyTaskRanges] = strings.Join(items, ",")
		cfg[KeyTaskCount] = strconv.Itoa(len(groups))
		out[i] = cfg
	}
	return out, nil
}

// Stop does nothing.
func (c *Connector) Stop() error { return nil }

type rangeState struct {
	r    Range
	part map[string]any
	next int64
	// offset is the offset map of the last record emitted ({"next":
	// next}); records share it until the end of a batch.
	offset map[string]any
}

// Task emits the IDs of its sub-ranges in order: key = ID (int64), value =
// {id, payload} with a payload of record.size bytes, source partition
// {"range": "start-end"}, offset {"next": ID+1}.
type Task struct {
	plugin.NopCommitter
	log       *slog.Logger
	topic     string
	batchSize int
	pad       string
	rate      float64 // records/s for this task; 0 = unlimited
	interval  time.Duration
	ranges    []*rangeState
	cur       int
	started   time.Time
	emitted   int64
	now       func() time.Time
}

// Start reads the task's ranges and their stored offsets.
func (t *Task) Start(ctx context.Context, tc plugin.SourceTaskContext, config map[string]string) error {
	config, cfg, err := parse(config)
	if err != nil {
		return err
	}
	t.log = tc.Logger()
	t.topic = cfg.String(KeyTopic)
	t.batchSize = cfg.Int(KeyBatchSize)
	t.pad = strings.Repeat("x", cfg.Int(KeyRecordSize))
	t.interval = time.Duration(cfg.Long(KeyPollIntervalMs)) * time.Millisecond
	if t.now == nil {
		t.now = time.Now
	}
	tasks := 1
	if n, err := strconv.Atoi(config[KeyTaskCount]); err == nil && n > 0 {
		tasks = n
	}
	t.rate = cfg.Double(KeyRate) / float64(tasks)
	raw := config[KeyTaskRanges]
	if raw == "" { // run standalone: the whole range
		all, err := bounds(cfg)
		if err != nil {
			return fmt.Errorf("range source task: %w", err)
		}
		raw = all.String()
	}
	var parts []map[string]any
	for _, item := range plugin.SplitList(raw) {
		r, err := ParseRange(item)
		if err != nil {
			return fmt.Errorf("range source task: %s: %w", KeyTaskRanges, err)
		}
		p := map[string]any{PartitionRange: r.String()}
		t.ranges = append(t.ranges, &rangeState{r: r, part: p, next: r.Start, offset: map[string]any{OffsetNext: r.Start}})
		parts = append(parts, p)
	}
	offsets, err := tc.OffsetReader().Offsets(ctx, parts)
	if err != nil {
		return fmt.Errorf("range source task: reading stored offsets: %w", err)
	}
	for i, off := range offsets {
		if off == nil || i >= len(t.ranges) {
			continue
		}
		next, err := plugin.OffsetInt64(off[OffsetNext])
		if err != nil {
			return fmt.Errorf("range source task: stored offset of range %s: %w", t.ranges[i].r, err)
		}
		rs := t.ranges[i]
		rs.next = min(max(next, rs.r.Start), rs.r.End)
		rs.offset = map[string]any{OffsetNext: rs.next}
		t.log.Info("resuming range", "range", rs.r.String(), "next", rs.next)
	}
	return nil
}

// Payload returns the deterministic payload of an ID for a record size:
// the decimal ID, a '-', then 'x' up to size bytes.
func Payload(id int64, size int) string {
	var b strings.Builder
	writePayload(&b, id, strings.Repeat("x", size))
	return b.String()
}

// writePayload writes the payload of id, len(pad) bytes, to b.
func writePayload(b *strings.Builder, id int64, pad string) {
	var num [24]byte
	s := append(strconv.AppendInt(num[:0], id, 10), '-')
	if len(s) >= len(pad) {
		b.Write(s[:len(pad)])
		return
	}
	b.Write(s)
	b.WriteString(pad[len(s):])
}

// Poll returns the next batch, honouring the rate; nil once all ranges are done.
func (t *Task) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	n := t.batchSize
	if t.rate > 0 {
		now := t.now()
		if t.started.IsZero() {
			t.started = now
		}
		// Record k (0-based) is due k/rate seconds after the start.
		allowed := int64(t.rate*now.Sub(t.started).Seconds()) + 1 - t.emitted
		if allowed <= 0 {
			due := t.started.Add(time.Duration(float64(t.emitted) / t.rate * float64(time.Second)))
			_ = sleep(ctx, min(max(due.Sub(now), time.Millisecond), time.Second))
			return nil, nil
		}
		n = int(min(int64(n), allowed))
	}
	var left int64
	for _, rs := range t.ranges[t.cur:] {
		left += max(rs.r.End-rs.next, 0)
	}
	n = int(min(int64(n), left))
	// A batch costs a handful of allocations plus two per record (the
	// boxed ID and the boxed payload string): the records, their structs,
	// their struct values and their payloads each share one backing array
	// or string, and offsets
	// advance per batch (below). The range source runs in benchmarks,
	// where its own cost counts against the runtime's; the runtime never
	// mutates records.
	recs := make([]plugin.SourceRecord, n)
	out := make([]*plugin.SourceRecord, 0, n)
	vals := make([]any, 2*n)
	var payloads strings.Builder
	payloads.Grow(n * len(t.pad))
	for len(out) < n && t.cur < len(t.ranges) {
		rs := t.ranges[t.cur]
		if rs.next >= rs.r.End {
			t.cur++
			continue
		}
		for len(out) < n && rs.next < rs.r.End {
			i := len(out)
			var id any = rs.next // boxed once for the key and the value's id
			writePayload(&payloads, rs.next, t.pad)
			rs.next++
			vals[2*i] = id
			recs[i] = plugin.SourceRecord{
				SourcePartition: rs.part,
				SourceOffset:    rs.offset,
				Topic:           t.topic,
				KeySchema:       data.Int64Schema,
				Key:             id,
				ValueSchema:     ValueSchema,
			}
			out = append(out, &recs[i])
		}
		// The last record of the range in this batch carries the exact
		// offset; the ones before it carry the previous one (where the
		// batch started), which is safe to resume from. Stored offsets
		// are exact at batch ends, and a restart after a crash repeats
		// at most the rest of one batch.
		rs.offset = map[string]any{OffsetNext: rs.next}
		out[len(out)-1].SourceOffset = rs.offset
	}
	all, size := payloads.String(), len(t.pad)
	for i := range out {
		vals[2*i+1] = all[i*size : (i+1)*size]
	}
	structs, err := data.NewStructsValues(ValueSchema, vals[:2*len(out)])
	if err != nil {
		return nil, fmt.Errorf("range source: %w", err)
	}
	for i := range structs {
		recs[i].Value = &structs[i]
	}
	t.emitted += int64(len(out))
	if len(out) == 0 {
		_ = sleep(ctx, t.interval)
		return nil, nil
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Done reports whether the task emitted every ID of its ranges.
func (t *Task) Done() bool {
	for _, rs := range t.ranges {
		if rs.next < rs.r.End {
			return false
		}
	}
	return true
}

// Stop does nothing.
func (t *Task) Stop() error { return nil }

// SkipRecordCommits tells the runtime that CommitRecord (a no-op here) need
// not be called.
func (t *Task) SkipRecordCommits() bool { return true }

// ExactlyOnceSupport: a task restarted from its stored offsets emits the
// same ids again, so the source runs exactly-once.
func (c *Connector) ExactlyOnceSupport(map[string]string) plugin.ExactlyOnceSupport {
	return plugin.ExactlyOnceSupported
}
