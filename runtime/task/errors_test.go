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
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// produceJSON writes one record per value to partition 0 of topic, key
// "k<i>" and a header "src", in order.
func produceJSON(t *testing.T, c *kfake.Cluster, topic string, vals ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, v := range vals {
		r := &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(i)), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "src", Value: []byte("orig")}}, Timestamp: time.UnixMilli(1_600_000_000_000 + int64(i))}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// committedAt is the group's committed offset of one partition, -1 when
// there is none (yet).
func committedAt(adm *kadm.Client, group, topic string, p int32) int64 {
	resp, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		return -1 // the group is not there yet
	}
	if o, ok := resp.Lookup(topic, p); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// wantTaskMetrics checks exact values of task metrics (names without the
// kafka_connect_ prefix) of connector task 0.
func wantTaskMetrics(t *testing.T, m *metrics.Metrics, connector string, want map[string]float64) {
	t.Helper()
	l := map[string]string{"connector": connector, "task": "0"}
	for name, w := range want {
		if v := metricValue(t, m.Registry(), "kafka_connect_"+name, l); v != w {
			t.Errorf("%s = %v, want %v", name, v, w)
		}
	}
}

func jsonConverter(t *testing.T) converter.Converter {
	t.Helper()
	c, err := converter.New("JsonConverter", map[string]string{"schemas.enable": "false"}, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// errors.tolerance=none (the default): the first record that does not
// convert fails the task, and the trace names topic, partition and offset.
func TestSinkToleranceNoneFailsOnBadRecord(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	produceJSON(t, c, "in", `{"a":0}`, `{"a":1}`, `not json`, `{"a":3}`)
	st := newStatuses()
	m := metrics.New()
	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
	cfg.ValueConverter = jsonConverter(t)
	cfg.Metrics = m.Task("s", 0)
	r := newSink(t, cfg)
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("task did not fail")
	}
	if st.last(ID{"s", 0}) != StateFailed {
		t.Fatalf("state %s, want FAILED", st.last(ID{"s", 0}))
	}
	tr := st.trace(ID{"s", 0})
	if !strings.Contains(tr, "in-0@2") || !strings.Contains(tr, "errors.tolerance") {
		t.Fatalf("trace does not name the record and the setting: %s", tr)
	}
	if sink.distinct() > 2 {
		t.Fatalf("records after the bad one were put: %d", sink.distinct())
	}
	wantTaskMetrics(t, m, "s", map[string]float64{"total_record_errors": 1, "total_records_skipped": 0})
}

// errors.tolerance=all with a dead letter queue: the good records reach
// the task, the bad ones land in the dead letter queue with their original
// key, value and headers plus the error context, the offsets are committed
// past them, and the metrics and the log (without record contents) tell.
func TestSinkToleranceAllDeadLetterQueue(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	adm := admin(t, c)
	vals := []string{`{"a":0}`, `{"a":1}`, `secret-bad-2`, `{"a":3}`, `{"a":4}`, `{"a":5}`, `secret-bad-6`, `{"a":7}`}
	produceJSON(t, c, "in", vals...)
	st := newStatuses()
	m := metrics.New()
	logs := &testkit.SyncBuffer{}
	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
	cfg.ValueConverter = jsonConverter(t)
	cfg.Metrics = m.Task("s", 0)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.OffsetFlushInterval = 50 * time.Millisecond
	cfg.Errors = ErrorConfig{ToleranceAll: true, Log: true, DLQTopic: "in-dlq", DLQReplication: 1, DLQContextHeaders: true}
	// The connector's scrubber: here the JSON parser's words stand for a
	// resolved value an error message would quote.
	cfg.Scrub = func(s string) string {
		return strings.ReplaceAll(s, "looking for beginning of value", "${secret:db:password}")
	}
	r := newSink(t, cfg)

	testkit.EventuallyTrue(t, 10*time.Second, "the six good records put", func() bool { return sink.distinct() == 6 })
	testkit.EventuallyTrue(t, 10*time.Second, "offsets committed past the bad records", func() bool {
		return committedAt(adm, connectnames.SinkGroup("s"), "in", 0) == 8
	})
	dlq := readAll(t, c, "in-dlq", 2)
	if len(dlq) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dlq))
	}
	for i, off := range []int64{2, 6} {
		d := dlq[i]
		if string(d.Value) != vals[off] || string(d.Key) != "k"+strconv.Itoa(int(off)) {
			t.Errorf("dead letter %d: key %q value %q, want the original record at offset %d", i, d.Key, d.Value, off)
		}
		if !d.Timestamp.Equal(time.UnixMilli(1_600_000_000_000 + off)) {
			t.Errorf("dead letter %d: timestamp %v, want the original", i, d.Timestamp)
		}
		want := map[string]string{"src": "orig", HeaderErrorTopic: "in", HeaderErrorPartition: "0", HeaderErrorOffset: strconv.FormatInt(off, 10),
			HeaderErrorConnector: "s", HeaderErrorTaskID: "0", HeaderErrorStage: string(StageValueConverter)}
		for k, v := range want {
			if got, ok := header(d, k); !ok || got != v {
				t.Errorf("dead letter %d: header %s = %q (present %v), want %q", i, k, got, ok, v)
			}
		}
		for _, k := range []string{HeaderErrorClass, HeaderErrorType, HeaderErrorMessage, HeaderErrorStacktrace} {
			if got, _ := header(d, k); got == "" {
				t.Errorf("dead letter %d: header %s missing or empty", i, k)
			}
		}
		if msg, _ := header(d, HeaderErrorMessage); !strings.Contains(msg, fmt.Sprintf("in-0@%d", off)) {
			t.Errorf("dead letter %d: message %q does not name the record", i, msg)
		}
		if st, _ := header(d, HeaderErrorStacktrace); !strings.Contains(st, "*task.StageError: ") || !strings.Contains(st, "*json.SyntaxError: ") {
			t.Errorf("dead letter %d: stack trace header %q lacks the error chain", i, st)
		}
		for _, k := range []string{HeaderErrorMessage, HeaderErrorStacktrace} {
			if got, _ := header(d, k); strings.Contains(got, "looking for beginning of value") || !strings.Contains(got, "${secret:db:password}") {
				t.Errorf("dead letter %d: header %s not scrubbed: %q", i, k, got)
			}
		}
		if ty, _ := header(d, HeaderErrorType); ty != "*json.SyntaxError" {
			t.Errorf("dead letter %d: exception class %q, want the innermost error's type", i, ty)
		}
	}

	// A poll holding only a bad record (the batch to put is empty) still
	// moves the committed offset past it.
	produceJSON(t, c, "in", "secret-bad-8")
	testkit.EventuallyTrue(t, 10*time.Second, "offset committed past a lone bad record", func() bool {
		return committedAt(adm, connectnames.SinkGroup("s"), "in", 0) == 9
	})
	if r.State() != StateRunning {
		t.Fatalf("state %s, want RUNNING", r.State())
	}
	stop(t, r, 5*time.Second)

	wantTaskMetrics(t, m, "s", map[string]float64{
		"total_record_errors": 3, "total_record_failures": 3, "total_records_skipped": 3,
		"total_errors_logged": 3, "deadletterqueue_produce_requests": 3,
		"deadletterqueue_produce_failures": 0, "total_retries": 0,
	})
	if v := metricValue(t, m.Registry(), "kafka_connect_last_error_timestamp", map[string]string{"connector": "s"}); v < float64(time.Now().Add(-time.Minute).UnixMilli()) {
		t.Errorf("last_error_timestamp = %v, want a recent time", v)
	}
	out := logs.String()
	for _, want := range []string{"stage=VALUE_CONVERTER", "topic=in", "partition=0", "offset=2", "offset=6", "offset=8"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret-bad") {
		t.Errorf("log holds record contents without errors.log.include.messages:\n%s", out)
	}
}

