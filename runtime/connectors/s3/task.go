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

package s3

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/parquet-go/parquet-go"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
)

// object is one object being filled or waiting for its upload.
type object struct {
	tp      plugin.TopicPartition
	name    string
	path    string // the time partitioner's path; "" otherwise
	start   int64  // offset of the first record
	last    int64  // offset of the last record
	count   int
	firstTS time.Time // timestamp of the first record
	opened  time.Time // wall clock, for rotate.schedule.interval.ms
	schema  *data.Schema
	buf     bytes.Buffer
	gz      *gzip.Writer
	pw      *parquet.Writer // format.class=parquet
}

// TopicPartition is the partition of the object's records.
func (o *object) TopicPartition() plugin.TopicPartition { return o.tp }

// Task fills one object per topic partition in Put and hands each full
// object to sinkwriter, whose writes upload up to four objects at once,
// oldest first; an upload retries network failures and 5xx answers with
// backoff until it succeeds. It implements plugin.SinkPreCommitter: the
// runtime commits, per partition, the first offset of the oldest object
// not yet uploaded (or, with none, everything put), so a crash redelivers
// exactly the records of the objects that were not complete, and they are
// cut into the same objects again.
//
// Put, PreCommit, Flush and Close (which the runtime never runs at once)
// alone use open and next.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter
	client *minio.Client
	line   []byte
	// format.class=parquet: the record's row (in row[0]), and the value
	// schemas compiled for Parquet, by pointer (converters share theirs).
	row     []parquet.Row
	pq      *pqSchema
	pqByPtr map[*data.Schema]*pqSchema

	open map[plugin.TopicPartition]*object // being filled
	next map[plugin.TopicPartition]int64   // offset after the last record taken, per partition
	// The full objects, queued or uploading; Open and Flush are the
	// Writer's (the runtime calls PreCommit instead); nil before Start.
	*sinkwriter.Writer[*object]
}

// pageBuffer is the Parquet writers' page buffer per column: every open
// object (one per partition) holds one. parquet-go's default, 256 KiB,
// took 89 MB of heap for 100 open objects of 500 small rows; 32 KiB, 23 MB.
const pageBuffer = 32 << 10

// uploaders is how many objects upload at once; maxPending bounds the
// full objects waiting for them (and so the memory they hold).
const (
	uploaders  = 4
	maxPending = 8
)

// Start parses the configuration and starts the uploader.
func (t *Task) Start(ctx context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err == nil {
		err = s.checkAmbient(ctx)
	}
	if err != nil {
		return err
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	t.s, t.log, t.errant, t.client = s, tc.Logger(), tc.ErrantRecordReporter(), c
	t.open = map[plugin.TopicPartition]*object{}
	t.next = map[plugin.TopicPartition]int64{}
	t.row, t.pqByPtr = make([]parquet.Row, 1), map[*data.Schema]*pqSchema{}
	t.Writer = sinkwriter.Start(sinkwriter.Config[*object]{
		Name: "S3", Write: t.upload,
		BatchSize: 1, MaxInFlight: uploaders, MaxHeld: maxPending, Go: tc.Go,
	})
	return nil
}

// Put adds the records to their partitions' objects.
func (t *Task) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	if err := t.Writer.Err(); err != nil {
		return err
	}
	for _, r := range records {
		tp := r.TopicPartition()
		if n, ok := t.next[tp]; ok && r.Offset < n {
			// Taken already: a Put retried after a pause, or records
			// rewound after a failed commit.
			continue
		}
		path, err := t.encode(r)
		if errors.Is(err, errSkip) {
			t.next[tp] = r.Offset + 1
			continue
		}
		if err != nil {
			if t.errant == nil {
				return err
			}
			if rerr := t.errant.Report(ctx, r, err); rerr != nil {
				return rerr
			}
			t.next[tp] = r.Offset + 1
			continue
		}
		o := t.open[tp]
		if o != nil && t.ends(o, r, path) {
			if err := t.finish(ctx, o); err != nil {
				return err // o stays open; r comes again
			}
			o = nil
		}
		if o == nil {
			o = t.newObject(r, path)
			t.open[tp] = o
		}
		switch {
		case o.pw != nil:
			if _, err := o.pw.WriteRows(t.row); err != nil {
				return fmt.Errorf("record %s/%d: writing its Parquet row: %w", tp, r.Offset, err)
			}
		case o.gz != nil:
			_, _ = o.gz.Write(t.line)
		default:
			o.buf.Write(t.line)
		}
		o.count++
		o.last = r.Offset
		t.next[tp] = r.Offset + 1
		if o.count >= t.s.flushSize {
			if err := t.finish(ctx, o); err != nil {
				return err // o stays open and full: the next record finishes it
			}
		}
	}
	return nil
}

