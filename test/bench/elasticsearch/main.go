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

// Command elasticsearch measures the ElasticsearchSink against a bare
// `_bulk` client in the same run, both writing the same documents into the
// in-process _bulk stand-in (test/testkit/servers/estest; no
// Elasticsearch server runs on these machines), and prints one figure per
// line, "conveyor-bench: NAME=VALUE":
//
//   - es_raw_docs_per_s: a bare net/http client posting the documents with
//     _bulk, batch.size (2000) documents a request and max.in.flight.requests
//     (5) requests at once, as the sink's defaults send them, with the same
//     action lines (id and external version);
//   - es_sink_docs_per_s: one sink task through the worker's sink runner,
//     from the records in Kafka (kfake in this process; string keys, the
//     JSON documents as text with StringConverter) until the stand-in holds
//     every document, timed from the task's RUNNING;
//     es_sink_vs_raw_ratio divides it by es_raw_docs_per_s;
//   - es_sink_json_vs_raw_ratio: the same with JsonConverter
//     (schemas.enable=false), whose documents pass through as JSON text
//     (the runner's pass-through: no map built, written as from one);
//   - es_sink_json_vs_text_ratio: the sink with JsonConverter over the
//     sink with StringConverter, in turn.
//
// Each ratio is the median of -tries tries; a try runs the bare client and
// then the sink, one right after the other, so that both meet the same
// load of a shared machine. Run it with `make bench`.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/elasticsearch"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/estest"
)

var (
	docs    = flag.Int("records", 100_000, "documents per measurement")
	tries   = flag.Int("tries", 3, "tries of each measurement; the try with the median ratio counts")
	verbose = flag.Bool("v", false, "log every try to stderr")
)

const (
	batchSize   = 2000 // the sink's default batch.size
	maxInFlight = 5    // and max.in.flight.requests
	index       = "bench"
)

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench-elasticsearch: "+format+"\n", args...)
	}
}

func figure(name string, v float64) {
	fmt.Printf("conveyor-bench: %s=%s\n", name, strconv.FormatFloat(v, 'f', 3, 64))
}

func main() {
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(worker.DefaultGCPercent) // the runner runs as in a worker
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-elasticsearch: %v\n", err)
		os.Exit(1)
	}
}

// doc is document k, about 200 bytes of JSON.
func doc(k int) []byte {
	return []byte(fmt.Sprintf(`{"id":%d,"customer":"customer-%06d","status":"shipped","qty":%d,"price":%d.%02d,"note":"a note of some length, as orders carry one","at":"2026-12-01T18:%02d:%02dZ"}`,
		k, k%100_000, k%50, k%1000, k%100, (k/60)%60, k%60))
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	es, err := estest.Start()
	if err != nil {
		return err
	}
	defer es.Close()
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, index))
	if err != nil {
		return err
	}
	defer k.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	n := *docs
	// The records once in Kafka; the bare client writes the same keys and
	// documents, with the offsets Kafka gave them as versions.
	type record struct {
		key    string
		value  []byte
		offset int64
	}
	recs := make([]record, 0, n)
	var mu sync.Mutex
	var batch []*kgo.Record
	for i := range n {
		batch = append(batch, &kgo.Record{Topic: index, Key: []byte(strconv.Itoa(i)), Value: doc(i)})
		if len(batch) == 10_000 || i == n-1 {
			for _, r := range cl.ProduceSync(ctx, batch...) {
				if r.Err != nil {
					return r.Err
				}
				mu.Lock()
				recs = append(recs, record{string(r.Record.Key), r.Record.Value, r.Record.Offset})
				mu.Unlock()
			}
			batch = batch[:0]
		}
	}
	logf("%d records in Kafka", len(recs))

	raw := func() (float64, error) {
		es.Reset()
		lines := make([][]byte, len(recs))
		for i, r := range recs {
			lines[i] = []byte(fmt.Sprintf(`{"index":{"_index":%q,"_id":%q,"version":%d,"version_type":"external"}}`+"\n%s\n", index, r.key, r.offset, r.value))
		}
		start := time.Now()
		if err := bareBulk(ctx, es.URL, lines); err != nil {
			return 0, err
		}
		rate := float64(n) / time.Since(start).Seconds()
		if c := es.Count(index); c != n {
			return 0, fmt.Errorf("bare client: %d documents, want %d", c, n)
		}
		return rate, nil
	}
	sink := func(valueConverter string) func() (float64, error) {
		return func() (float64, error) {
			es.Reset()
			return sinkRun(ctx, k, es, valueConverter, n)
		}
	}
	text, err := paired("sink (StringConverter)", raw, sink("org.apache.kafka.connect.storage.StringConverter"))
	if err != nil {
		return err
	}
	figure("es_raw_docs_per_s", text.base)
	figure("es_sink_docs_per_s", text.conn)
	figure("es_sink_vs_raw_ratio", text.ratio())
	js, err := paired("sink (JsonConverter)", raw, sink("org.apache.kafka.connect.json.JsonConverter"))
	if err != nil {
		return err
	}
	figure("es_sink_json_docs_per_s", js.conn)
	figure("es_sink_json_vs_raw_ratio", js.ratio())
	// JsonConverter against StringConverter (the documents as text), in
	// turn: the JSON path against the bytes path.
	jt, err := paired("sink (JsonConverter) vs sink (StringConverter)", sink("org.apache.kafka.connect.storage.StringConverter"), sink("org.apache.kafka.connect.json.JsonConverter"))
	if err != nil {
		return err
	}
	figure("es_sink_json_vs_text_ratio", jt.ratio())
	return nil
}

