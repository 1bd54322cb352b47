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

package elasticsearch

// Tests through the sink runner (kfake as Kafka) against the in-process
// _bulk stand-in (estest): no Elasticsearch server runs on these machines,
// and ZincSearch, the real server of the smoke test, reports no per-item
// error. Every test name says Standin.

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// Keys 0..499 indexed (each twice, the second version wins), then every
// tenth deleted by a tombstone, and a tombstone for a key never indexed:
// the index holds exactly the other keys at their last version.
func TestStandinTombstonesDelete(t *testing.T) {
	e := newEnv(t, 3)
	var recs []*kgo.Record
	for v := 1; v <= 2; v++ {
		for k := range 500 {
			recs = append(recs, rec(strconv.Itoa(k), doc(k, v)))
		}
	}
	for k := 0; k < 500; k += 10 {
		recs = append(recs, rec(strconv.Itoa(k), nil))
	}
	recs = append(recs, rec("never-indexed", nil))
	e.produce(t, recs...)
	e.startSink(t, e.config(), false)
	e.waitCommitted(t, 30*time.Second)
	wantIDs(t, e.es, 0, 500, func(k int) bool { return k%10 == 0 })
	if got := string(e.es.Doc("orders", "7")); !strings.Contains(got, `"version":2`) {
		t.Errorf("document 7 = %s, want version 2", got)
	}
	// One 404 is the never-indexed key. A batch delivered again (a retry or
	// a rebalance under load) answers its deletes 404 and its older
	// versions 409 (version conflict), so more 404s come only with 409s.
	if st := e.es.Statuses(); st[404] < 1 || st[200] < 50 || (st[404] > 1 && st[409] == 0) {
		t.Errorf("item statuses %v: want a 404 for the never-indexed key, the deletes among the 200s, and more 404s only from a batch delivered again (with its 409s)", st)
	}
}

// badDoc is a document whose qty does not fit the long mapping the other
// documents gave the field: Elasticsearch answers 400.
func badDoc(k int) []byte {
	return []byte(fmt.Sprintf(`{"id":%d,"version":1,"name":"order %d","qty":"not a number"}`, k, k))
}