// A dead letter queue topic the sink consumes is refused.
func TestSinkRefusesConsumedDeadLetterTopic(t *testing.T) {
	for _, tc := range []struct {
		topics []string
		regex  string
	}{{topics: []string{"a", "in"}}, {regex: "i.*"}} {
		cfg := SinkConfig{Common: Common{ID: ID{"s", 0}, KeyConverter: converter.StringConverter{}, ValueConverter: converter.StringConverter{},
			Status: newStatuses(), Errors: ErrorConfig{ToleranceAll: true, DLQTopic: "in"}}, Task: newRecordingSink(), Topics: tc.topics, TopicsRegex: tc.regex}
		_, err := NewSinkRunner(cfg)
		if err == nil || !strings.Contains(err.Error(), plugin.KeyDLQTopicName) {
			t.Errorf("%+v: err %v, want one naming %s", tc, err, plugin.KeyDLQTopicName)
		}
	}
}

// flakyConverter fails converting the value "v-<failAt>": retriably for
// the first retriable attempts, then for good when always is set. It is
// not a converter.Appender, so the source runner calls FromConnectData.
type flakyConverter struct {
	str       converter.StringConverter
	failAt    string
	retriable int
	always    bool

	mu       sync.Mutex
	attempts int
}

func (f *flakyConverter) fail(v string) error {
	if v != f.failAt {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	if f.attempts <= f.retriable {
		return plugin.Retriable(errors.New("schema registry unavailable"))
	}
	if f.always {
		return errors.New("cannot convert")
	}
	return nil
}

func (f *flakyConverter) FromConnectData(topic string, s *data.Schema, v any) ([]byte, error) {
	if err := f.fail(fmt.Sprint(v)); err != nil {
		return nil, err
	}
	return f.str.FromConnectData(topic, s, v)
}

func (f *flakyConverter) ToConnectData(topic string, b []byte) (*data.Schema, any, error) {
	if err := f.fail(string(b)); err != nil {
		return nil, nil, err
	}
	return f.str.ToConnectData(topic, b)
}

// A value converter that fails retriably twice and then succeeds is
// retried within errors.retry.timeout: every record arrives and none counts
// as an error (two failed attempts, two retries).
func TestSourceRetriesRetriableConversion(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	st := newStatuses()
	m := metrics.New()
	src := &counterSource{topic: "out", limit: 10, batch: 4}
	cfg := SourceConfig{Common: common(c, st, ID{"src", 0}, nil), Task: src, Offsets: newMemOffsets()}
	conv := &flakyConverter{failAt: "v-5", retriable: 2}
	cfg.ValueConverter = conv
	cfg.Metrics = m.Task("src", 0)
	cfg.Errors = ErrorConfig{RetryTimeout: 10 * time.Second, RetryMinDelay: 10 * time.Millisecond}
	r, err := NewSourceRunner(cfg)
	r = tasktest.StartMayFail(t, r, err)
	got := values(readAll(t, c, "out", 10))
	for i := range 10 {
		if got["v-"+strconv.Itoa(i)] != 1 {
			t.Fatalf("record v-%d written %d times: %v", i, got["v-"+strconv.Itoa(i)], got)
		}
	}
	stop(t, r, 5*time.Second)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	wantTaskMetrics(t, m, "src", map[string]float64{
		"total_record_failures": 2, "total_retries": 2,
		"total_record_errors": 0, "total_records_skipped": 0,
	})
}

// errors.tolerance=all on a source: records whose conversion fails are
// skipped (after the retries errors.retry.timeout allows), the others are
// written, and the skipped records' source offsets are committed too.
func TestSourceToleranceAllSkipsBadRecords(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	st := newStatuses()
	m := metrics.New()
	offs := newMemOffsets()
	src := &counterSource{topic: "out", limit: 10, batch: 3}
	cfg := SourceConfig{Common: common(c, st, ID{"src", 0}, nil), Task: src, Offsets: offs}
	// v-9, the last record, fails retriably past the timeout, then for good.
	cfg.ValueConverter = &flakyConverter{failAt: "v-9", retriable: 1000, always: true}
	cfg.KeyConverter = &flakyConverter{failAt: "4", always: true}
	cfg.Metrics = m.Task("src", 0)
	cfg.Errors = ErrorConfig{ToleranceAll: true, RetryTimeout: 100 * time.Millisecond, RetryMinDelay: 10 * time.Millisecond}
	r, err := NewSourceRunner(cfg)
	r = tasktest.StartMayFail(t, r, err)
	got := values(readAll(t, c, "out", 8))
	if len(got) != 8 || got["v-4"] != 0 || got["v-9"] != 0 {
		t.Fatalf("written: %v", got)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "every record committed, skipped ones included", func() bool { return src.committedCount() == 10 })
	stop(t, r, 5*time.Second)
	if r.Err() != nil {
		t.Fatalf("task failed: %v", r.Err())
	}
	stored, _ := offs.Read(context.Background(), "src", []map[string]any{{"source": "counter"}})
	if stored[0] == nil || stored[0]["pos"] != float64(9) {
		t.Fatalf("stored offset %v, want pos 9 (the skipped last record)", stored[0])
	}
	wantTaskMetrics(t, m, "src", map[string]float64{"total_records_skipped": 2, "total_record_errors": 2})
	if v := metricValue(t, m.Registry(), "kafka_connect_total_retries", map[string]string{"connector": "src"}); v < 2 {
		t.Errorf("total_retries = %v, want at least 2 (v-9 was retried until the timeout)", v)
	}
}

// The error log carries record contents only with
// errors.log.include.messages.
func TestErrorLogIncludesMessagesOnlyWhenAsked(t *testing.T) {
	kr := &kgo.Record{Topic: "in", Partition: 1, Offset: 42, Key: []byte("user-key"), Value: []byte("password=hunter2")}
	for _, include := range []bool{false, true} {
		logs := &testkit.SyncBuffer{}
		h := &errorHandler{cfg: ErrorConfig{ToleranceAll: true, Log: true, LogMessages: include},
			log: slog.New(slog.NewTextHandler(logs, nil)), sleep: func(time.Duration) bool { return true }}
		err := h.handle(context.Background(), stageErr(StageValueConverter, converter.StringConverter{}, errors.New("bad value")),
			func() error { return nil }, failedRecord{kafka: kr})
		if err != errSkipped {
			t.Fatalf("handle: %v, want the record skipped", err)
		}
		out := logs.String()
		for _, want := range []string{"topic=in", "partition=1", "offset=42", "stage=VALUE_CONVERTER", "class=converter.StringConverter", "bad value"} {
			if !strings.Contains(out, want) {
				t.Errorf("include=%v: log lacks %q: %s", include, want, out)
			}
		}
		if strings.Contains(out, "hunter2") != include || strings.Contains(out, "user-key") != include {
			t.Errorf("include=%v: record contents in the log: %v\n%s", include, !include, out)
		}
	}
}

func TestParseErrorConfig(t *testing.T) {
	ec, err := ParseErrorConfig(plugin.KindSink, map[string]string{
		plugin.KeyErrorsRetryTimeout: "-1", plugin.KeyErrorsRetryMaxDelay: "500", plugin.KeyErrorsTolerance: "ALL",
		plugin.KeyErrorsLogEnable: "true", plugin.KeyDLQTopicName: " dlq ", plugin.KeyDLQReplication: "-1", plugin.KeyDLQHeaders: "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ErrorConfig{RetryTimeout: -time.Millisecond, RetryMaxDelay: 500 * time.Millisecond, ToleranceAll: true, Log: true,
		DLQTopic: "dlq", DLQReplication: -1, DLQContextHeaders: true}
	if ec != want {
		t.Fatalf("got %+v, want %+v", ec, want)
	}
	// Sources have no dead letter queue.
	if ec, _ := ParseErrorConfig(plugin.KindSource, map[string]string{plugin.KeyDLQTopicName: "dlq"}); ec.DLQTopic != "" {
		t.Fatalf("source got a dead letter queue: %+v", ec)
	}
	for key, bad := range map[string]string{
		plugin.KeyErrorsTolerance: "some", plugin.KeyErrorsRetryTimeout: "-2", plugin.KeyErrorsRetryMaxDelay: "0",
		plugin.KeyErrorsLogIncludeMessage: "maybe", plugin.KeyDLQReplication: "0",
	} {
		if _, err := ParseErrorConfig(plugin.KindSink, map[string]string{key: bad}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: err %v, want one naming the key", key, bad, err)
		}
	}
}

// On the sink side too, a retriable conversion failure is retried within
// errors.retry.timeout; one that stays retriable past the timeout fails
// the task under errors.tolerance=none.
func TestSinkRetriesRetriableConversion(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1, "in2": 1})
	produceJSON(t, c, "in", "v-0", "v-1", "v-2", "v-3")
	st := newStatuses()
	m := metrics.New()
	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
	cfg.ValueConverter = &flakyConverter{failAt: "v-2", retriable: 2}
	cfg.Metrics = m.Task("s", 0)
	cfg.Errors = ErrorConfig{RetryTimeout: 10 * time.Second, RetryMinDelay: 10 * time.Millisecond}
	r := newSink(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "all four records put", func() bool { return sink.distinct() == 4 })
	if r.State() != StateRunning {
		t.Fatalf("state %s", r.State())
	}
	wantTaskMetrics(t, m, "s", map[string]float64{
		"total_record_failures": 2, "total_retries": 2, "total_record_errors": 0,
	})
	stop(t, r, 5*time.Second)

	produceJSON(t, c, "in2", "v-0", "v-1")
	st2 := newStatuses()
	cfg2 := SinkConfig{Common: common(c, st2, ID{"s2", 0}, map[string]string{"topics": "in2"}), Task: newRecordingSink()}
	cfg2.ValueConverter = &flakyConverter{failAt: "v-1", retriable: 1 << 30}
	cfg2.Errors = ErrorConfig{RetryTimeout: 150 * time.Millisecond, RetryMinDelay: 10 * time.Millisecond}
	start := time.Now()
	r2 := newSink(t, cfg2)
	select {
	case <-r2.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("task did not fail after the retry timeout")
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("failed after %v, before errors.retry.timeout", took)
	}
	if tr := st2.trace(ID{"s2", 0}); !strings.Contains(tr, "errors.retry.timeout") || !strings.Contains(tr, "in2-0@1") {
		t.Errorf("trace: %s", tr)
	}
}

