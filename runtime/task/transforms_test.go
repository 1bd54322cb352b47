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
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// mapSource emits schemaless map values {"n": i} for i below limit on
// topic "in", in batches of batch; odd records carry a "skip" header.
type mapSource struct {
	limit, batch, next int
	mu                 sync.Mutex
	committed          []int
	nilMeta            int
}

func (s *mapSource) Start(context.Context, plugin.SourceTaskContext, map[string]string) error {
	return nil
}

func (s *mapSource) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	if s.next >= s.limit {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return nil, nil
	}
	part := map[string]any{"source": "maps"}
	var out []*plugin.SourceRecord
	for ; s.next < s.limit && len(out) < s.batch; s.next++ {
		rec := &plugin.SourceRecord{SourcePartition: part, SourceOffset: map[string]any{"pos": s.next},
			Topic: "in", Value: map[string]any{"n": int64(s.next)}}
		if s.next%2 == 1 {
			rec.Headers = data.Headers{{Key: "skip", Value: []byte("1")}}
		}
		out = append(out, rec)
	}
	return out, nil
}

func (s *mapSource) CommitRecord(r *plugin.SourceRecord, md *plugin.RecordMetadata) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed = append(s.committed, r.SourceOffset["pos"].(int))
	if md == nil {
		s.nilMeta++
	}
	return nil
}

func (s *mapSource) Commit(context.Context) error { return nil }
func (s *mapSource) Stop() error                  { return nil }

func schemalessJSON(t *testing.T) converter.Converter {
	t.Helper()
	j, err := converter.NewJSON(map[string]string{"schemas.enable": "false"})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A source's records go through the chain: InsertField adds fields,
// RegexRouter sends them to another topic, Filter (guarded by a predicate)
// drops every other one. The dropped records' offsets are committed all
// the same, the last one included, and the task's CommitRecord sees every
// record (the dropped ones without metadata), as Kafka Connect does.
func TestSourceTransformsRouteInsertAndCommitDropped(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1, "routed-in": 1})
	st := newStatuses()
	store := newMemOffsets()
	src := &mapSource{limit: 100, batch: 7}
	cfg := SourceConfig{Common: common(c, st, ID{"src", 0}, nil), Task: src, Offsets: store}
	cfg.ValueConverter = schemalessJSON(t)
	cfg.Transforms = map[string]string{
		"transforms":                     "skip,insert,route",
		"transforms.skip.type":           "org.apache.kafka.connect.transforms.Filter",
		"transforms.skip.predicate":      "skipped",
		"transforms.insert.type":         "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insert.static.field": "origin",
		"transforms.insert.static.value": "conveyor",
		"transforms.insert.topic.field":  "topic",
		"transforms.route.type":          "RegexRouter",
		"transforms.route.regex":         "(.*)",
		"transforms.route.replacement":   "routed-$1",
		"predicates":                     "skipped",
		"predicates.skipped.type":        "HasHeaderKey",
		"predicates.skipped.name":        "skip",
		"connector.class":                "ignored by the chain",
	}
	r := newSource(t, cfg)
	recs := readAll(t, c, "routed-in", 50)
	for i, kr := range recs {
		var v map[string]any
		if err := json.Unmarshal(kr.Value, &v); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if v["n"] != float64(2*i) || v["origin"] != "conveyor" || v["topic"] != "in" {
			t.Fatalf("record %d = %v, want n=%d with origin and topic inserted", i, v, 2*i)
		}
	}
	testkit.EventuallyTrue(t, 10*time.Second, "CommitRecord for all 100 records", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return len(src.committed) == 100
	})
	stop(t, r, 5*time.Second)
	if st.last(ID{"src", 0}) == StateFailed {
		t.Fatalf("task failed: %s", st.trace(ID{"src", 0}))
	}
	got, err := store.Read(context.Background(), "src", []map[string]any{{"source": "maps"}})
	if err != nil {
		t.Fatal(err)
	}
	if posOf(got[0]) != 99 {
		t.Fatalf("stored offset %v, want pos 99 (the last record, which the filter dropped)", got[0])
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.nilMeta != 50 {
		t.Fatalf("%d records committed without metadata, want the 50 dropped ones", src.nilMeta)
	}
	seen := map[int]bool{}
	for _, p := range src.committed {
		seen[p] = true
	}
	if len(seen) != 100 {
		t.Fatalf("CommitRecord saw %d distinct records, want 100", len(seen))
	}
	if n := endOffset(t, admin(t, c), "in"); n != 0 {
		t.Fatalf("%d records landed on the original topic", n)
	}
}

