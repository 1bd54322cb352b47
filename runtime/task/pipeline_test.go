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

package task

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/file"
	"github.com/conveyor-dev/conveyor/runtime/connectors/rangesource"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// taskConfigs starts a connector of p with config and returns its task
// configs for tasksMax.
func taskConfigs(t testing.TB, p plugin.Plugin, config map[string]string, topics map[string]int32, tasksMax int) []map[string]string {
	t.Helper()
	conn := p.NewConnector()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := conn.Start(ctx, plugintest.NewConnectorContext(topics), config); err != nil {
		t.Fatalf("starting %s: %v", p.Class, err)
	}
	t.Cleanup(func() { _ = conn.Stop() })
	if _, _, err := conn.NaturalLimit(ctx); err != nil {
		t.Fatal(err)
	}
	cfgs, err := conn.TaskConfigs(tasksMax)
	if err != nil {
		t.Fatal(err)
	}
	return cfgs
}

func writeLines(t *testing.T, path, prefix string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := from; i < to; i++ {
		fmt.Fprintf(w, "%s line %06d\n", prefix, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// runPipeline runs FileSource → Kafka → FileSink until out has want lines,
// then stops both gracefully. The runners are built as the worker builds
// them (New), with string converters as the worker's defaults.
func runPipeline(t *testing.T, srcCfg, sinkCfg map[string]string, c Common, store OffsetStore, out string, want int) {
	t.Helper()
	c.KeyConverter, c.ValueConverter = nil, nil
	conv := map[string]string{"key.converter": converter.StringClass, "value.converter": converter.StringClass}
	sc := c
	sc.ID = ID{"file-source", 0}
	sc.Config = srcCfg
	src, err := New(Spec{Common: sc, Plugin: file.SourcePlugin(), Connector: srcCfg, WorkerConverters: conv, Offsets: store})
	src = tasktest.Start(t, src, err)
	kc := c
	kc.ID = ID{"file-sink", 0}
	kc.Config = sinkCfg
	sink, err := New(Spec{Common: kc, Plugin: file.SinkPlugin(), Connector: sinkCfg, WorkerConverters: conv})
	sink = tasktest.Start(t, sink, err)
	testkit.EventuallyTrue(t, 60*time.Second, fmt.Sprintf("%d lines in the sink file", want), func() bool { return len(readLines(t, out)) >= want })
	stop(t, src, 10*time.Second)
	stop(t, sink, 10*time.Second)
}

// File → Kafka → file moves every line exactly once, and a restarted
// pipeline resumes from the stored source offsets and committed sink
// offsets.
func TestFilePipeline(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	const first, second = 10000, 2000
	writeLines(t, in, "pipeline", 0, first)

	topics := map[string]int32{"lines": 3}
	c := cluster(t, topics)
	st := newStatuses()
	store := newMemOffsets()
	common := common(c, st, ID{}, nil)
	common.OffsetFlushInterval = 100 * time.Millisecond

	srcCfgs := taskConfigs(t, file.SourcePlugin(), map[string]string{
		"name": "file-source", "connector.class": "FileSource", "file": in, "topic": "lines", "batch.size": "500", "poll.interval.ms": "20",
	}, topics, 4)
	if len(srcCfgs) != 1 {
		t.Fatalf("one file must give one task, got %d", len(srcCfgs))
	}
	sinkCfgs := taskConfigs(t, file.SinkPlugin(), map[string]string{
		"name": "file-sink", "connector.class": "FileSink", "file": out, "topics": "lines",
	}, topics, 1)

	start := time.Now()
	runPipeline(t, srcCfgs[0], sinkCfgs[0], common, store, out, first)
	t.Logf("%d lines file→kafka→file in %v", first, time.Since(start))

	writeLines(t, in, "pipeline", first, first+second)
	runPipeline(t, srcCfgs[0], sinkCfgs[0], common, store, out, first+second)

	got := readLines(t, out)
	if len(got) != first+second {
		t.Fatalf("sink file has %d lines, want %d (duplicates after restart)", len(got), first+second)
	}
	sort.Strings(got)
	for i, l := range got {
		if want := fmt.Sprintf("pipeline line %06d", i); l != want {
			t.Fatalf("line %d is %q, want %q (lost or duplicated)", i, l, want)
		}
	}
	if s := st.last(ID{"file-source", 0}); s != StateUnassigned {
		t.Fatalf("source state %s", s)
	}
}

// The range source's records (struct values) go through the JSON converter
// into Kafka and back into a recording sink, every id exactly once.
func TestRangeSourceThroughRunners(t *testing.T) {
	topics := map[string]int32{"ids": 2}
	c := cluster(t, topics)
	st := newStatuses()
	jsonConv, err := converter.New(converter.JSONClass, map[string]string{"schemas.enable": "false"}, false)
	if err != nil {
		t.Fatal(err)
	}
	cm := common(c, st, ID{"range", 0}, nil)
	cm.ValueConverter = jsonConv
	cm.KeyConverter = jsonConv
	cfgs := taskConfigs(t, rangesource.Plugin(), map[string]string{
		"name": "range", "connector.class": "RangeSource", "topic": "ids", "count": "5000", "ranges": "2", "record.size": "50", "poll.interval.ms": "20", "batch.size": "100",
	}, topics, 2)
	if len(cfgs) != 2 {
		t.Fatalf("want 2 task configs, got %d", len(cfgs))
	}
	store := newMemOffsets()
	for i, tc := range cfgs {
		cc := cm
		cc.ID = ID{"range", i}
		cc.Config = tc
		cc.KeyConverter, cc.ValueConverter = nil, nil
		r, err := New(Spec{Common: cc, Plugin: rangesource.Plugin(), Connector: tc, WorkerConverters: jsonWithoutSchemas, Offsets: store})
		tasktest.Start(t, r, err)
	}
	sink := newRecordingSink()
	kc := cm
	kc.ID = ID{"ids-sink", 0}
	newSink(t, SinkConfig{Common: kc, Task: sink, Topics: []string{"ids"}})
	testkit.EventuallyTrue(t, 30*time.Second, "5000 ids in the sink", func() bool { return sink.total() >= 5000 })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	ids := map[any]int{}
	for _, r := range sink.puts {
		m, ok := r.Value.(map[string]any)
		if !ok {
			t.Fatalf("value %T %v, want a JSON object", r.Value, r.Value)
		}
		// The source runner reuses its buffers batch after batch: every
		// record must arrive intact, key and payload matching its id.
		id, _ := m["id"].(int64)
		if m["payload"] != rangesource.Payload(id, 50) || r.Key != id {
			t.Fatalf("record %v: key %v, value %v", m["id"], r.Key, m)
		}
		ids[fmt.Sprint(m["id"])]++
	}
	if len(ids) != 5000 {
		t.Fatalf("%d distinct ids, want 5000", len(ids))
	}
}
