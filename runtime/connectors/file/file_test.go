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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

func TestSourceTaskSplitting(t *testing.T) {
	ctx := context.Background()
	c := &SourceConnector{}
	cfg := map[string]string{"name": "fs", "connector.class": "FileSource", "file": "/a", "files": "/b,/c,/a, /d,/e", "topic": "t"}
	if err := c.Start(ctx, plugintest.NewConnectorContext(nil), cfg); err != nil {
		t.Fatal(err)
	}
	limit, reason, err := c.NaturalLimit(ctx)
	if err != nil || limit != 5 || reason != plugin.Files {
		t.Fatal(limit, reason, err)
	}
	for _, max := range []int{1, 2, 5, 10} {
		n, _ := plugin.EffectiveTasks(max, limit, reason)
		tcs, err := c.TaskConfigs(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := plugin.CheckTaskConfigs("fs", max, tcs); err != nil {
			t.Fatal(err)
		}
		if len(tcs) != min(max, 5) {
			t.Fatalf("max %d: %d task configs", max, len(tcs))
		}
		seen := map[string]int{}
		for _, tc := range tcs {
			var fs []string
			if err := json.Unmarshal([]byte(tc[KeyTaskFiles]), &fs); err != nil {
				t.Fatal(err)
			}
			if len(fs) == 0 {
				t.Fatalf("max %d: a task without files", max)
			}
			for _, f := range fs {
				seen[f]++
			}
			if tc["topic"] != "t" {
				t.Fatal("task config lost connector settings")
			}
		}
		if len(seen) != 5 {
			t.Fatalf("max %d: files %v", max, seen)
		}
		for f, n := range seen {
			if n != 1 {
				t.Fatalf("max %d: %s assigned %d times", max, f, n)
			}
		}
	}
	// Validation: a source without files.
	res := plugin.ValidateConfig(ctx, SourcePlugin(), map[string]string{"name": "x", "connector.class": "FileSource", "topic": "t"})
	if res.ErrorCount != 1 || res.Errors()[0].Name != KeyFiles {
		t.Fatalf("%+v", res.Errors())
	}
}

func startSource(t *testing.T, store *plugintest.OffsetStore, cfg map[string]string) *SourceTask {
	t.Helper()
	task := &SourceTask{}
	if err := task.Start(context.Background(), &plugintest.SourceTaskContext{Store: store}, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

func TestSourceReadsResumesAndTails(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	writeFile(t, a, "a1\na2\r\na3\n")
	writeFile(t, b, "b1\nb2 partial")
	store := plugintest.NewOffsetStore()
	cfg := map[string]string{"files": a + "," + b, "topic": "lines", "batch.size": "2", "poll.interval.ms": "5"}
	ctx := context.Background()

	task := startSource(t, store, cfg)
	recs, err := plugintest.Drain(ctx, task, store, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := values(recs)
	if strings.Join(sorted(got), ",") != "a1,a2,a3,b1" {
		t.Fatalf("got %v", got)
	}
	for _, r := range recs {
		if r.Topic != "lines" || !r.ValueSchema.Equal(data.StringSchema) || r.SourcePartition[PartitionFile] == nil {
			t.Fatalf("record %+v", r)
		}
		if len(r.SourcePartition) != 1 {
			t.Fatalf("partition %v", r.SourcePartition)
		}
	}
	last := recs[len(recs)-1]
	if last.Value == "a3" && last.SourceOffset[OffsetPosition] != int64(len("a1\na2\r\na3\n")) {
		t.Fatalf("offset after a3: %v", last.SourceOffset)
	}
	// The partial line completes later; new lines are picked up (tail).
	appendFile(t, b, " done\nb3\n")
	appendFile(t, a, "a4\n")
	recs, err = plugintest.Drain(ctx, task, store, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sorted(values(recs)), ",") != "a4,b2 partial done,b3" {
		t.Fatalf("got %v", values(recs))
	}
	_ = task.Stop()

	// A new task resumes from the stored offsets: only new lines.
	appendFile(t, a, "a5\n")
	task2 := startSource(t, store, cfg)
	recs, err = plugintest.Drain(ctx, task2, store, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(values(recs), ",") != "a5" {
		t.Fatalf("after resume: %v", values(recs))
	}
	pos, _ := store.Offset(ctx, map[string]any{PartitionFile: a})
	if pos[OffsetPosition] != float64(len("a1\na2\r\na3\na4\na5\n")) {
		t.Fatalf("stored position %v", pos)
	}
}

func TestSourceWaitsForMissingFileAndHonoursContext(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "later.txt")
	task := startSource(t, plugintest.NewOffsetStore(), map[string]string{"file": path, "topic": "t", "poll.interval.ms": "60000"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	recs, err := task.Poll(ctx)
	if err != nil || recs != nil {
		t.Fatal(recs, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Poll ignored context cancellation")
	}
	writeFile(t, path, "x\n")
	recs, err = task.Poll(context.Background())
	if err != nil || len(recs) != 1 || recs[0].Value != "x" {
		t.Fatal(recs, err)
	}
}

func TestSourceLargeFileBatches(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.txt")
	var b strings.Builder
	const n = 20000
	for i := range n {
		fmt.Fprintf(&b, "line-%06d-%s\n", i, strings.Repeat("y", i%300))
	}
	writeFile(t, path, b.String())
	store := plugintest.NewOffsetStore()
	task := startSource(t, store, map[string]string{"file": path, "topic": "t", "batch.size": "777", "poll.interval.ms": "1"})
	recs, err := plugintest.Drain(context.Background(), task, store, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if !strings.HasPrefix(r.Value.(string), fmt.Sprintf("line-%06d-", i)) {
			t.Fatalf("record %d = %.20s", i, r.Value)
		}
	}
	if recs[n-1].SourceOffset[OffsetPosition] != int64(b.Len()) {
		t.Fatalf("final position %v, file size %d", recs[n-1].SourceOffset, b.Len())
	}
}

func sinkRecords(topic string, from, to int) []*plugin.SinkRecord {
	var out []*plugin.SinkRecord
	for i := from; i < to; i++ {
		out = append(out, &plugin.SinkRecord{Topic: topic, Partition: int32(i % 3), Offset: int64(i), Value: fmt.Sprintf("v%d", i)})
	}
	return out
}

func TestSinkWritesAtPutAndFlushSyncs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	ctx := context.Background()
	task := &SinkTask{}
	if err := task.Start(ctx, plugintest.NewSinkTaskContext(), map[string]string{"file": path, "topics": "t"}); err != nil {
		t.Fatal(err)
	}
	if err := task.Open(ctx, []plugin.TopicPartition{{Topic: "t", Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	st := data.StructOf("", data.F("a", data.Int32Schema))
	recs := append(sinkRecords("t", 0, 3),
		&plugin.SinkRecord{Topic: "t", Value: []byte("raw")},
		&plugin.SinkRecord{Topic: "t", Value: nil},
		&plugin.SinkRecord{Topic: "t", ValueSchema: st, Value: data.NewStruct(st).Put("a", int32(7))},
		&plugin.SinkRecord{Topic: "t", Value: int64(42)},
	)
	if err := task.Put(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// Put writes the lines at once (like Kafka's FileStreamSinkTask).
	want := "v0\nv1\nv2\nraw\n{\"a\":7}\n42\n"
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Fatalf("after put: %q", b)
	}
	if err := task.Flush(ctx, map[plugin.TopicPartition]int64{{Topic: "t"}: 7}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Fatalf("after flush: %q", b)
	}
	// Records put but not flushed before Stop stay in the file; their
	// offsets were never committed, so the runtime delivers them again
	// (at-least-once).
	if err := task.Put(ctx, sinkRecords("t", 3, 5)); err != nil {
		t.Fatal(err)
	}
	if err := task.Stop(); err != nil {
		t.Fatal(err)
	}
	want += "v3\nv4\n"
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Fatalf("after stop: %q", b)
	}
	// A new task appends.
	task2 := &SinkTask{}
	if err := task2.Start(ctx, plugintest.NewSinkTaskContext(), map[string]string{"file": path, "topics": "t"}); err != nil {
		t.Fatal(err)
	}
	if err := task2.Put(ctx, sinkRecords("t", 3, 5)); err != nil {
		t.Fatal(err)
	}
	if err := task2.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_ = task2.Stop()
	if b, _ := os.ReadFile(path); string(b) != want+"v3\nv4\n" {
		t.Fatalf("after second task: %q", b)
	}
	if err := task2.Stop(); err != nil { // stopping twice is harmless
		t.Fatal(err)
	}
}

func TestSinkLargeBatchesWriteWholeLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	ctx := context.Background()
	// Two tasks append to the same file concurrently; lines never interleave.
	done := make(chan error, 2)
	for w := range 2 {
		go func() {
			task := &SinkTask{}
			if err := task.Start(ctx, plugintest.NewSinkTaskContext(), map[string]string{"file": path, "topics": "t"}); err != nil {
				done <- err
				return
			}
			defer task.Stop()
			for i := 0; i < 20; i++ {
				var recs []*plugin.SinkRecord
				for j := 0; j < 1000; j++ {
					recs = append(recs, &plugin.SinkRecord{Value: fmt.Sprintf("w%d-%d-%d-%s", w, i, j, strings.Repeat("z", 100))})
				}
				if err := task.Put(ctx, recs); err != nil {
					done <- err
					return
				}
			}
			done <- task.Flush(ctx, nil)
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 40000 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "w") || !strings.HasSuffix(l, strings.Repeat("z", 100)) || strings.Count(l, "w") != 1 {
			t.Fatalf("broken line %.60q", l)
		}
	}
}

func TestSinkConnectorLimitAndReconfiguration(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc := plugintest.NewConnectorContext(map[string]int32{"orders": 4, "other": 2})
	c := &SinkConnector{}
	cfg := map[string]string{"name": "s", "file": filepath.Join(t.TempDir(), "o"), "topics": "orders", "tasks.max": "10", "partition.check.interval.ms": "10"}
	if err := c.Start(ctx, cc, cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	limit, reason, err := c.NaturalLimit(ctx)
	if err != nil || limit != 4 || reason != plugin.TopicPartitions {
		t.Fatal(limit, reason, err)
	}
	n, r := plugin.EffectiveTasks(10, limit, reason)
	tcs, _ := c.TaskConfigs(n)
	if n != 4 || r != plugin.TopicPartitions || len(tcs) != 4 {
		t.Fatal(n, r, len(tcs))
	}
	cc.SetPartitions("orders", 6)
	select {
	case <-cc.Reconfigured():
	case <-time.After(5 * time.Second):
		t.Fatal("no task reconfiguration after partition growth")
	}
	limit, _, _ = c.NaturalLimit(ctx)
	if limit != 6 {
		t.Fatal(limit)
	}
	// Validation of the directory.
	res := plugin.ValidateConfig(ctx, SinkPlugin(), map[string]string{"name": "s", "connector.class": "FileSink", "topics": "t", "file": "/nonexistent-dir/x"})
	if res.ErrorCount != 1 || !strings.Contains(res.Errors()[0].Message, "does not exist") {
		t.Fatalf("%+v", res.Errors())
	}
}

func values(recs []*plugin.SourceRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Value.(string)
	}
	return out
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

// TestSinkBackgroundSyncFailureFailsTheNextFlush writes past syncChunk so
// the background fsync runs; its failure fails the next Flush once (the
// runtime then redelivers), and the Flush after that syncs again.
func TestSinkBackgroundSyncFailureFailsTheNextFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	ctx := context.Background()
	var syncs atomic.Int32
	task := &SinkTask{fsync: func(f *os.File) error {
		if syncs.Add(1) == 1 {
			return errors.New("disk on fire")
		}
		return f.Sync()
	}}
	if err := task.Start(ctx, plugintest.NewSinkTaskContext(), map[string]string{"file": path, "topics": "t"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	line := strings.Repeat("y", 1023)
	recs := make([]*plugin.SinkRecord, 1024) // 1 MiB per Put
	for i := range recs {
		recs[i] = &plugin.SinkRecord{Topic: "t", Value: line}
	}
	for range syncChunk>>20 + 1 {
		if err := task.Put(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "a failed background sync after writing more than syncChunk bytes", func() (bool, string) {
		task.syncMu.Lock()
		defer task.syncMu.Unlock()
		return task.syncErr != nil, fmt.Sprintf("%d syncs", syncs.Load())
	})
	err := task.Flush(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("flush after a failed background sync: %v", err)
	}
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatalf("second flush: %v", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != int64(syncChunk>>20+1)<<20 {
		t.Fatalf("file size %v, %v", st.Size(), err)
	}
}

// TestSinkRateCapsRecordsPerSecond: with rate=20 a Put of 30 records takes about 1.5 s
// (record k is due k/20 s after the start), the lines written before a wait are in the file
// during it, and a context ended while pacing ends the Put.
func TestSinkRateCapsRecordsPerSecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	ctx := context.Background()
	task := &SinkTask{}
	if err := task.Start(ctx, plugintest.NewSinkTaskContext(), map[string]string{"file": path, "topics": "t", "rate": "20"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	start := time.Now()
	if err := task.Put(ctx, sinkRecords("t", 0, 30)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 1300*time.Millisecond || took > 10*time.Second {
		t.Fatalf("30 records at 20/s took %v, want about 1.45s", took)
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 30 {
		t.Fatalf("file has %d lines, want 30", strings.Count(string(b), "\n"))
	}
	// 970 more records would take 48 s: the context ends first, and so does the Put.
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err := task.Put(cctx, sinkRecords("t", 30, 1000))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put with its context ended while pacing: %v, want context.DeadlineExceeded", err)
	}
}

// taskFiles is the number of files in each task config.
func taskFiles(t *testing.T, tcs []map[string]string) ([]int, map[string]int) {
	t.Helper()
	var counts []int
	seen := map[string]int{}
	for _, tc := range tcs {
		var fs []string
		if err := json.Unmarshal([]byte(tc[KeyTaskFiles]), &fs); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, len(fs))
		for _, f := range fs {
			seen[f]++
		}
	}
	return counts, seen
}

// TestSourceDirectorySplitAndNewFiles: a directory of 5 files with
// tasks.max=3 gives tasks with 2, 2 and 1 files (each file once; hidden
// files and subdirectories left out); a glob selects its files; a file
// added to the directory makes the connector ask for task reconfiguration,
// and the new task configs hold it; the tasks read every file's lines.
func TestSourceDirectorySplitAndNewFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := range 5 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("part-%d.log", i)), fmt.Sprintf("line %d\n", i))
	}
	writeFile(t, filepath.Join(dir, ".hidden"), "no\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cc := plugintest.NewConnectorContext(nil)
	c := &SourceConnector{}
	cfg := map[string]string{"name": "fs", "connector.class": "FileSource", "file": dir, "topic": "t", KeyFilesCheckIntervalMs: "50"}
	if err := c.Start(ctx, cc, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	limit, reason, err := c.NaturalLimit(ctx)
	if err != nil || limit != 5 || reason != plugin.Files {
		t.Fatalf("natural limit %d %s %v, want 5 Files", limit, reason, err)
	}
	n, _ := plugin.EffectiveTasks(3, limit, reason)
	tcs, err := c.TaskConfigs(n)
	if err != nil {
		t.Fatal(err)
	}
	counts, seen := taskFiles(t, tcs)
	if !slices.Equal(counts, []int{2, 2, 1}) || len(seen) != 5 {
		t.Fatalf("5 files over tasks.max=3: files per task %v, files %v; want [2 2 1] and 5 distinct", counts, seen)
	}
	t.Logf("5 files, tasks.max=3: files per task %v", counts)

	// The tasks read every file.
	store := plugintest.NewOffsetStore()
	got := map[string]bool{}
	for _, tc := range tcs {
		task := startSource(t, store, tc)
		testkit.EventuallyTrue(t, 10*time.Second, "a task reading its files", func() bool {
			recs, err := task.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				got[r.Value.(string)] = true
			}
			return len(recs) == 0
		})
	}
	if len(got) != 5 {
		t.Fatalf("lines read by the tasks: %v, want line 0..4", got)
	}

	// A new file: reconfiguration requested, and the new configs hold it.
	before := cc.Reconfigurations()
	writeFile(t, filepath.Join(dir, "part-5.log"), "line 5\n")
	testkit.EventuallyTrue(t, 10*time.Second, "a reconfiguration request after a file appeared", func() bool { return cc.Reconfigurations() > before })
	if limit, _, _ := c.NaturalLimit(ctx); limit != 6 {
		t.Fatalf("natural limit %d after a 6th file, want 6", limit)
	}
	tcs, _ = c.TaskConfigs(3)
	counts, seen = taskFiles(t, tcs)
	if !slices.Equal(counts, []int{2, 2, 2}) || seen[filepath.Join(dir, "part-5.log")] != 1 {
		t.Fatalf("after the 6th file: files per task %v, files %v", counts, seen)
	}
	// Nothing changes: no more requests.
	after := cc.Reconfigurations()
	testkit.Consistently(t, 300*time.Millisecond, "no request while the set stays", func() (bool, string) {
		return cc.Reconfigurations() == after, fmt.Sprint(cc.Reconfigurations())
	})

	// A glob picks its files only.
	g := &SourceConnector{}
	if err := g.Start(ctx, plugintest.NewConnectorContext(nil), map[string]string{"name": "g", "connector.class": "FileSource",
		"files": filepath.Join(dir, "part-[0-2].log"), "topic": "t"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop() })
	if limit, _, _ := g.NaturalLimit(ctx); limit != 3 {
		t.Fatalf("glob part-[0-2].log: natural limit %d, want 3", limit)
	}
}

// A sink that wrote a backlog keeps its large buffer while Puts stay large,
// and lets it go once they are small (caught up, a quiet topic).
func TestSinkLetsABacklogsBufferGo(t *testing.T) {
	ctx := context.Background()
	task := &SinkTask{}
	if err := task.Start(ctx, plugintest.NewSinkTaskContext(), map[string]string{"file": filepath.Join(t.TempDir(), "out.txt"), "topics": "t"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	put := func(n int) {
		var recs []*plugin.SinkRecord
		for range n {
			recs = append(recs, &plugin.SinkRecord{Value: strings.Repeat("v", 199)})
		}
		if err := task.Put(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	put(500) // 100 KB
	big := cap(task.buf)
	put(400)
	if cap(task.buf) != big || big < 100<<10 {
		t.Fatalf("buffer of %d bytes after a 100 KB Put, %d after an 80 KB one: want it kept", big, cap(task.buf))
	}
	put(10)
	if c := cap(task.buf); c > quietBuf {
		t.Fatalf("buffer of %d bytes kept after a 2 KB Put, want at most %d", c, quietBuf)
	}
	// Puts that shrink but stay above an eighth of the buffer: after a
	// handful, the buffer follows them down.
	put(1300) // 260 KB, a chunk written within the Put
	big = cap(task.buf)
	for range 20 {
		put(200) // 40 KB
	}
	if c := cap(task.buf); c >= big || c > 128<<10 {
		t.Fatalf("buffer of %d bytes (%d after the 260 KB Put) kept after 20 Puts of 40 KB, want at most 128 KiB", c, big)
	}
}