// A mapping conflict with errors.tolerance=all and a dead letter queue:
// every other document is indexed, the refused record lands in the dead
// letter queue with its key, value and the server's reason (without the
// value preview), and the offsets reach the end.
func TestStandinMalformedDocumentGoesToTheDeadLetterQueue(t *testing.T) {
	e := newEnv(t, 1)
	var recs []*kgo.Record
	for k := range 50 {
		v := doc(k, 1)
		if k == 37 {
			v = badDoc(k)
		}
		recs = append(recs, rec(strconv.Itoa(k), v))
	}
	e.produce(t, recs...)
	e.startSink(t, e.config(plugin.KeyErrorsTolerance, "all", plugin.KeyDLQTopicName, "orders-dlq",
		plugin.KeyDLQReplication, "1", plugin.KeyDLQHeaders, "true"), false)
	e.waitCommitted(t, 30*time.Second)
	wantIDs(t, e.es, 0, 50, func(k int) bool { return k == 37 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka.ListenAddrs()...), kgo.ConsumeTopics("orders-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	f := dl.PollFetches(ctx)
	if errs := f.Errors(); len(errs) > 0 || f.NumRecords() != 1 {
		t.Fatalf("dead letter queue: %d records, errors %v; want 1", f.NumRecords(), errs)
	}
	d := f.Records()[0]
	if string(d.Key) != "37" || !bytes.Contains(d.Value, []byte(`"not a number"`)) {
		t.Errorf("dead letter key %s value %s, want record 37", d.Key, d.Value)
	}
	h := map[string]string{}
	for _, x := range d.Headers {
		h[x.Key] = string(x.Value)
	}
	msg := h[task.HeaderErrorMessage]
	if h[task.HeaderErrorStage] != string(task.StageTaskPut) || h[task.HeaderErrorOffset] != "37" ||
		!strings.Contains(msg, "document_parsing_exception") || !strings.Contains(msg, "orders-0@37") || strings.Contains(msg, "not a number") {
		t.Errorf("dead letter headers %v: want stage TASK_PUT, offset 37, the reason and position, and no value preview", h)
	}
}

// The same bad record with errors.tolerance=none fails the task, and the
// trace names the record's topic, partition and offset.
func TestStandinMalformedDocumentFailsTheTaskNamingItsPosition(t *testing.T) {
	e := newEnv(t, 1)
	var recs []*kgo.Record
	for k := range 50 {
		v := doc(k, 1)
		if k == 37 {
			v = badDoc(k)
		}
		recs = append(recs, rec(strconv.Itoa(k), v))
	}
	e.produce(t, recs...)
	r, st := e.startSink(t, e.config(), true)
	// The refusal arrives with the request's answer; the next Put (or
	// Flush) reports it. Keep records coming, as a live topic does.
	testkit.Eventually(t, 30*time.Second, "the task to fail", func() (bool, string) {
		if r.Err() != nil {
			return true, ""
		}
		e.produce(t, rec("more", doc(1000, 1)))
		s, _ := st.get()
		return false, string(s)
	})
	s, trace := st.get()
	t.Logf("trace: %s", trace)
	if s != task.StateFailed || !strings.Contains(trace, "orders-0@37") || !strings.Contains(trace, "document_parsing_exception") || strings.Contains(trace, "not a number") {
		t.Fatalf("state %s, trace:\n%s\nwant FAILED naming orders-0@37 and the reason, without the value", s, trace)
	}
	if n := e.es.Count("orders"); n < 37 {
		t.Errorf("%d documents indexed, want the good ones of the batch", n)
	}
}

// A 10 s outage (the server's listener closed, connections refused) while
// records keep arriving: the task retries through it and, once the server
// is back, every document is there and the offsets reach the end.
func TestStandinOutageOf10sIsRetriedThrough(t *testing.T) {
	e := newEnv(t, 2)
	r, _ := e.startSink(t, e.config(KeyMaxRetries, "3"), false)
	batch := func(from, to int) {
		var recs []*kgo.Record
		for k := from; k < to; k++ {
			recs = append(recs, rec(strconv.Itoa(k), doc(k, 1)))
		}
		e.produce(t, recs...)
	}
	batch(0, 1000)
	testkit.Eventually(t, 30*time.Second, "the first documents", func() (bool, string) {
		n := e.es.Count("orders")
		return n == 1000, fmt.Sprint(n)
	})
	e.es.Down()
	down := time.Now()
	// Records keep arriving during the outage, 20 every 50 ms, so failures
	// reach the runtime through Put as well as through Flush. The outage
	// is the fault under test, of a fixed length: the loop ends with it.
	next := 1000
	for time.Since(down) < 10*time.Second {
		batch(next, next+20)
		next += 20
		time.Sleep(50 * time.Millisecond)
	}
	if r.Err() != nil {
		t.Fatalf("the task failed during the outage: %v", r.Err())
	}
	if err := e.es.Up(); err != nil {
		t.Fatal(err)
	}
	t.Logf("server down for %v", time.Since(down).Round(time.Millisecond))
	batch(next, next+1000)
	e.waitCommitted(t, 60*time.Second)
	wantIDs(t, e.es, 0, next+1000, nil)
}

// Whole requests answered 429, 503 and 502 and items answered 429 are
// retried: every document arrives, and the stand-in saw the refusals.
func TestStandinRetries429And5xx(t *testing.T) {
	e := newEnv(t, 1)
	e.es.FailRequests(429, 503, 502)
	e.es.RejectItems(7)
	var recs []*kgo.Record
	for k := range 300 {
		recs = append(recs, rec(strconv.Itoa(k), doc(k, 1)))
	}
	e.produce(t, recs...)
	e.startSink(t, e.config(), false)
	e.waitCommitted(t, 30*time.Second)
	wantIDs(t, e.es, 0, 300, nil)
	if st := e.es.Statuses(); st[429] != 7 {
		t.Errorf("item statuses %v, want 7 items answered 429", st)
	}
	if n := e.es.Requests(); n < 5 {
		t.Errorf("%d requests, want at least the 3 refused ones, one with rejected items and its retry", n)
	}
}

// Redelivered records (the group rewound to the start) are answered 409
// (the stored external version is the same), which the sink ignores: the
// offsets reach the end again and no document changed.
func TestStandinVersionConflictsOfARedeliveryAreIgnored(t *testing.T) {
	e := newEnv(t, 1)
	var recs []*kgo.Record
	for k := range 200 {
		recs = append(recs, rec(strconv.Itoa(k%100), doc(k%100, k)))
	}
	e.produce(t, recs...)
	cfg := e.config()
	r, _ := e.startSink(t, cfg, false)
	e.waitCommitted(t, 30*time.Second)
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := e.es.Statuses()
	if _, err := e.adm.DeleteGroup(context.Background(), "connect-"+connector); err != nil {
		t.Fatal(err)
	}
	e.startSink(t, cfg, false)
	e.waitCommitted(t, 30*time.Second)
	after := e.es.Statuses()
	if after[409]-before[409] != 200 || after[200]+after[201] != before[200]+before[201] {
		t.Fatalf("statuses before the redelivery %v, after %v: want 200 more 409s and nothing else", before, after)
	}
	wantIDs(t, e.es, 0, 100, nil)
	if got := string(e.es.Doc("orders", "42")); !strings.Contains(got, `"version":142`) {
		t.Errorf("document 42 = %s, want version 142", got)
	}
}

// Basic and API key authentication: the right credentials write, a wrong
// password fails the task with the keys to check, and never shows the
// password.
func TestStandinAuthentication(t *testing.T) {
	for _, c := range []struct {
		name     string
		kv       []string
		wantFail bool
	}{
		{"basic", []string{KeyUsername, "writer", KeyPassword, "Right-Pw-1"}, false},
		{"api key", []string{KeyAPIKey, "aWQ6a2V5LXNlY3JldA=="}, false},
		{"wrong password", []string{KeyUsername, "writer", KeyPassword, "Wrong-Pw-2"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, 1)
			e.es.Username, e.es.Password, e.es.APIKey = "writer", "Right-Pw-1", "aWQ6a2V5LXNlY3JldA=="
			e.produce(t, rec("1", doc(1, 1)), rec("2", doc(2, 1)))
			r, st := e.startSink(t, e.config(c.kv...), c.wantFail)
			if !c.wantFail {
				e.waitCommitted(t, 30*time.Second)
				wantIDs(t, e.es, 1, 3, nil)
				return
			}
			testkit.Eventually(t, 30*time.Second, "the task to fail", func() (bool, string) {
				if r.Err() != nil {
					return true, ""
				}
				e.produce(t, rec("3", doc(3, 1)))
				return false, ""
			})
			_, trace := st.get()
			if !strings.Contains(trace, "status 401") || !strings.Contains(trace, KeyUsername) || strings.Contains(trace, "Wrong-Pw-2") {
				t.Fatalf("trace:\n%s\nwant the 401 and the keys to check, without the password", trace)
			}
		})
	}
}