var errSkip = errors.New("skip")

// encode renders the record's line into t.line (its row into t.row with
// format.class=parquet) and returns its time path.
func (t *Task) encode(r *plugin.SinkRecord) (string, error) {
	t.line = t.line[:0]
	if r.Value == nil {
		switch t.s.nulls {
		case NullIgnore:
			return "", errSkip
		case NullFail:
			return "", fmt.Errorf("record %s/%d: a null value (tombstone), and behavior.on.null.values=fail", r.TopicPartition(), r.Offset)
		}
		t.line = append(t.line, "null\n"...)
	} else if t.s.format == FormatParquet {
		if err := t.encodeRow(r); err != nil {
			return "", fmt.Errorf("record %s/%d: %w", r.TopicPartition(), r.Offset, err)
		}
	} else if t.s.format == FormatBytes {
		switch v := r.Value.(type) {
		case []byte:
			t.line = append(append(t.line, v...), '\n')
		case string:
			t.line = append(append(t.line, v...), '\n')
		default:
			return "", fmt.Errorf("record %s/%d: the value is %T; format.class=bytes needs bytes or a string (ByteArrayConverter, StringConverter)", r.TopicPartition(), r.Offset, r.Value)
		}
	} else {
		var err error
		if t.line, err = lineEncoder.Append(t.line, r.ValueSchema, r.Value); err != nil {
			return "", fmt.Errorf("record %s/%d: the value cannot be written as JSON: %w", r.TopicPartition(), r.Offset, err)
		}
		t.line = append(t.line, '\n')
	}
	if !t.s.timePartition {
		return "", nil
	}
	at, err := t.recordTime(r)
	if err != nil {
		return "", fmt.Errorf("record %s/%d: %w", r.TopicPartition(), r.Offset, err)
	}
	return timePath(t.s.pathFormat, at), nil
}

// lineEncoder writes values as format.class=json lines: decimals as
// numbers.
var lineEncoder = data.JSONEncoder{NumericDecimal: true}

// JSONValues implements plugin.SinkJSONValues: with format.class=json the
// value is only rendered by lineEncoder, unless the time partitioner reads
// a field of it.
func (t *Task) JSONValues() (data.JSONEncoder, bool) {
	return lineEncoder, t.s.format == FormatJSON && !(t.s.timePartition && t.s.timestampField != "")
}

// encodeRow shreds the record's value into t.row[0], with the compiled
// schema in t.pq.
func (t *Task) encodeRow(r *plugin.SinkRecord) error {
	if r.ValueSchema == nil {
		return fmt.Errorf("the value (%T) has no schema, and format.class=parquet takes its columns from one: use a converter that gives schemas (JsonConverter with value.converter.schemas.enable=true and values in its schema envelope, or a schema registry converter), or another format.class", r.Value)
	}
	pq := t.pqByPtr[r.ValueSchema]
	if pq == nil {
		var err error
		if pq, err = compileParquet(r.ValueSchema); err != nil {
			return fmt.Errorf("format.class=parquet: %w", err)
		}
		if len(t.pqByPtr) >= 64 {
			clear(t.pqByPtr)
		}
		t.pqByPtr[r.ValueSchema] = pq
	}
	row, err := pq.sh.row(t.row[0][:0], r.Value)
	t.row[0] = row
	if err != nil {
		return fmt.Errorf("format.class=parquet: %w", err)
	}
	t.pq = pq
	return nil
}