// A dead letter queue topic that cannot be created fails the task at
// start with an error naming the setting to fix.
func TestSinkDeadLetterTopicCreationFailure(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	st := newStatuses()
	cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: newRecordingSink()}
	cfg.Errors = ErrorConfig{ToleranceAll: true, DLQTopic: "dlq", DLQReplication: 3} // one broker
	r := newSink(t, cfg)
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("task did not fail")
	}
	if tr := st.trace(ID{"s", 0}); !strings.Contains(tr, plugin.KeyDLQReplication) {
		t.Fatalf("trace does not name %s: %s", plugin.KeyDLQReplication, tr)
	}
}

// When a dead letter cannot be written, the task fails and the skipped
// record's offset is not committed: nothing is lost.
func TestSinkDeadLetterWriteFailureCommitsNothing(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	adm := admin(t, c)
	produceJSON(t, c, "in", `{"a":0}`, `{"a":1}`)
	st := newStatuses()
	sink := newRecordingSink()
	cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
	cfg.ValueConverter = jsonConverter(t)
	cfg.OffsetFlushInterval = 50 * time.Millisecond
	cfg.Errors = ErrorConfig{ToleranceAll: true, DLQTopic: "dlq", DLQReplication: 1}
	r := newSink(t, cfg)
	testkit.EventuallyTrue(t, 10*time.Second, "good records committed", func() bool { return committedAt(adm, connectnames.SinkGroup("s"), "in", 0) == 2 })
	// The dead letter queue topic disappears; the producer cannot write.
	if _, err := adm.DeleteTopics(context.Background(), "dlq"); err != nil {
		t.Fatal(err)
	}
	produceJSON(t, c, "in", "bad")
	select {
	case <-r.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("task did not fail when the dead letter could not be written")
	}
	if tr := st.trace(ID{"s", 0}); !strings.Contains(tr, "dead letter queue") {
		t.Fatalf("trace: %s", tr)
	}
	if got := committed(t, adm, connectnames.SinkGroup("s"), "in")[0]; got != 2 {
		t.Fatalf("committed offset %d, want 2 (not past the record whose dead letter failed)", got)
	}
}

