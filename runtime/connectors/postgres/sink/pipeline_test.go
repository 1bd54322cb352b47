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

package sink

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

const orderValueSchema = `{"type":"struct","name":"orders","optional":false,"fields":[` +
	`{"field":"id","type":"int64","optional":false},{"field":"version","type":"int32","optional":false},` +
	`{"field":"note","type":"string","optional":true},` +
	`{"field":"at","type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1}]}`

func orderKey(k int) []byte {
	return []byte(`{"schema":{"type":"int64","optional":false},"payload":` + strconv.Itoa(k) + `}`)
}

func orderValue(k, version int) []byte {
	note := `"n-` + strconv.Itoa(version) + `"`
	if version%5 == 0 {
		note = "null"
	}
	return []byte(fmt.Sprintf(`{"schema":%s,"payload":{"id":%d,"version":%d,"note":%s,"at":%d}}`, orderValueSchema, k, version, note, 1_700_000_000_000+int64(version)))
}

func startSinks(t *testing.T, c *kfake.Cluster, cfg map[string]string, n int) []task.Runner {
	t.Helper()
	var out []task.Runner
	for i := 0; i < n; i++ {
		// The worker's default converters (JSON with schemas); errors.*
		// come from the connector config, as in the worker.
		r, err := task.New(task.Spec{Common: task.Common{
			ID: task.ID{Connector: "pg-sink", Task: i}, Config: cfg,
			Kafka:  []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.HeartbeatInterval(100 * time.Millisecond)},
			Status: task.StatusFunc(func(task.ID, task.State, string) {}), OffsetFlushInterval: 200 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
		}, Plugin: Plugin(), Connector: cfg})
		out = append(out, tasktest.Start(t, r, err))
	}
	return out
}

func stopSinks(t *testing.T, rs []task.Runner) {
	t.Helper()
	for _, r := range rs {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := r.Stop(ctx); err != nil {
			t.Errorf("stopping a sink task: %v", err)
		}
		cancel()
	}
}

// waitCommitted waits until the sink's group committed the end offset of
// every partition, i.e. every record was written and flushed.
func waitCommitted(t *testing.T, adm *kadm.Client, topic string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, d, "the sink's group to commit the end offsets", func() (bool, string) {
		resp, err := adm.FetchOffsets(ctx, "connect-pg-sink")
		if err != nil {
			return false, err.Error()
		}
		var behind []string
		ends.Each(func(o kadm.ListedOffset) {
			if c, ok := resp.Lookup(o.Topic, o.Partition); !ok || c.At < o.Offset {
				behind = append(behind, fmt.Sprintf("%d: committed %d of %d", o.Partition, c.At, o.Offset))
			}
		})
		return len(behind) == 0, strings.Join(behind, ", ")
	})
}

