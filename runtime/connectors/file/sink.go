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

package file

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Configuration keys of FileSink (besides the common topics/topics.regex).
const (
	// KeyPartitionCheckIntervalMs sets how often the connector re-reads the
	// partition counts of its topics to ask for task reconfiguration.
	KeyPartitionCheckIntervalMs = "partition.check.interval.ms"
	// KeySinkRate caps how many records per second each task writes (0: no cap),
	// for demos and tests that need a backlog to last (autoscaling on lag).
	KeySinkRate = "rate"
)

// writeChunk is how many buffered bytes trigger a write within a Put; a
// Put writes the rest at its end. Each write holds whole lines only, so
// tasks appending to the same file never interleave partial lines.
const writeChunk = 256 << 10

// quietBuf: a buffer larger than this is let go after a Put that filled
// less than an eighth of it, so a sink that caught up with a backlog (or
// reads a quiet topic) does not keep the backlog's buffer for good: 100
// such sinks on one worker held 14 MB, tripled in RSS by GOGC. It is also
// let go when larger than twice recentPut, so a sink whose Puts shrank
// but stayed above an eighth (a worker short of CPU hands its sinks larger
// Puts, then smaller ones) does not keep the largest: 200 such sinks held
// 14.5 MB.
const quietBuf = 32 << 10

// syncChunk is how many written bytes start a background fsync, so the
// fsync of a Flush finds little left to write back and the task does not
// stall on one large fsync per offset flush.
const syncChunk = 8 << 20

// SinkPlugin returns the FileSink plugin.
func SinkPlugin() plugin.Plugin {
	return plugin.Plugin{
		Class:   "dev.conveyor.connect.file.FileSinkConnector",
		Aliases: []string{"org.apache.kafka.connect.file.FileStreamSinkConnector"},
		Kind:    plugin.KindSink,
		Version: Version,
		Doc:     "Appends record values to a file, one per line, as they arrive; flush syncs the file (at-least-once).",
		Spec: plugin.ConfigSpec{Fields: []plugin.ConfigField{
			{Name: KeyFile, Type: plugin.TypeString, Required: true, Group: "File", Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
				Validator: plugin.NonEmpty(), Doc: "The file to append record values to; created when missing."},
			{Name: KeyPartitionCheckIntervalMs, Type: plugin.TypeLong, Default: "5000", Group: "File", Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
				Validator: plugin.AtLeast(0), Max: 86_400_000, Doc: "How often to check the partition counts of the topics (0 = never); a change triggers task reconfiguration."},
			{Name: KeySinkRate, Type: plugin.TypeDouble, Default: "0", Group: "File", Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
				Validator: plugin.AtLeast(0), Max: 1e9, Doc: "Most records per second each task writes (0 = no limit): a slow sink, to build and watch consumer lag."},
		}},
		NewConnector: func() plugin.Connector { return &SinkConnector{} },
		NewSinkTask:  func() plugin.SinkTask { return &SinkTask{} },
	}
}

// SinkConnector runs up to one task per topic partition.
type SinkConnector struct {
	cc     plugin.ConnectorContext
	config map[string]string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	limit  int
	seen   bool
}

// ToleratesShareGroup: yes. The file is a log of the values that
// arrived, not a table: no line overwrites another. It already holds the
// lines of every partition interleaved, appended by many tasks, and a
// record delivered again after a crash appears twice (at-least-once);
// share mode adds only that lines of one partition may appear out of
// their partition order.
func (*SinkConnector) ToleratesShareGroup(map[string]string) (bool, string) {
	return true, ""
}

// Validate checks that the file lies where the worker's file access allows
// (links followed) and that its directory exists.
func (c *SinkConnector) Validate(ctx context.Context, config map[string]string) []plugin.FieldError {
	path := strings.TrimSpace(config[KeyFile])
	if _, err := plugin.FileAccessOf(ctx).Check(path); err != nil {
		return []plugin.FieldError{{Name: KeyFile, Message: plugin.RefuseFile(KeyFile, err).Error()}}
	}
	dir := path[:strings.LastIndexByte(path, '/')+1]
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return []plugin.FieldError{{Name: KeyFile, Message: fmt.Sprintf("directory %s does not exist", dir)}}
	}
	return nil
}

