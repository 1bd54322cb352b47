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
	"errors"
	"fmt"
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
)

// writeChunk is how many buffered bytes trigger a write between flushes.
// Each write holds whole lines only, so tasks appending to the same file
// never interleave partial lines.
const writeChunk = 256 << 10

// SinkPlugin returns the FileSink plugin.
func SinkPlugin() plugin.Plugin {
	return plugin.Plugin{
		Class:   "dev.conveyor.connect.file.FileSinkConnector",
		Aliases: []string{"org.apache.kafka.connect.file.FileStreamSinkConnector"},
		Kind:    plugin.KindSink,
		Version: Version,
		Doc:     "Appends record values to a file, one per line; flush syncs the file (at-least-once).",
		Spec: plugin.ConfigSpec{Fields: []plugin.ConfigField{
			{Name: KeyFile, Type: plugin.TypeString, Required: true, Group: "File", Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
				Validator: plugin.NonEmpty(), Doc: "The file to append record values to; created when missing."},
			{Name: KeyPartitionCheckIntervalMs, Type: plugin.TypeLong, Default: "5000", Group: "File", Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
				Validator: plugin.AtLeast(0), Doc: "How often to check the partition counts of the topics (0 = never); a change triggers task reconfiguration."},
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

// Validate checks that the file's directory exists.
func (c *SinkConnector) Validate(_ context.Context, config map[string]string) []plugin.FieldError {
	path := strings.TrimSpace(config[KeyFile])
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
		go func() {
			defer c.wg.Done()
			// Wait for the first NaturalLimit so the watcher compares against
			// the count the task configs were made for.
			initial := c.initialLimit(wctx, interval)
			plugin.WatchSinkPartitions(wctx, cc, config, initial, interval)
		}()
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
	out := make([]map[string]string, max)
	for i := range out {
		cfg := make(map[string]string, len(c.config))
		for k, v := range c.config {
			cfg[k] = v
		}
		out[i] = cfg
	}
	return out, nil
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
// for structured data. Tombstones (nil values) are skipped. Flush writes the buffer and
// fsyncs, so acknowledged offsets are durable.
type SinkTask struct {
	enc  bytes.Buffer
	path string
	f    *os.File
	buf  []byte
}

// Start opens the file for appending.
func (t *SinkTask) Start(_ context.Context, _ plugin.SinkTaskContext, config map[string]string) error {
	cfg, err := SinkPlugin().Spec.Parse(config)
	if err != nil {
		return err
	}
	t.path = cfg.String(KeyFile)
	f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("file sink: opening %s: %w", t.path, err)
	}
	t.f = f
	t.buf = make([]byte, 0, writeChunk+4096)
	return nil
}

// Open does nothing: the file is shared by all partitions.
func (t *SinkTask) Open(context.Context, []plugin.TopicPartition) error { return nil }

// Close does nothing; the runtime flushes before revoking partitions.
func (t *SinkTask) Close(context.Context, []plugin.TopicPartition) error { return nil }

// Put buffers the records, writing whole lines once the buffer is large.
func (t *SinkTask) Put(_ context.Context, records []*plugin.SinkRecord) error {
	for _, r := range records {
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
			if err := t.write(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *SinkTask) write() error {
	if len(t.buf) == 0 {
		return nil
	}
	if _, err := t.f.Write(t.buf); err != nil {
		return fmt.Errorf("file sink: writing %s: %w", t.path, err)
	}
	t.buf = t.buf[:0]
	return nil
}

// Flush writes buffered lines and syncs the file to disk.
func (t *SinkTask) Flush(context.Context, map[plugin.TopicPartition]int64) error {
	if err := t.write(); err != nil {
		return err
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("file sink: syncing %s: %w", t.path, err)
	}
	return nil
}

// Stop closes the file without writing unflushed records: their offsets
// were not committed, so they are delivered again.
func (t *SinkTask) Stop() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return errors.Join(err)
}