// A failing transform fails the task with the alias and the record's
// position, never its values.
func TestSourceTransformFailureNamesAlias(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	st := newStatuses()
	src := &mapSource{limit: 5, batch: 5}
	cfg := SourceConfig{Common: common(c, st, ID{"bad", 0}, nil), Task: src, Offsets: newMemOffsets()}
	cfg.ValueConverter = schemalessJSON(t)
	cfg.Transforms = map[string]string{"transforms": "ts", "transforms.ts.type": "SetSchemaMetadata$Value",
		"transforms.ts.schema.name": "x"}
	newSource(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "task FAILED", func() bool { return st.last(ID{"bad", 0}) == StateFailed })
	trace := st.trace(ID{"bad", 0})
	if !strings.Contains(trace, `transform "ts"`) || !strings.Contains(trace, "topic in") {
		t.Fatalf("trace %q should name the alias and the topic", trace)
	}
}

// A bad chain is refused when the runner is created.
func TestRunnerRefusesBadTransforms(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	cfg := SourceConfig{Common: common(c, newStatuses(), ID{"x", 0}, nil), Task: &mapSource{}, Offsets: newMemOffsets()}
	cfg.Transforms = map[string]string{"transforms": "x", "transforms.x.type": "Nope"}
	if _, err := NewSourceRunner(cfg); err == nil || !strings.Contains(err.Error(), "transforms.x.type") {
		t.Fatalf("err = %v", err)
	}
}

// A sink fed with CDC change events through ExtractNewRecordState gets
// flat rows and, for deletes, tombstones; the truncate the transform drops
// still counts as consumed, so the committed offset reaches the end.
func TestSinkUnwrapsChangeEvents(t *testing.T) {
	c := cluster(t, map[string]int32{"cdc": 1})
	adm := admin(t, c)
	js, err := converter.NewJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	rowS := data.StructOf("cdc.Value", data.F("id", data.OptionalInt64Schema), data.F("name", data.OptionalStringSchema)).AsOptional()
	keyS := data.StructOf("cdc.Key", data.F("id", data.OptionalInt64Schema))
	envS := data.StructOf("cdc.Envelope", data.F("before", rowS), data.F("after", rowS),
		data.F("op", data.StringSchema), data.F("ts_ms", data.OptionalInt64Schema))
	event := func(op string, id int64, before, after string) *kgo.Record {
		env := data.NewStruct(envS).Put("op", op)
		if before != "" {
			env.Put("before", data.NewStruct(rowS).Put("id", id).Put("name", before))
		}
		if after != "" {
			env.Put("after", data.NewStruct(rowS).Put("id", id).Put("name", after))
		}
		v, err := js.FromConnectData("cdc", envS, env)
		if err != nil {
			t.Fatal(err)
		}
		var k []byte
		if op != "t" {
			if k, err = js.FromConnectData("cdc", keyS, data.NewStruct(keyS).Put("id", id)); err != nil {
				t.Fatal(err)
			}
		}
		return &kgo.Record{Topic: "cdc", Key: k, Value: v}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(),
		event("r", 2, "", "two"), event("c", 1, "", "one"), event("u", 1, "one", "uno"), event("d", 1, "uno", ""), event("t", 0, "", ""),
	).FirstErr(); err != nil {
		t.Fatal(err)
	}

	st := newStatuses()
	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, st, ID{"pg", 0}, map[string]string{"topics": "cdc"}), Task: sink}
	cfg.KeyConverter, cfg.ValueConverter = js, js
	cfg.OffsetFlushInterval = 50 * time.Millisecond
	cfg.Transforms = map[string]string{"transforms": "unwrap", "transforms.unwrap.type": "io.conveyor.transforms.ExtractNewRecordState"}
	newSink(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "4 records put and offset 5 committed", func() bool {
		return sink.total() == 4 && committed(t, adm, connectnames.SinkGroup("pg"), "cdc")[0] == 5
	})
	// A poll of dropped records only: consumed and committed all the same.
	if err := cl.ProduceSync(context.Background(), event("t", 0, "", "")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "offset 6 committed", func() bool {
		return committed(t, adm, connectnames.SinkGroup("pg"), "cdc")[0] == 6
	})
	if n := sink.total(); n != 4 {
		t.Fatalf("the sink got %d records, want 4 (the truncates are dropped)", n)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	want := []string{"2 two", "1 one", "1 uno", "1 <tombstone>"}
	for i, r := range sink.puts {
		key, ok := r.Key.(*data.Struct)
		if !ok {
			t.Fatalf("record %d key %T", i, r.Key)
		}
		got := ""
		if r.Value == nil {
			got = fmt.Sprint(key.Get("id"), " <tombstone>")
		} else {
			row, ok := r.Value.(*data.Struct)
			if !ok || row.Schema().Field("op") != nil {
				t.Fatalf("record %d value %T is not a flat row", i, r.Value)
			}
			got = fmt.Sprint(row.Get("id"), " ", row.Get("name"))
		}
		if got != want[i] {
			t.Fatalf("record %d = %q, want %q", i, got, want[i])
		}
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.Offset)
		}
	}
}