// Start starts the partition watcher.
func (c *SinkConnector) Start(ctx context.Context, cc plugin.ConnectorContext, config map[string]string) error {
	cfg, err := SinkPlugin().Spec.Parse(config)
	if err != nil {
		return err
	}
	c.cc, c.config = cc, config
	interval := time.Duration(cfg.Long(KeyPartitionCheckIntervalMs)) * time.Millisecond
	if interval > 0 {
		wctx, cancel := context.WithCancel(ctx)
		c.cancel = cancel
		c.wg.Add(1)
		cc.Go(func() error {
			defer c.wg.Done()
			// Wait for the first NaturalLimit so the watcher compares against
			// the count the task configs were made for.
			initial := c.initialLimit(wctx, interval)
			plugin.WatchSinkPartitions(wctx, cc, config, initial, interval)
			return nil
		})
	}
	return nil
}

func (c *SinkConnector) initialLimit(ctx context.Context, interval time.Duration) int {
	t := time.NewTicker(min(interval, 100*time.Millisecond))
	defer t.Stop()
	for {
		c.mu.Lock()
		limit, seen := c.limit, c.seen
		c.mu.Unlock()
		if seen {
			return limit
		}
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
		}
	}
}

// NaturalLimit is the total partition count of the topics.
func (c *SinkConnector) NaturalLimit(ctx context.Context) (int, plugin.Reason, error) {
	n, r, err := plugin.SinkNaturalLimit(ctx, c.cc, c.config)
	if err == nil {
		c.mu.Lock()
		c.limit, c.seen = n, true
		c.mu.Unlock()
	}
	return n, r, err
}

// TaskConfigs returns max copies of the connector config.
func (c *SinkConnector) TaskConfigs(max int) ([]map[string]string, error) {
	return plugin.SinkTaskConfigs(c.config, max), nil
}

// Stop stops the partition watcher.
func (c *SinkConnector) Stop() error {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	return nil
}

// SinkTask appends each record value to the file as one line: strings and
// bytes as they are, anything else (structs, maps, arrays, numbers) as
// JSON, the way JsonConverter writes payloads, so the file is JSON lines
// for structured data. Tombstones (nil values) are skipped. Like Kafka's
// FileStreamSinkTask, Put writes its lines before it returns; Flush fsyncs,
// so acknowledged offsets are durable. A background goroutine starts an
// fsync every syncChunk bytes, which keeps the fsync of a Flush short.
type SinkTask struct {
	enc  bytes.Buffer
	path string
	f    *os.File
	buf  []byte
	// recentPut is a decaying estimate of the buffer a Put needs (bytes):
	// it rises at once to a larger Put and falls an eighth of the way to
	// each smaller one.
	recentPut int

	unsynced int64         // bytes written since the last background sync was asked for
	syncReq  chan struct{} // capacity 1: a background sync is wanted
	syncDone chan struct{} // closed when the sync goroutine ended
	syncMu   sync.Mutex
	syncErr  error // first failed background sync, returned by the next Flush
	// fsync syncs the file: (*os.File).Sync, replaced in tests.
	fsync func(*os.File) error

	rate    float64   // records/s; 0 = unlimited
	started time.Time // when the rate's clock began
	written int64     // records written since started
}

// Start opens the file for appending, through the worker's file access:
// the file is checked again, links followed, when it is opened.
func (t *SinkTask) Start(ctx context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	cfg, err := SinkPlugin().Spec.Parse(config)
	if err != nil {
		return err
	}
	t.path = cfg.String(KeyFile)
	t.rate, t.started = cfg.Double(KeySinkRate), time.Now()
	f, err := plugin.FileAccessOf(ctx).Open(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("file sink: opening %s: %w", t.path, plugin.RefuseFile(KeyFile, err))
	}
	t.f = f
	// t.buf grows with the first Puts, to at most about writeChunk plus a
	// line: a sink of a quiet topic keeps a small buffer, not 256 KiB.
	t.syncReq, t.syncDone = make(chan struct{}, 1), make(chan struct{})
	if t.fsync == nil {
		t.fsync = (*os.File).Sync
	}
	tc.Go(func() error { t.syncer(f); return nil })
	return nil
}

// syncer fsyncs the file whenever asked, until syncReq is closed. A
// failure is kept for the next Flush: after a failed fsync the kernel may
// drop the dirty pages, so a later fsync that succeeds proves nothing.
func (t *SinkTask) syncer(f *os.File) {
	defer close(t.syncDone)
	for range t.syncReq {
		if err := t.fsync(f); err != nil {
			t.syncMu.Lock()
			if t.syncErr == nil {
				t.syncErr = err
			}
			t.syncMu.Unlock()
		}
	}
}

