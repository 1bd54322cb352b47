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

// Package file holds the bundled file connectors: FileSource reads lines
// from files into a topic (one task per file at most, resuming from stored
// offsets) and FileSink appends record values to a file, one per line.
package file

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the bundled file connectors.
const Version = "0.1.0"

// Configuration keys of FileSource.
const (
	KeyFile           = "file"
	KeyFiles          = "files"
	KeyTopic          = "topic"
	KeyBatchSize      = "batch.size"
	KeyPollIntervalMs = "poll.interval.ms"
	// KeyTaskFiles is set by the connector in each task config: a JSON
	// array of the files the task reads.
	KeyTaskFiles = "task.files"
)

// Source partition and offset keys of FileSource records.
const (
	PartitionFile  = "file"
	OffsetPosition = "position"
)

// maxLine bounds a line held in memory while waiting for its newline.
const maxLine = 16 << 20

// maxPollBytes bounds the bytes of the lines one poll returns, whatever
// batch.size says: batch.size lines of maxLine bytes would be 1.6 TB.
const maxPollBytes = 32 << 20

// SourcePlugin returns the FileSource plugin.
func SourcePlugin() plugin.Plugin {
	return plugin.Plugin{
		Class:   "dev.conveyor.connect.file.FileSourceConnector",
		Aliases: []string{"org.apache.kafka.connect.file.FileStreamSourceConnector"},
		Kind:    plugin.KindSource,
		Version: Version,
		Doc:     "Reads text files line by line into a topic; one task per file at most; resumes from stored offsets.",
		Spec: plugin.ConfigSpec{Fields: []plugin.ConfigField{
			{Name: KeyFile, Type: plugin.TypeString, Group: "File", Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
				Doc: "A file to read, a directory (its regular files) or a glob (/data/*.log). Set file or files."},
			{Name: KeyFiles, Type: plugin.TypeList, Group: "File", Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
				Doc: "Files, directories or globs, comma-separated; the files are spread over the tasks, each read by one task. Set file or files."},
			{Name: KeyFilesCheckIntervalMs, Type: plugin.TypeLong, Default: "5000", Group: "File", Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
				Validator: plugin.AtLeast(0), Max: 3600000, Doc: "How often directories and globs are listed again; a changed set of files reconfigures the tasks. 0: never."},
			{Name: KeyTopic, Type: plugin.TypeString, Required: true, Group: "File", Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
				Validator: plugin.NonEmpty(), Doc: "The topic to publish lines to."},
			{Name: KeyBatchSize, Type: plugin.TypeInt, Default: "2000", Group: "File", Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
				Validator: plugin.AtLeast(1), Max: 100_000, Doc: "Maximum number of lines returned by one poll."},
			{Name: KeyPollIntervalMs, Type: plugin.TypeLong, Default: "250", Group: "File", Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
				Validator: plugin.AtLeast(1), Max: 60000, Doc: "How long a poll waits for new lines at the end of all files, in ms."},
		}},
		NewConnector:  func() plugin.Connector { return &SourceConnector{} },
		NewSourceTask: func() plugin.SourceTask { return &SourceTask{} },
	}
}

// files returns the configured files (file and files), de-duplicated.
func files(config map[string]string) []string {
	var out []string
	for _, e := range entries(config) {
		out = append(out, e.path)
	}
	return out
}

// entry is one configured file, directory or glob and the key naming it.
type entry struct{ key, path string }

// entries returns the configured entries (file, then files),
// de-duplicated, each with its key.
func entries(config map[string]string) []entry {
	var out []entry
	seen := map[string]bool{}
	add := func(key, f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, entry{key, f})
		}
	}
	add(KeyFile, strings.TrimSpace(config[KeyFile]))
	for _, f := range plugin.SplitList(config[KeyFiles]) {
		add(KeyFiles, f)
	}
	return out
}

// fileKey is the key a task's file refusal names: files when set, else file.
func fileKey(config map[string]string) string {
	if len(plugin.SplitList(config[KeyFiles])) > 0 {
		return KeyFiles
	}
	return KeyFile
}

