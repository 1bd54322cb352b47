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

package cluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
	"github.com/conveyor-dev/conveyor/test/testkit/sinkkit"
)

// The must-show of the Redis and S3 sinks: 100k records (60k keys, 1200
// of them tombstoned at the end) stream through both sinks on two worker
// processes; one worker is SIGKILLed while they write and started again
// (taking its tasks back as the same static member), the records it had
// not committed are delivered again, and in the end the servers hold
// exactly what the records give: each live key at its last value in Redis
// (the tombstoned ones deleted), and in S3 exactly the objects that
// flush.size=1000 cuts per partition, byte for byte.
func TestSinksRedeliverAfterWorkerSIGKILL(t *testing.T) {
	const parts, keys, total, flush = 4, 60_000, 100_000, 1000
	e := newEnv(t, harness.Options{})
	ctx := t.Context()
	rs := servers.For(t).Redis(servers.RedisOptions{})
	lake := startLake(t)
	e.createTopic(ctx, "orders", parts)

	// The records, and what they must give.
	var recs []*kgo.Record
	live := map[string]string{}
	lines := make([][]string, parts)
	add := func(k int, value []byte) {
		key, p := "k-"+strconv.Itoa(k), k%parts
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(p), Key: []byte(key), Value: value})
		if value == nil {
			delete(live, key)
			lines[p] = append(lines[p], "null")
			return
		}
		live[key] = string(value)
		lines[p] = append(lines[p], string(value))
	}
	for i := 0; i < total-keys/50; i++ {
		k := i % keys
		add(k, []byte(fmt.Sprintf(`{"id":%d,"k":%d}`, i, k)))
	}
	// 1200 tombstones, 300 per partition, so that every partition holds
	// 25k records: 25 full objects, none left open at the end.
	for m := 0; m < 1200; m++ {
		add(48*m+m%4, nil)
	}
	objects := map[string]string{}
	for p, ls := range lines {
		for start := 0; start < len(ls); start += flush {
			objects[fmt.Sprintf("orders/partition=%d/orders+%d+%010d.json", p, p, start)] = strings.Join(ls[start:min(start+flush, len(ls))], "\n") + "\n"
		}
	}

	ws := e.start(ctx, "w1", "w2")
	str := harness.StringConverter
	if err := ws[0].REST.PutConnector(ctx, "cache", map[string]string{"connector.class": "RedisSink", "topics": "orders", "tasks.max": "4",
		"key.converter": str, "value.converter": str, "redis.url": rs.URL(), "redis.key.prefix": "c:"}); err != nil {
		t.Fatal(err)
	}
	if err := ws[0].REST.PutConnector(ctx, "lake", lake.sinkConfig("orders", "value.converter.schemas.enable", "false",
		"flush.size", strconv.Itoa(flush), "behavior.on.null.values", "write")); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, ws[0], 60*time.Second, "the 8 sink tasks RUNNING", harness.AllRunning(8), "cache", "lake")

	rc := rs.Client()
	defer rc.Close()
	e.killMidway(ctx, recs, func() (bool, string) {
		n, _ := rc.DBSize(ctx).Result()
		objs := lake.count(ctx)
		return n >= 5000 && objs >= 5, fmt.Sprintf("%d keys, %d objects", n, objs)
	}, "orders", "cache", "lake")

	// Redis: exactly the live keys, each at its last value.
	if got, err := rc.DBSize(ctx).Result(); err != nil || int(got) != len(live) {
		t.Fatalf("Redis holds %d keys (%v), want exactly %d", got, err, len(live))
	}
	wrong := 0
	var names []string
	for k := range live {
		names = append(names, "c:"+k)
	}
	for i := 0; i < len(names); i += 5000 {
		batch := names[i:min(i+5000, len(names))]
		vals, err := rc.MGet(ctx, batch...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range vals {
			if v != live[strings.TrimPrefix(batch[j], "c:")] {
				wrong++
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d Redis keys hold a value other than their last record's", wrong)
	}

	// S3: exactly the expected objects, byte for byte.
	got := lake.objects(ctx, func(name string, b []byte) {
		if want := objects[name]; string(b) != want {
			t.Fatalf("object %s: %d bytes, want its %d bytes", name, len(b), len(want))
		}
	})
	if !maps.Equal(got, objectNames(objects)) {
		t.Fatalf("%d objects in the bucket, want exactly the %d that flush.size=%d cuts", len(got), len(objects), flush)
	}
	t.Logf("Redis: %d keys, each at its last value; S3: %d objects, byte for byte", len(live), len(got))
}

func objectNames[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// lake is an S3 server with the bucket "lake", for the S3 sink.
type lake struct {
	t  *testing.T
	s3 *servers.S3
	mc *minio.Client
}

func startLake(t *testing.T) *lake {
	t.Helper()
	s3 := servers.For(t).S3()
	mc, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(t.Context(), "lake", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	return &lake{t: t, s3: s3, mc: mc}
}

// sinkConfig is an S3Sink's config writing topic into the bucket's root
// with four tasks and JsonConverter values, with kv on top.
func (l *lake) sinkConfig(topic string, kv ...string) map[string]string {
	cfg := map[string]string{"connector.class": "S3Sink", "topics": topic, "tasks.max": "4",
		"key.converter": harness.StringConverter, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
		"s3.bucket.name": "lake", "store.url": l.s3.URL(), "aws.access.key.id": l.s3.Access, "aws.secret.access.key": l.s3.Secret,
		"topics.dir": ""}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return cfg
}

// count is the number of objects in the bucket.
func (l *lake) count(ctx context.Context) int {
	n := 0
	for o := range l.mc.ListObjects(ctx, "lake", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err == nil {
			n++
		}
	}
	return n
}

// objects reads every object of the bucket, hands each to check and
// returns their names.
func (l *lake) objects(ctx context.Context, check func(name string, b []byte)) map[string]bool {
	l.t.Helper()
	names := map[string]bool{}
	for info := range l.mc.ListObjects(ctx, "lake", minio.ListObjectsOptions{Recursive: true}) {
		if info.Err != nil {
			l.t.Fatal(info.Err)
		}
		o, err := l.mc.GetObject(ctx, "lake", info.Key, minio.GetObjectOptions{})
		if err != nil {
			l.t.Fatal(err)
		}
		b, err := io.ReadAll(o)
		o.Close()
		if err != nil {
			l.t.Fatalf("reading %s: %v", info.Key, err)
		}
		names[info.Key] = true
		check(info.Key, b)
	}
	return names
}

func (e *env) createTopic(ctx context.Context, topic string, parts int32) {
	e.t.Helper()
	if _, err := e.broker.Admin.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		e.t.Fatal(err)
	}
}

// killMidway is the sinks' SIGKILL scenario on a cluster of w1 and w2
// whose sink connectors are running: it produces the first 30% of recs,
// waits until writing says the sinks write, SIGKILLs w1, produces the
// rest, starts w1 again (the same static member, taking its tasks back)
// and waits until the connectors committed every record of topic.
func (e *env) killMidway(ctx context.Context, recs []*kgo.Record, writing func() (bool, string), topic string, connectors ...string) {
	t := e.t
	t.Helper()
	prod := sinkkit.NewProducer(t, e.broker.Addr)
	first := len(recs) * 3 / 10
	sinkkit.Produce(t, prod, recs[:first]...)
	testkit.Eventually(t, 60*time.Second, "the sinks writing", writing)
	if err := e.c.Worker("w1").Kill(); err != nil {
		t.Fatal(err)
	}
	_, at := writing()
	var committed []string
	for _, c := range connectors {
		resp, err := e.broker.Admin.FetchOffsets(ctx, sinkkit.Group(c))
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		resp.Each(func(o kadm.OffsetResponse) { sum += o.At })
		committed = append(committed, fmt.Sprintf("%s %d", c, sum))
	}
	t.Logf("w1 SIGKILLed with %s written, records committed: %s (the rest is delivered again)", at, strings.Join(committed, ", "))
	sinkkit.Produce(t, prod, recs[first:]...)
	if _, err := e.c.Start(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, c := range connectors {
		sinkkit.WaitCommitted(t, e.broker.Admin, c, topic, 120*time.Second)
	}
	t.Logf("every record committed by %s %v after the restart", strings.Join(connectors, " and "), time.Since(start).Round(time.Millisecond))
}