type pair struct{ base, conn float64 }

func (p pair) ratio() float64 { return p.conn / p.base }

// paired runs base then conn -tries times and returns the try with the
// median ratio.
func paired(what string, base, conn func() (float64, error)) (pair, error) {
	var all []pair
	for i := range max(*tries, 1) {
		b, err := base()
		if err != nil {
			return pair{}, err
		}
		c, err := conn()
		if err != nil {
			return pair{}, err
		}
		p := pair{b, c}
		logf("try %d: bare _bulk %.0f docs/s, %s %.0f docs/s, ratio %.2f", i+1, b, what, c, p.ratio())
		all = append(all, p)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ratio() < all[j].ratio() })
	return all[len(all)/2], nil
}

// bareBulk posts the lines with _bulk, batchSize a request, maxInFlight
// requests at once, and checks each answer says "errors":false.
func bareBulk(ctx context.Context, url string, lines [][]byte) error {
	work := make(chan [][]byte)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxInFlight}}
	defer client.CloseIdleConnections()
	for range maxInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body bytes.Buffer
			for b := range work {
				body.Reset()
				for _, l := range b {
					body.Write(l)
				}
				if err := post(ctx, client, url, body.Bytes()); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	for i := 0; i < len(lines); i += batchSize {
		work <- lines[i:min(i+batchSize, len(lines))]
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

func post(ctx context.Context, client *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/_bulk", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || !bytes.Contains(out[:min(len(out), 64)], []byte(`"errors":false`)) {
		return fmt.Errorf("_bulk: status %d: %.200s", resp.StatusCode, out)
	}
	return nil
}

// sinkRun runs one sink task on the topic (a fresh consumer group) until
// the stand-in holds n documents, and returns documents/s since RUNNING.
func sinkRun(ctx context.Context, k *kfake.Cluster, es *estest.Standin, valueConverter string, n int) (float64, error) {
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	cfg := map[string]string{"name": name, "connector.class": elasticsearch.Class, "topics": index,
		elasticsearch.KeyURL: es.URL, elasticsearch.KeyIndexFormat: index,
		"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": valueConverter,
		"value.converter.schemas.enable": "false"}
	var running atomic.Pointer[time.Time]
	r, err := task.New(task.Spec{Common: task.Common{
		ID: task.ID{Connector: name}, Config: cfg,
		Kafka: []kgo.Opt{kgo.SeedBrokers(k.ListenAddrs()...)},
		Status: task.StatusFunc(func(_ task.ID, st task.State, _ string) {
			if st == task.StateRunning {
				now := time.Now()
				running.CompareAndSwap(nil, &now)
			}
		}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OffsetFlushInterval: 10 * time.Second, // the worker's default
	}, Plugin: elasticsearch.Plugin(), Connector: cfg})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := r.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}()
	for es.Count(index) < n {
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("the sink task failed: %w", err)
		}
		if time.Since(start) > 5*time.Minute {
			return 0, fmt.Errorf("the sink wrote %d of %d documents in 5 minutes", es.Count(index), n)
		}
		time.Sleep(2 * time.Millisecond) // polling the count; the measurement's resolution
	}
	from := start
	if t := running.Load(); t != nil {
		from = *t
	}
	return float64(n) / time.Since(from).Seconds(), nil
}