// errantSink reports records whose value has the field "bad" through the
// errant record reporter (failing Put when the reporter refuses them) and
// records the others.
type errantSink struct {
	*recordingSink
	reporter plugin.ErrantRecordReporter
	started  chan struct{}
}

func (s *errantSink) Start(_ context.Context, tc plugin.SinkTaskContext, _ map[string]string) error {
	s.reporter = tc.ErrantRecordReporter()
	close(s.started)
	return nil
}

func (s *errantSink) Put(ctx context.Context, recs []*plugin.SinkRecord) error {
	var good []*plugin.SinkRecord
	for _, r := range recs {
		if v, ok := r.Value.(map[string]any); ok && v["bad"] != nil {
			if s.reporter == nil {
				return errors.New("a bad record and no reporter")
			}
			// A task may report from its own goroutine, under a context
			// that ends before the dead letter is written (here: at once).
			done, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.reporter.Report(done, r, fmt.Errorf("row %v does not fit", v["bad"])); err != nil {
				return err
			}
			continue
		}
		good = append(good, r)
	}
	return s.recordingSink.Put(ctx, good)
}

// KIP-610: with errors.tolerance=all and a dead letter queue, a record the
// task reports goes to the dead letter queue (converted back, in stage
// TASK_PUT), the task goes on and the offsets move past it; with
// errors.tolerance=none a report fails the task; without a dead letter
// queue or an error log the task gets no reporter, as in Kafka Connect.
func TestSinkErrantRecordReporter(t *testing.T) {
	vals := []string{`{"a":0}`, `{"bad":1}`, `{"a":2}`}
	t.Run("tolerance all", func(t *testing.T) {
		c := cluster(t, map[string]int32{"in": 1})
		adm := admin(t, c)
		produceJSON(t, c, "in", vals...)
		m := metrics.New()
		sink := &errantSink{recordingSink: newRecordingSink(), started: make(chan struct{})}
		cfg := SinkConfig{Common: common(c, newStatuses(), ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
		cfg.ValueConverter = jsonConverter(t)
		cfg.Metrics = m.Task("s", 0)
		cfg.OffsetFlushInterval = 50 * time.Millisecond
		cfg.Errors = ErrorConfig{ToleranceAll: true, DLQTopic: "in-dlq", DLQReplication: 1, DLQContextHeaders: true}
		r := newSink(t, cfg)
		testkit.EventuallyTrue(t, 10*time.Second, "offsets committed past the reported record", func() bool {
			return committedAt(adm, connectnames.SinkGroup("s"), "in", 0) == 3
		})
		if sink.distinct() != 2 || r.State() != StateRunning {
			t.Fatalf("%d records written, state %s; want 2 and RUNNING", sink.distinct(), r.State())
		}
		d := readAll(t, c, "in-dlq", 1)[0]
		if string(d.Value) != `{"bad":1}` || string(d.Key) != "k1" {
			t.Errorf("dead letter key %q value %q, want the reported record", d.Key, d.Value)
		}
		for k, v := range map[string]string{HeaderErrorStage: string(StageTaskPut), HeaderErrorOffset: "1", HeaderErrorClass: "*task.errantSink",
			HeaderErrorMessage: "row 1 does not fit", "src": "orig"} {
			if got, ok := header(d, k); !ok || got != v {
				t.Errorf("dead letter header %s = %q (present %v), want %q", k, got, ok, v)
			}
		}
		wantTaskMetrics(t, m, "s", map[string]float64{"total_record_errors": 1, "total_records_skipped": 1, "deadletterqueue_produce_requests": 1})
	})
	t.Run("tolerance none", func(t *testing.T) {
		c := cluster(t, map[string]int32{"in": 1})
		produceJSON(t, c, "in", vals...)
		st := newStatuses()
		sink := &errantSink{recordingSink: newRecordingSink(), started: make(chan struct{})}
		cfg := SinkConfig{Common: common(c, st, ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
		cfg.ValueConverter = jsonConverter(t)
		cfg.Errors = ErrorConfig{Log: true}
		r := newSink(t, cfg)
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("task did not fail")
		}
		if tr := st.trace(ID{"s", 0}); st.last(ID{"s", 0}) != StateFailed || !strings.Contains(tr, "row 1 does not fit") || !strings.Contains(tr, "errors.tolerance") {
			t.Fatalf("state %s, trace %q; want FAILED with the reported error", st.last(ID{"s", 0}), tr)
		}
	})
	t.Run("no reporter", func(t *testing.T) {
		c := cluster(t, map[string]int32{"in": 1})
		sink := &errantSink{recordingSink: newRecordingSink(), started: make(chan struct{})}
		cfg := SinkConfig{Common: common(c, newStatuses(), ID{"s", 0}, map[string]string{"topics": "in"}), Task: sink}
		cfg.Errors = ErrorConfig{ToleranceAll: true}
		newSink(t, cfg)
		select {
		case <-sink.started:
		case <-time.After(10 * time.Second):
			t.Fatal("task did not start")
		}
		if sink.reporter != nil {
			t.Fatal("a reporter without a dead letter queue or an error log")
		}
	})
}