// recordTime is the time the time partitioner files the record under.
func (t *Task) recordTime(r *plugin.SinkRecord) (time.Time, error) {
	f := t.s.timestampField
	if f == "" {
		return r.Timestamp, nil
	}
	var v any
	switch x := r.Value.(type) {
	case *data.Struct:
		v, _ = x.Lookup(f)
	case map[string]any:
		v = x[f]
	default:
		return time.Time{}, fmt.Errorf("timestamp.field=%s needs a struct or JSON object value, not %T", f, r.Value)
	}
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case int64:
		return time.UnixMilli(x), nil
	case int32:
		return time.UnixMilli(int64(x)), nil
	case float64:
		return time.UnixMilli(int64(x)), nil
	case json.Number:
		n, err := x.Int64()
		if err == nil {
			return time.UnixMilli(n), nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp.field=%s is %T (%v), want a Timestamp or epoch milliseconds", f, v, v)
}

// timePath renders path.format for a time (UTC).
func timePath(format string, at time.Time) string {
	at = at.UTC()
	two := func(n int) string { return fmt.Sprintf("%02d", n) }
	return strings.NewReplacer("${yyyy}", strconv.Itoa(at.Year()), "${MM}", two(int(at.Month())), "${dd}", two(at.Day()),
		"${HH}", two(at.Hour()), "${mm}", two(at.Minute())).Replace(format)
}

// ends tells whether r must start the next object instead of joining o:
// its timestamp is rotate.interval.ms past o's first, its value schema
// differs, or its time path does.
func (t *Task) ends(o *object, r *plugin.SinkRecord, path string) bool {
	if o.count >= t.s.flushSize {
		return true // full, its upload not yet queued
	}
	if t.s.rotate > 0 && !o.firstTS.IsZero() && r.Timestamp.Sub(o.firstTS) >= t.s.rotate {
		return true
	}
	if r.Value != nil && o.schema != r.ValueSchema && (o.schema == nil || r.ValueSchema == nil || !o.schema.Equal(r.ValueSchema)) {
		return true
	}
	return path != o.path
}

// newObject opens the object that starts with r.
func (t *Task) newObject(r *plugin.SinkRecord, path string) *object {
	ext := ".json"
	switch t.s.format {
	case FormatBytes:
		ext = ".bin"
	case FormatParquet:
		ext = codecs[t.s.codec].ext + ".parquet"
	}
	if t.s.gzip {
		ext += ".gz"
	}
	dir := "partition=" + strconv.Itoa(int(r.Partition))
	if t.s.timePartition {
		dir = path
	}
	name := fmt.Sprintf("%s/%s/%s+%d+%010d%s", r.Topic, dir, r.Topic, r.Partition, r.Offset, ext)
	if t.s.topicsDir != "" {
		name = t.s.topicsDir + "/" + name
	}
	o := &object{tp: r.TopicPartition(), name: name, path: path, start: r.Offset, firstTS: r.Timestamp, opened: time.Now(), schema: r.ValueSchema}
	if t.s.gzip {
		o.gz, _ = gzip.NewWriterLevel(&o.buf, gzip.DefaultCompression)
	}
	if t.s.format == FormatParquet {
		o.pw = parquet.NewWriter(&o.buf, t.pq.schema, parquet.Compression(codecs[t.s.codec].codec), parquet.PageBufferSize(pageBuffer))
	}
	return o
}

// finish closes o and queues it for upload, waiting while maxPending
// objects are queued or uploading; when ctx ends first, o stays open.
func (t *Task) finish(ctx context.Context, o *object) error {
	if err := t.Writer.Ready(ctx); err != nil {
		return err
	}
	if o.pw != nil {
		// On a failure o stays open, so PreCommit keeps its records
		// uncommitted; the task fails with the error.
		if err := o.pw.Close(); err != nil {
			return fmt.Errorf("closing the Parquet file of %s: %w", o.name, err)
		}
	}
	if t.open[o.tp] == o {
		delete(t.open, o.tp)
	}
	if o.gz != nil {
		_ = o.gz.Close()
	}
	t.Writer.Add(o)
	return nil
}

// PreCommit uploads objects open longer than rotate.schedule.interval.ms
// and returns, per partition, the offset up to which records are in
// uploaded objects.
func (t *Task) PreCommit(ctx context.Context, offsets map[plugin.TopicPartition]int64) (map[plugin.TopicPartition]int64, error) {
	if err := t.Writer.Err(); err != nil {
		return nil, err
	}
	if t.s.schedule > 0 {
		for _, o := range t.open {
			if time.Since(o.opened) >= t.s.schedule {
				if err := t.finish(ctx, o); err != nil {
					return nil, err
				}
			}
		}
	}
	out := make(map[plugin.TopicPartition]int64, len(offsets))
	for tp, off := range offsets {
		if o := t.open[tp]; o != nil {
			off = min(off, o.start)
		}
		out[tp] = off
	}
	for o := range t.Writer.Pending() {
		if off, ok := out[o.tp]; ok {
			out[o.tp] = min(off, o.start)
		}
	}
	return out, nil
}

// Close drops the open and queued objects of revoked partitions after the
// uploads in flight: their records are delivered again to the next owner,
// which cuts the same objects.
func (t *Task) Close(ctx context.Context, partitions []plugin.TopicPartition) error {
	for _, tp := range partitions {
		delete(t.open, tp)
		delete(t.next, tp)
	}
	return t.Writer.Close(ctx, partitions)
}

// Stop cancels the uploads in flight and waits for them.
func (t *Task) Stop() error {
	if t.Writer == nil {
		return nil
	}
	t.Writer.Stop()
	return nil
}

// upload uploads one object (sinkwriter's batch of one) until it
// succeeds, fails for good or ctx ends. Objects of one partition may
// finish out of order; PreCommit commits only up to the oldest one still
// pending.
func (t *Task) upload(ctx context.Context, batch []*object) ([]*object, error) {
	for _, o := range batch {
		if err := t.put(ctx, o); err != nil {
			return batch, err
		}
	}
	return nil, nil
}

// put uploads one object until it succeeds, fails for good or ctx ends.
func (t *Task) put(ctx context.Context, o *object) error {
	contentType := "application/json"
	switch {
	case t.s.gzip:
		contentType = "application/gzip"
	case t.s.format == FormatParquet:
		contentType = "application/vnd.apache.parquet"
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := t.client.PutObject(ctx, t.s.bucket, o.name, bytes.NewReader(o.buf.Bytes()), int64(o.buf.Len()),
			minio.PutObjectOptions{ContentType: contentType, PartSize: t.s.partSize, DisableContentSha256: true})
		if err == nil {
			if attempt > 1 {
				t.log.Info("S3 uploads resumed", "object", o.name, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return plugin.Retriable(fmt.Errorf("uploading %s: %w", o.name, context.Cause(ctx)))
		}
		if !retriable(err) {
			return fmt.Errorf("uploading %s (records %s/%d to %d) to bucket %s: %w", o.name, o.tp, o.start, o.last, t.s.bucket, err)
		}
		t.log.Warn("uploading to S3 failed; retrying", "object", o.name, "attempt", attempt, "backoff", backoff, "error", err)
		select {
		case <-ctx.Done():
			return plugin.Retriable(fmt.Errorf("uploading %s: %w", o.name, context.Cause(ctx)))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// retriable tells failures worth another try (the network, throttling,
// server errors) from refusals (credentials, a missing bucket).
func retriable(err error) bool {
	code := minio.ToErrorResponse(err).StatusCode
	return code == 0 || code == 429 || code == 408 || code >= 500
}