// SourceConnector splits the configured files over tasks; directories and
// globs are listed again every files.check.interval.ms.
type SourceConnector struct {
	config  map[string]string
	access  *plugin.FileAccess
	log     *slog.Logger
	entries []entry // as configured: files, directories, globs
	mu      sync.Mutex
	files   []string // entries expanded
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Validate requires at least one file, and every file, directory and glob
// where the worker's file access allows (see checkEntry).
func (c *SourceConnector) Validate(ctx context.Context, config map[string]string) []plugin.FieldError {
	es := entries(config)
	if len(es) == 0 {
		return []plugin.FieldError{{Name: KeyFiles, Message: "set file or files to at least one path"}}
	}
	var out []plugin.FieldError
	for _, e := range es {
		if err := checkEntry(plugin.FileAccessOf(ctx), e); err != nil {
			out = append(out, plugin.FieldError{Name: e.key, Message: err.Error()})
		}
	}
	return out
}

// Start records the configuration, expands directories and globs, and
// watches them when there are any.
func (c *SourceConnector) Start(ctx context.Context, cc plugin.ConnectorContext, config map[string]string) error {
	c.config = config
	c.access, c.log = plugin.FileAccessOf(ctx), cc.Logger()
	c.entries = entries(config)
	if len(c.entries) == 0 {
		return errors.New("file source: set file or files to at least one path")
	}
	fs, err := c.expand()
	if err != nil {
		return err
	}
	c.files = fs
	cfg, err := SourcePlugin().Spec.Parse(config)
	if err != nil {
		return err
	}
	if interval := time.Duration(cfg.Long(KeyFilesCheckIntervalMs)) * time.Millisecond; interval > 0 && slices.ContainsFunc(c.entries, func(e entry) bool { return isDynamic(e.path) }) {
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		c.wg.Go(func() { c.watchFiles(ctx, cc, interval) })
	}
	return nil
}

// NaturalLimit is the number of files: one task per file at most.
func (c *SourceConnector) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.files), plugin.Files, nil
}

// TaskConfigs deals the files (sorted) round-robin over min(max, files)
// tasks: 5 files and 3 tasks give 2, 2 and 1.
func (c *SourceConnector) TaskConfigs(max int) ([]map[string]string, error) {
	c.mu.Lock()
	files := slices.Clone(c.files)
	c.mu.Unlock()
	n := min(max, len(files))
	groups := make([][]string, n)
	for i, f := range files {
		groups[i%n] = append(groups[i%n], f)
	}
	out := make([]map[string]string, n)
	for i, g := range groups {
		cfg := make(map[string]string, len(c.config)+1)
		for k, v := range c.config {
			cfg[k] = v
		}
		b, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("encoding task files: %w", err)
		}
		cfg[KeyTaskFiles] = string(b)
		out[i] = cfg
	}
	return out, nil
}

// Stop stops the directory and glob watcher.
func (c *SourceConnector) Stop() error {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	return nil
}

type fileState struct {
	path    string
	f       *os.File
	r       *bufio.Reader
	pos     int64 // byte offset after the last emitted line
	partial []byte
	missing bool // logged that the file does not exist yet
}

// SourceTask reads its files line by line, emitting each complete line as
// a string record with source partition {"file": path} and offset
// {"position": byte offset after the line}. At the end of every file it
// waits for more lines (like tail -f).
type SourceTask struct {
	plugin.NopCommitter
	log       *slog.Logger
	access    *plugin.FileAccess
	key       string // the config key the files came from, for refusals
	topic     string
	batchSize int
	interval  time.Duration
	files     []*fileState
	next      int // round-robin start
}

