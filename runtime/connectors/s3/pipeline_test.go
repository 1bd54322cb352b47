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

package s3

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
	"github.com/conveyor-dev/conveyor/test/testkit/sinkkit"
)

const jsonConverter = "org.apache.kafka.connect.json.JsonConverter"

// bucket starts an S3 server with a bucket "lake" and returns it with a client.
func bucket(t *testing.T) (*servers.S3, *minio.Client) {
	t.Helper()
	s := servers.For(t).S3()
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(context.Background(), "lake", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	return s, c
}

func sinkConfig(name, topic string, s *servers.S3, kv ...string) map[string]string {
	cfg := map[string]string{"name": name, "connector.class": "S3Sink", "topics": topic, "tasks.max": "2",
		"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": jsonConverter, "value.converter.schemas.enable": "false",
		KeyBucket: "lake", KeyStoreURL: s.URL(), KeyAccessKey: s.Access, KeySecretKey: s.Secret, KeyTopicsDir: name, KeyFlushSize: "1000"}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return cfg
}

// objects returns every object under prefix/ as name (without the
// prefix) → content, gunzipped when gz.
func objects(t testing.TB, c *minio.Client, prefix string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	for info := range c.ListObjects(ctx, "lake", minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if info.Err != nil {
			t.Fatal(info.Err)
		}
		o, err := c.GetObject(ctx, "lake", info.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(o)
		o.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(info.Key, prefix+"/")] = b
	}
	return out
}

// records returns n records {"id":i} spread over parts partitions in
// turn, and the objects flush.size=1000 must give: per partition
// orders/partition=P/orders+P+<start>.json holding its records in order.
func records(topic string, n int, parts int32, flush int) ([]*kgo.Record, map[string]string) {
	var out []*kgo.Record
	lines := map[int32][]string{}
	for i := 0; i < n; i++ {
		p := int32(i) % parts
		v := fmt.Sprintf(`{"id":%d,"note":"n-%d"}`, i, i%7)
		out = append(out, &kgo.Record{Topic: topic, Partition: p, Key: []byte(strconv.Itoa(i)), Value: []byte(v)})
		lines[p] = append(lines[p], v)
	}
	want := map[string]string{}
	for p, ls := range lines {
		for start := 0; start < len(ls); start += flush {
			name := fmt.Sprintf("%s/partition=%d/%s+%d+%010d.json", topic, p, topic, p, start)
			want[name] = strings.Join(ls[start:min(start+flush, len(ls))], "\n") + "\n"
		}
	}
	return out, want
}

func checkObjects(t *testing.T, got map[string][]byte, want map[string]string) {
	t.Helper()
	wrong := 0
	for name, w := range want {
		if g, ok := got[name]; !ok || string(g) != w {
			if wrong < 3 {
				t.Errorf("object %s: present %v, %d bytes, want %d bytes", name, ok, len(g), len(w))
			}
			wrong++
		}
	}
	if len(got) != len(want) || wrong > 0 {
		var names []string
		for n := range got {
			if _, ok := want[n]; !ok {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		t.Fatalf("%d objects, want exactly %d; %d wrong; unexpected: %v", len(got), len(want), wrong, names[:min(5, len(names))])
	}
}

func stop(t *testing.T, rs []task.Runner) {
	t.Helper()
	for _, r := range rs {
		if err := r.Err(); err != nil {
			t.Fatalf("task failed: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_ = r.Stop(ctx)
		cancel()
	}
}

// The must-show on the sink's own: 100k records over 4 partitions and two
// tasks end as exactly the 100 objects flush.size=1000 gives, each with
// its records in offset order. A connector stopped while every partition
// has an object half filled (its records put, not uploaded) and started
// again writes the same objects byte for byte: only uploaded objects'
// offsets were committed, so the restart cuts the open ones again.
func TestS3SinkWritesDeterministicObjects(t *testing.T) {
	s, c := bucket(t)
	k := sinkkit.StartKafka(t, map[string]int32{"orders": 4})
	recs, want := records("orders", 100_000, 4, 1000)
	// The first 50k: 12 full objects and 500 records of the 13th per partition.
	k.Produce(t, recs[:50_000]...)
	cfg := sinkConfig("s3-b", "orders", s)
	tasks := k.StartTasks(t, Plugin(), "s3-b", cfg, 2)
	testkit.Eventually(t, 60*time.Second, "the 48 full objects of the first half", func() (bool, string) {
		n := len(objects(t, c, "s3-b"))
		return n == 48, fmt.Sprintf("%d objects", n)
	})
	stop(t, tasks)
	k.Produce(t, recs[50_000:]...)

	start := time.Now()
	tasks = k.StartTasks(t, Plugin(), "s3-a", sinkConfig("s3-a", "orders", s), 2)
	k.WaitCommitted(t, "s3-a", "orders", 120*time.Second)
	stop(t, tasks)
	t.Logf("uninterrupted delivery: %d records in %v", len(recs), time.Since(start))
	first := objects(t, c, "s3-a")
	checkObjects(t, first, want)

	tasks = k.StartTasks(t, Plugin(), "s3-b", cfg, 2)
	k.WaitCommitted(t, "s3-b", "orders", 120*time.Second)
	stop(t, tasks)
	second := objects(t, c, "s3-b")
	checkObjects(t, second, want)
	for name, b := range first {
		if sha256.Sum256(b) != sha256.Sum256(second[name]) {
			t.Fatalf("object %s differs between the runs", name)
		}
	}
}

// Tombstones: behavior.on.null.values=write keeps them as null lines at
// their place; with fail a tombstone is a bad record, which goes to the
// dead letter queue under errors.tolerance=all and fails the task naming
// its position under none.
func TestS3SinkTombstonesAndBadRecords(t *testing.T) {
	s, c := bucket(t)
	k := sinkkit.StartKafka(t, map[string]int32{"orders": 1})
	k.Produce(t,
		&kgo.Record{Topic: "orders", Key: []byte("a"), Value: []byte(`{"id":1}`)},
		&kgo.Record{Topic: "orders", Key: []byte("a")},
		&kgo.Record{Topic: "orders", Key: []byte("b"), Value: []byte(`{"id":2}`)})

	k.StartTasks(t, Plugin(), "nulls", sinkConfig("nulls", "orders", s, KeyFlushSize, "3", KeyNullValues, NullWrite), 1)
	k.WaitCommitted(t, "nulls", "orders", 60*time.Second)
	checkObjects(t, objects(t, c, "nulls"), map[string]string{"orders/partition=0/orders+0+0000000000.json": "{\"id\":1}\nnull\n{\"id\":2}\n"})

	cfg := sinkConfig("tolerant", "orders", s, KeyFlushSize, "2", KeyNullValues, NullFail, plugin.KeyErrorsTolerance, "all",
		plugin.KeyDLQTopicName, "orders-dlq", plugin.KeyDLQReplication, "1", plugin.KeyDLQHeaders, "true")
	k.StartTasks(t, Plugin(), "tolerant", cfg, 1)
	k.WaitCommitted(t, "tolerant", "orders", 60*time.Second)
	checkObjects(t, objects(t, c, "tolerant"), map[string]string{"orders/partition=0/orders+0+0000000000.json": "{\"id\":1}\n{\"id\":2}\n"})
	dl := k.Consume(t, "orders-dlq")
	if len(dl) != 1 || string(dl[0].Key) != "a" || dl[0].Value != nil {
		t.Fatalf("dead letter queue holds %v, want the tombstone", dl)
	}

	tasks := k.StartTasks(t, Plugin(), "strict", sinkConfig("strict", "orders", s, KeyNullValues, NullFail), 1)
	err := sinkkit.WaitFailed(t, tasks[0], 60*time.Second)
	if !strings.Contains(err.Error(), "record orders-0/1") || !strings.Contains(err.Error(), "behavior.on.null.values=fail") {
		t.Fatalf("task failed with %v, want the record's position (orders-0/1) and the reason", err)
	}
}

// A 10 s outage (the server killed, then started again on its folder)
// while records stream is retried through: every object ends in the
// bucket, exactly as without the outage.
func TestS3SinkRetriesThroughAnOutage(t *testing.T) {
	s, c := bucket(t)
	k := sinkkit.StartKafka(t, map[string]int32{"orders": 2})
	recs, want := records("orders", 20_000, 2, 1000)
	k.Produce(t, recs[:4000]...)
	k.StartTasks(t, Plugin(), "outage", sinkConfig("outage", "orders", s), 2)
	k.WaitCommitted(t, "outage", "orders", 60*time.Second)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	k.Produce(t, recs[4000:]...)
	time.Sleep(10*time.Second - time.Since(down)) // the outage itself, not a wait for a condition
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("server down for %v", time.Since(down))
	k.WaitCommitted(t, "outage", "orders", 60*time.Second)
	checkObjects(t, objects(t, c, "outage"), want)
}

// gzip objects hold the same lines; large objects go up in parts.
func TestS3SinkGzipAndMultipart(t *testing.T) {
	s, c := bucket(t)
	k := sinkkit.StartKafka(t, map[string]int32{"big": 1})
	pad := strings.Repeat("x", 100_000)
	var recs []*kgo.Record
	var lines []string
	for i := 0; i < 130; i++ {
		v := fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, pad)
		recs = append(recs, &kgo.Record{Topic: "big", Value: []byte(v)})
		lines = append(lines, v)
	}
	k.Produce(t, recs...)
	k.StartTasks(t, Plugin(), "gz", sinkConfig("gz", "big", s, KeyFlushSize, "65", KeyCompression, CompressionGzip), 1)
	k.StartTasks(t, Plugin(), "parts", sinkConfig("parts", "big", s, KeyFlushSize, "130", KeyPartSize, strconv.Itoa(5<<20)), 1)
	k.WaitCommitted(t, "gz", "big", 60*time.Second)
	k.WaitCommitted(t, "parts", "big", 60*time.Second)
	gz := objects(t, c, "gz")
	for name, start := range map[string]int{"big/partition=0/big+0+0000000000.json.gz": 0, "big/partition=0/big+0+0000000065.json.gz": 65} {
		r, err := gzip.NewReader(bytes.NewReader(gz[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := io.ReadAll(r)
		if string(b) != strings.Join(lines[start:start+65], "\n")+"\n" {
			t.Fatalf("%s holds %d bytes unzipped, not its records", name, len(b))
		}
	}
	if len(gz) != 2 {
		t.Fatalf("%d gzip objects, want 2", len(gz))
	}
	parts := objects(t, c, "parts")
	name := "big/partition=0/big+0+0000000000.json"
	if len(parts) != 1 || string(parts[name]) != strings.Join(lines, "\n")+"\n" {
		t.Fatalf("multipart: %d objects, %d bytes in %s", len(parts), len(parts[name]), name)
	}
	st, err := c.StatObject(context.Background(), "lake", "parts/"+name, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(st.ETag, "-3") {
		t.Fatalf("ETag %q, want a multipart upload of 3 parts", st.ETag)
	}
}