// sliceSource returns its records at the first Poll, then nothing.
type sliceSource struct {
	plugin.NopCommitter
	recs []*plugin.SourceRecord
}

func (s *sliceSource) Start(context.Context, plugin.SourceTaskContext, map[string]string) error {
	return nil
}

func (s *sliceSource) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	out := s.recs
	s.recs = nil
	if out == nil {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return out, nil
}

func (s *sliceSource) Stop() error { return nil }

// On the source side, unwrap turns a delete into a real tombstone (a null
// Kafka value, not a JSON envelope with a null payload), so compaction
// removes the key.
func TestSourceUnwrapWritesTombstones(t *testing.T) {
	c := cluster(t, map[string]int32{"cdc": 1})
	js, err := converter.NewJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	rowS := data.StructOf("row", data.F("id", data.OptionalInt64Schema)).AsOptional()
	keyS := data.StructOf("key", data.F("id", data.OptionalInt64Schema))
	envS := data.StructOf("env", data.F("before", rowS), data.F("after", rowS), data.F("op", data.StringSchema))
	part := map[string]any{"slot": "s"}
	rec := func(op string, pos int, before, after *data.Struct) *plugin.SourceRecord {
		env := data.NewStruct(envS).Put("op", op)
		if before != nil {
			env.Put("before", before)
		}
		if after != nil {
			env.Put("after", after)
		}
		return &plugin.SourceRecord{SourcePartition: part, SourceOffset: map[string]any{"pos": pos}, Topic: "cdc",
			KeySchema: keyS, Key: data.NewStruct(keyS).Put("id", int64(1)), ValueSchema: envS, Value: env}
	}
	row := data.NewStruct(rowS).Put("id", int64(1))
	src := &sliceSource{recs: []*plugin.SourceRecord{rec("c", 1, nil, row), rec("d", 2, row, nil)}}
	cfg := SourceConfig{Common: common(c, newStatuses(), ID{"u", 0}, nil), Task: src, Offsets: newMemOffsets()}
	cfg.KeyConverter, cfg.ValueConverter = js, js
	cfg.Transforms = map[string]string{"transforms": "unwrap", "transforms.unwrap.type": "unwrap"}
	newSource(t, cfg)
	recs := readAll(t, c, "cdc", 2)
	if !strings.Contains(string(recs[0].Value), `"payload":{"id":1}`) {
		t.Fatalf("insert became %s, want the row", recs[0].Value)
	}
	if recs[1].Value != nil || len(recs[1].Key) == 0 {
		t.Fatalf("delete became key %s value %q, want the key and a null value", recs[1].Key, recs[1].Value)
	}
}