// The must-show: 100k records (60k keys, every 7th record produced twice,
// tombstones for every 50th key) through two sink tasks with upserts end
// in exactly the expected rows; delivering half of them again (the
// group's offsets rewound to the middle) leaves exactly the same rows.
func TestUpsertExactlyOnceRowsUnderRedelivery(t *testing.T) {
	const records, keys = 100_000, 60_000
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE TABLE orders (id bigint PRIMARY KEY, version integer NOT NULL, note text, at timestamp NOT NULL)`)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	start := time.Now()
	var batch []*kgo.Record
	send := func(force bool) {
		if len(batch) >= 5000 || (force && len(batch) > 0) {
			if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	produced := 0
	for i := 0; i < records; i++ {
		k := i % keys
		r := &kgo.Record{Topic: "orders", Key: orderKey(k), Value: orderValue(k, i)}
		batch = append(batch, r)
		produced++
		if i%7 == 0 { // a duplicate, as a producer retry would write
			batch = append(batch, &kgo.Record{Topic: "orders", Key: r.Key, Value: r.Value})
			produced++
		}
		send(false)
	}
	for k := 0; k < keys; k += 50 {
		batch = append(batch, &kgo.Record{Topic: "orders", Key: orderKey(k)}) // tombstone
		produced++
		send(false)
	}
	send(true)
	t.Logf("produced %d records in %v", produced, time.Since(start))

	cfg := map[string]string{"name": "pg-sink", "connector.class": "PostgresSink", "topics": "orders", "tasks.max": "2",
		"connection.url": url, KeyInsertMode: "upsert", KeyPKMode: "record_key", KeyPKFields: "id", KeyDeleteEnabled: "true", KeyBatchSize: "5000"}
	check := func(pass string) {
		t.Helper()
		// Expected: keys not divisible by 50, each at its last version.
		got := pgtest.QueryString(t, url, `SELECT format('%s/%s/%s', count(*),
			count(*) FILTER (WHERE version = CASE WHEN id < 40000 THEN id + 60000 ELSE id END
				AND (note IS NULL) = (version % 5 = 0) AND coalesce(note, '') IN ('', 'n-' || version)
				AND at = to_timestamp((1700000000000 + version) / 1000.0) AT TIME ZONE 'UTC'),
			count(*) FILTER (WHERE id % 50 = 0)) FROM orders`)
		if want := fmt.Sprintf("%d/%d/0", keys-keys/50, keys-keys/50); got != want {
			t.Fatalf("%s: rows/right rows/deleted rows present = %s, want %s", pass, got, want)
		}
	}

	start = time.Now()
	sinks := startSinks(t, c, cfg, 2)
	waitCommitted(t, adm, "orders", 120*time.Second)
	stopSinks(t, sinks)
	t.Logf("first delivery: %d records in %v", produced, time.Since(start))
	check("first delivery")

	// Redeliver the second half of every partition (the part with the
	// tombstones and the last versions): rewind the group to the middle.
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	rewind := kadm.Offsets{}
	redelivered := 0
	ends.Each(func(o kadm.ListedOffset) {
		rewind.AddOffset(o.Topic, o.Partition, o.Offset/2, -1)
		redelivered += int(o.Offset - o.Offset/2)
	})
	resp, err := adm.CommitOffsets(ctx, "connect-pg-sink", rewind)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("rewinding the sink group: %v", err)
	}
	fetched, err := adm.FetchOffsets(ctx, "connect-pg-sink")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup("orders", 0); o.At == 0 || o.At != rewind["orders"][0].At {
		t.Fatalf("group not rewound: %+v", o)
	}
	start = time.Now()
	sinks = startSinks(t, c, cfg, 2)
	waitCommitted(t, adm, "orders", 120*time.Second)
	stopSinks(t, sinks)
	t.Logf("redelivery: %d records in %v", redelivered, time.Since(start))
	check("after redelivery")
}

// A record the table refuses (a note too long for its column), with
// errors.tolerance=all and a dead letter queue, through the runner: every
// other record is written, the refused one lands in the dead letter queue
// (stage TASK_PUT, its key and value as the converters write them), and
// the group's offsets reach the end.
func TestRefusedRecordGoesToTheDeadLetterQueue(t *testing.T) {
	url := pg.CreateDatabase(t)
	pgtest.ExecURL(t, url, `CREATE TABLE orders (id bigint PRIMARY KEY, version integer NOT NULL, note varchar(8), at timestamp NOT NULL)`)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var recs []*kgo.Record
	for k := 1; k <= 20; k++ {
		v := orderValue(k, 1)
		if k == 7 {
			v = bytes.Replace(v, []byte(`"note":"n-1"`), []byte(`"note":"far too long for the column"`), 1)
		}
		recs = append(recs, &kgo.Record{Topic: "orders", Key: orderKey(k), Value: v})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{"name": "pg-sink", "connector.class": "PostgresSink", "topics": "orders", "connection.url": url,
		KeyInsertMode: "upsert", KeyPKMode: "record_key", KeyPKFields: "id",
		plugin.KeyErrorsTolerance: "all", plugin.KeyDLQTopicName: "orders-dlq", plugin.KeyDLQReplication: "1", plugin.KeyDLQHeaders: "true"}
	sinks := startSinks(t, c, cfg, 1)
	waitCommitted(t, adm, "orders", 30*time.Second)
	stopSinks(t, sinks)
	if got := pgtest.QueryString(t, url, `SELECT format('%s/%s', count(*), count(*) FILTER (WHERE id = 7)) FROM orders`); got != "19/0" {
		t.Fatalf("rows/rows of key 7 = %s, want 19/0", got)
	}
	fetchCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("orders-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	f := dl.PollFetches(fetchCtx)
	if errs := f.Errors(); len(errs) > 0 || f.NumRecords() != 1 {
		t.Fatalf("dead letter queue: %d records, errors %v; want 1", f.NumRecords(), errs)
	}
	d := f.Records()[0]
	if !bytes.Contains(d.Value, []byte(`"far too long for the column"`)) || !bytes.Contains(d.Key, []byte(`"payload":7`)) {
		t.Errorf("dead letter key %s value %s, want record 7", d.Key, d.Value)
	}
	headers := map[string]string{}
	for _, h := range d.Headers {
		headers[h.Key] = string(h.Value)
	}
	if headers[task.HeaderErrorStage] != string(task.StageTaskPut) || headers[task.HeaderErrorOffset] != "6" ||
		!strings.Contains(headers[task.HeaderErrorMessage], "value too long") {
		t.Errorf("dead letter headers %v, want stage TASK_PUT, offset 6 and PostgreSQL's reason", headers)
	}
}