// Open does nothing: the file is shared by all partitions.
func (t *SinkTask) Open(context.Context, []plugin.TopicPartition) error { return nil }

// Close does nothing; the runtime flushes before revoking partitions.
func (t *SinkTask) Close(context.Context, []plugin.TopicPartition) error { return nil }

// Put writes the records' lines to the file, at most rate records per second.
func (t *SinkTask) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	written := 0
	for _, r := range records {
		if err := t.pace(ctx); err != nil {
			return err
		}
		switch v := r.Value.(type) {
		case nil:
			continue
		case string:
			t.buf = append(t.buf, v...)
		case []byte:
			t.buf = append(t.buf, v...)
		default:
			t.enc.Reset()
			if err := (data.JSONEncoder{}).Write(&t.enc, r.ValueSchema, v); err != nil {
				return fmt.Errorf("file sink: record %s/%d: %w", r.TopicPartition(), r.Offset, err)
			}
			t.buf = append(t.buf, t.enc.Bytes()...)
		}
		t.buf = append(t.buf, '\n')
		if len(t.buf) >= writeChunk {
			written += len(t.buf)
			if err := t.write(); err != nil {
				return err
			}
		}
	}
	written += len(t.buf)
	if err := t.write(); err != nil {
		return err
	}
	need := min(written, writeChunk)
	if need >= t.recentPut {
		t.recentPut = need
	} else {
		t.recentPut -= (t.recentPut - need + 7) / 8
	}
	if cap(t.buf) > quietBuf && (written < cap(t.buf)/8 || cap(t.buf) > 2*t.recentPut) {
		t.buf = nil
	}
	return nil
}

// MaxPutRecords keeps a rate-limited Put to about a second of writing
// (plugin.SinkPutLimiter), so the runtime commits and rebalances between
// Puts as the task writes through a backlog; without a rate there is no
// limit.
func (t *SinkTask) MaxPutRecords() int {
	if t.rate <= 0 {
		return 0
	}
	return int(math.Ceil(t.rate))
}

// pace waits until the next record is due under the rate: record k is due k/rate seconds
// after the task started. What is buffered is written before waiting.
func (t *SinkTask) pace(ctx context.Context) error {
	if t.rate <= 0 {
		return nil
	}
	due := t.started.Add(time.Duration(float64(t.written) / t.rate * float64(time.Second)))
	t.written++
	wait := time.Until(due)
	if wait < -time.Second {
		// Idle for a while: start the clock again, so that a burst stays within a second's worth.
		t.started, t.written = time.Now(), 1
		return nil
	}
	if wait <= 0 {
		return nil
	}
	if err := t.write(); err != nil {
		return err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("file sink: stopped while pacing to %g records/s: %w", t.rate, ctx.Err())
	case <-timer.C:
		return nil
	}
}

func (t *SinkTask) write() error {
	if len(t.buf) == 0 {
		return nil
	}
	if _, err := t.f.Write(t.buf); err != nil {
		return fmt.Errorf("file sink: writing %s: %w", t.path, err)
	}
	t.unsynced += int64(len(t.buf))
	t.buf = t.buf[:0]
	if t.unsynced >= syncChunk {
		t.unsynced = 0
		select {
		case t.syncReq <- struct{}{}:
		default: // a sync is pending already; it covers these bytes too
		}
	}
	return nil
}

// Flush syncs the file to disk.
func (t *SinkTask) Flush(context.Context, map[plugin.TopicPartition]int64) error {
	if err := t.write(); err != nil {
		return err
	}
	// A failed background sync fails this Flush once: the runtime then
	// delivers every record since the last commit again, rewriting what
	// the kernel may have dropped.
	t.syncMu.Lock()
	err := t.syncErr
	t.syncErr = nil
	t.syncMu.Unlock()
	if err == nil {
		err = t.fsync(t.f)
	}
	if err != nil {
		return fmt.Errorf("file sink: syncing %s: %w", t.path, err)
	}
	t.unsynced = 0
	return nil
}

// Stop closes the file. Lines written since the last Flush stay (their
// offsets were not committed, so they are delivered again: at-least-once).
func (t *SinkTask) Stop() error {
	if t.f == nil {
		return nil
	}
	close(t.syncReq)
	<-t.syncDone
	err := t.f.Close()
	t.f = nil
	return err
}