// errors.tolerance=all covers the transformation stage: a sink record a
// transform fails on goes to the dead letter queue (stage TRANSFORMATION,
// the transform's class), the others to the task, and the offsets move
// past it.
func TestSinkTransformFailureTolerated(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	adm := admin(t, c)
	produceJSON(t, c, "in", `{"n":"1"}`, `{"n":"secret-x"}`, `{"n":"3"}`)
	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, newStatuses(), ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
	cfg.ValueConverter = jsonConverter(t)
	cfg.OffsetFlushInterval = 50 * time.Millisecond
	cfg.Errors = ErrorConfig{ToleranceAll: true, DLQTopic: "in-dlq", DLQReplication: 1, DLQContextHeaders: true}
	cfg.Transforms = map[string]string{"transforms": "num", "transforms.num.type": "Cast$Value", "transforms.num.spec": "n:int32"}
	newSink(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "2 records put and offset 3 committed", func() bool {
		return sink.total() == 2 && committedAt(adm, connectnames.SinkGroup("s"), "in", 0) == 3
	})
	sink.mu.Lock()
	for _, r := range sink.puts {
		if n := r.Value.(map[string]any)["n"]; n != int32(1) && n != int32(3) {
			t.Errorf("put value %v, want n cast to int32", r.Value)
		}
	}
	sink.mu.Unlock()
	d := readAll(t, c, "in-dlq", 1)[0]
	if string(d.Value) != `{"n":"secret-x"}` {
		t.Fatalf("dead letter %q, want the original record", d.Value)
	}
	if s, _ := header(d, HeaderErrorStage); s != string(StageTransformation) {
		t.Errorf("stage header %q", s)
	}
	if cl, _ := header(d, HeaderErrorClass); cl != "org.apache.kafka.connect.transforms.Cast$Value" {
		t.Errorf("class header %q", cl)
	}
	if msg, _ := header(d, HeaderErrorMessage); !strings.Contains(msg, `transform "num"`) || strings.Contains(msg, "secret") {
		t.Errorf("message header %q: want the alias, not the value", msg)
	}
}

// On the source side a skipped record is acknowledged at once: its offset
// is committed, nothing is produced.
func TestSourceTransformFailureTolerated(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	store := newMemOffsets()
	src := &mapSource{limit: 20, batch: 6}
	cfg := SourceConfig{Common: common(c, newStatuses(), ID{"src", 0}, nil), Task: src, Offsets: store}
	cfg.ValueConverter = schemalessJSON(t)
	cfg.Errors = ErrorConfig{ToleranceAll: true}
	// Records with the skip header fail: SetSchemaMetadata needs a schema.
	cfg.Transforms = map[string]string{"transforms": "bad", "transforms.bad.type": "SetSchemaMetadata$Value", "transforms.bad.schema.name": "x",
		"transforms.bad.predicate": "skipped", "predicates": "skipped", "predicates.skipped.type": "HasHeaderKey", "predicates.skipped.name": "skip"}
	r := newSource(t, cfg)
	recs := readAll(t, c, "in", 10)
	testkit.EventuallyTrue(t, 10*time.Second, "CommitRecord for all 20 records", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return len(src.committed) == 20
	})
	stop(t, r, 5*time.Second)
	for _, kr := range recs {
		var v map[string]any
		if err := json.Unmarshal(kr.Value, &v); err != nil || int(v["n"].(float64))%2 != 0 {
			t.Fatalf("produced %s: only the even records should pass", kr.Value)
		}
	}
	got, _ := store.Read(context.Background(), "src", []map[string]any{{"source": "maps"}})
	if posOf(got[0]) != 19 {
		t.Fatalf("stored offset %v, want pos 19 (a skipped record)", got[0])
	}
}