// Start opens the files at their stored positions.
func (t *SourceTask) Start(ctx context.Context, tc plugin.SourceTaskContext, config map[string]string) error {
	cfg, err := SourcePlugin().Spec.Parse(config)
	if err != nil {
		return err
	}
	t.log = tc.Logger()
	t.access, t.key = plugin.FileAccessOf(ctx), fileKey(config)
	t.topic = cfg.String(KeyTopic)
	t.batchSize = cfg.Int(KeyBatchSize)
	t.interval = time.Duration(cfg.Long(KeyPollIntervalMs)) * time.Millisecond
	var paths []string
	if raw := config[KeyTaskFiles]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &paths); err != nil {
			return fmt.Errorf("file source task: invalid %s: %w", KeyTaskFiles, err)
		}
	} else if paths, err = expandEntries(t.access, entries(config), t.log); err != nil {
		return err
	}
	if len(paths) == 0 {
		return errors.New("file source task: no files assigned")
	}
	parts := make([]map[string]any, len(paths))
	for i, p := range paths {
		parts[i] = map[string]any{PartitionFile: p}
	}
	offsets, err := tc.OffsetReader().Offsets(ctx, parts)
	if err != nil {
		return fmt.Errorf("file source task: reading stored offsets: %w", err)
	}
	for i, p := range paths {
		st := &fileState{path: p}
		if i < len(offsets) && offsets[i] != nil {
			pos, err := plugin.OffsetInt64(offsets[i][OffsetPosition])
			if err != nil {
				return fmt.Errorf("file source task: stored offset of %s: %w", p, err)
			}
			st.pos = pos
			t.log.Info("resuming file", "file", p, "position", pos)
		}
		t.files = append(t.files, st)
	}
	return nil
}

// open opens a file at its position, through the worker's file access (so
// a file that became a link to somewhere else is refused, failing the
// task); a missing file is not an error yet.
func (t *SourceTask) open(st *fileState) error {
	f, err := t.access.Open(st.path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if !st.missing {
			t.log.Warn("file does not exist yet; waiting for it", "file", st.path)
			st.missing = true
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", st.path, plugin.RefuseFile(t.key, err))
	}
	if _, err := f.Seek(st.pos, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("seeking %s to %d: %w", st.path, st.pos, err)
	}
	st.f, st.missing = f, false
	st.r = bufio.NewReaderSize(f, 64<<10)
	return nil
}

// Poll returns up to batch.size complete lines, or nil after waiting
// poll.interval.ms when all files are at their end.
func (t *SourceTask) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	recs, err := t.read()
	if err != nil || len(recs) > 0 {
		return recs, err
	}
	timer := time.NewTimer(t.interval)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, nil
	case <-timer.C:
	}
	return t.read()
}

func (t *SourceTask) read() ([]*plugin.SourceRecord, error) {
	var out []*plugin.SourceRecord
	size := 0 // bytes of the lines in out
	full := func() bool { return len(out) >= t.batchSize || size >= maxPollBytes }
	for i := 0; i < len(t.files) && !full(); i++ {
		st := t.files[(t.next+i)%len(t.files)]
		if st.f == nil {
			if err := t.open(st); err != nil {
				return out, err
			}
			if st.f == nil {
				continue
			}
		}
		for !full() {
			chunk, err := st.r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				st.partial = append(st.partial, chunk...)
				if len(st.partial) > maxLine {
					return out, fmt.Errorf("%s: line at byte %d is longer than %d bytes", st.path, st.pos, maxLine)
				}
				continue
			}
			if err == io.EOF {
				st.partial = append(st.partial, chunk...)
				if len(st.partial) > maxLine { // a file growing without newlines
					return out, fmt.Errorf("%s: line at byte %d is longer than %d bytes", st.path, st.pos, maxLine)
				}
				break
			}
			if err != nil {
				return out, fmt.Errorf("reading %s: %w", st.path, err)
			}
			line := chunk
			if len(st.partial) > 0 {
				line = append(st.partial, chunk...)
				st.partial = nil
			}
			st.pos += int64(len(line))
			size += len(line)
			text := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
			out = append(out, &plugin.SourceRecord{
				SourcePartition: map[string]any{PartitionFile: st.path},
				SourceOffset:    map[string]any{OffsetPosition: st.pos},
				Topic:           t.topic,
				ValueSchema:     data.StringSchema,
				Value:           text,
			})
		}
	}
	t.next = (t.next + 1) % len(t.files)
	return out, nil
}

// Stop closes the files.
func (t *SourceTask) Stop() error {
	var errs []error
	for _, st := range t.files {
		if st.f != nil {
			errs = append(errs, st.f.Close())
			st.f = nil
		}
	}
	return errors.Join(errs...)
}

// ExactlyOnceSupport: offsets are positions in the file, so a task
// restarted from them reads the same lines again (the file must only
// grow).
func (c *SourceConnector) ExactlyOnceSupport(map[string]string) plugin.ExactlyOnceSupport {
	return plugin.ExactlyOnceSupported
}
