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

package redis

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
	"github.com/conveyor-dev/conveyor/test/testkit/sinkkit"
)

const stringConverter = "org.apache.kafka.connect.storage.StringConverter"

// keyed returns n records of the workload the pipeline tests use: key
// k-<i mod keys> with value v-<i>, on partition (i mod keys) mod parts,
// then a tombstone for every 50th key. The expected content is every key
// not divisible by 50 at the value of its last record.
func keyed(topic string, n, keys int, parts int32) ([]*kgo.Record, map[string]string) {
	var out []*kgo.Record
	want := map[string]string{}
	for i := 0; i < n; i++ {
		k := i % keys
		key := "k-" + strconv.Itoa(k)
		out = append(out, &kgo.Record{Topic: topic, Partition: int32(k) % parts, Key: []byte(key), Value: []byte("v-" + strconv.Itoa(i))})
		want[key] = "v-" + strconv.Itoa(i)
	}
	for k := 0; k < keys; k += 50 {
		key := "k-" + strconv.Itoa(k)
		out = append(out, &kgo.Record{Topic: topic, Partition: int32(k) % parts, Key: []byte(key)})
		delete(want, key)
	}
	return out, want
}

func sinkConfig(name, topic string, r *servers.Redis, kv ...string) map[string]string {
	cfg := map[string]string{"name": name, "connector.class": "RedisSink", "topics": topic, "tasks.max": "2",
		"key.converter": stringConverter, "value.converter": stringConverter, KeyURL: r.URL()}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return cfg
}

// checkKeys compares every key of the server's database 0 with want.
func checkKeys(t *testing.T, r *servers.Redis, prefix string, want map[string]string) {
	t.Helper()
	c := r.Client()
	defer c.Close()
	ctx := context.Background()
	n, err := c.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != len(want) {
		t.Fatalf("the server holds %d keys, want exactly %d", n, len(want))
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, prefix+k)
	}
	wrong := 0
	for i := 0; i < len(keys); i += 5000 {
		batch := keys[i:min(i+5000, len(keys))]
		vals, err := c.MGet(ctx, batch...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range vals {
			if w := want[strings.TrimPrefix(batch[j], prefix)]; v != w {
				if wrong < 5 {
					t.Errorf("key %s = %v, want %s", batch[j], v, w)
				}
				wrong++
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d keys hold the wrong value", wrong)
	}
}

// The must-show on the sink's own: 100k records over 4 partitions and two
// tasks end as exactly the expected keys, each at the value of its last
// record, and tombstones deleted theirs; a second connector (a new group)
// delivering every record again leaves exactly the same keys.
func TestRedisSinkWritesTheLastValueOfEachKey(t *testing.T) {
	r := servers.For(t).Redis(servers.RedisOptions{})
	k := sinkkit.StartKafka(t, map[string]int32{"orders": 4})
	records, want := keyed("orders", 100_000, 60_000, 4)
	k.Produce(t, records...)
	start := time.Now()
	for _, name := range []string{"redis-a", "redis-b"} {
		tasks := k.StartTasks(t, Plugin(), name, sinkConfig(name, "orders", r, KeyPrefix, "o:"), 2)
		k.WaitCommitted(t, name, "orders", 120*time.Second)
		for _, tk := range tasks {
			if err := tk.Err(); err != nil {
				t.Fatalf("task failed: %v", err)
			}
			_ = tk.Stop(context.Background())
		}
		t.Logf("%s: %d records in %v", name, len(records), time.Since(start))
		checkKeys(t, r, "o:", want)
		start = time.Now()
	}
}

// A record without a key cannot be written: with errors.tolerance=all and
// a dead letter queue it goes there and every other record is written;
// with errors.tolerance=none the task fails naming the record's position.
func TestRedisSinkBadRecordDeadLetterQueueOrFailure(t *testing.T) {
	r := servers.For(t).Redis(servers.RedisOptions{})
	k := sinkkit.StartKafka(t, map[string]int32{"orders": 1})
	k.Produce(t,
		&kgo.Record{Topic: "orders", Key: []byte("a"), Value: []byte("1")},
		&kgo.Record{Topic: "orders", Value: []byte("no key")},
		&kgo.Record{Topic: "orders", Key: []byte("b"), Value: []byte("2")})

	cfg := sinkConfig("tolerant", "orders", r, plugin.KeyErrorsTolerance, "all",
		plugin.KeyDLQTopicName, "orders-dlq", plugin.KeyDLQReplication, "1", plugin.KeyDLQHeaders, "true")
	k.StartTasks(t, Plugin(), "tolerant", cfg, 1)
	k.WaitCommitted(t, "tolerant", "orders", 60*time.Second)
	checkKeys(t, r, "", map[string]string{"a": "1", "b": "2"})
	dl := k.Consume(t, "orders-dlq")
	if len(dl) != 1 || string(dl[0].Value) != "no key" {
		t.Fatalf("dead letter queue holds %d records (%v), want the record without a key", len(dl), dl)
	}
	headers := map[string]string{}
	for _, h := range dl[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	if headers["__connect.errors.offset"] != "1" || !strings.Contains(headers["__connect.errors.exception.message"], "no key") {
		t.Fatalf("dead letter headers %v, want offset 1 and the reason", headers)
	}

	tasks := k.StartTasks(t, Plugin(), "strict", sinkConfig("strict", "orders", r, KeyPrefix, "s:"), 1)
	err := sinkkit.WaitFailed(t, tasks[0], 60*time.Second)
	if !strings.Contains(err.Error(), "record orders-0/1") || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("task failed with %v, want the record's position (orders-0/1) and the reason", err)
	}
}

// A 10 s outage (the server killed, then started again on its
// append-only file) while records stream is retried through: every record
// ends in the server, none lost.
func TestRedisSinkRetriesThroughAnOutage(t *testing.T) {
	r := servers.For(t).Redis(servers.RedisOptions{Durable: true})
	k := sinkkit.StartKafka(t, map[string]int32{"orders": 2})
	records, want := keyed("orders", 20_000, 20_000, 2)
	k.Produce(t, records[:5000]...)
	k.StartTasks(t, Plugin(), "outage", sinkConfig("outage", "orders", r, KeyTimeout, "1000"), 2)
	k.WaitCommitted(t, "outage", "orders", 60*time.Second)
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	// The rest arrives while the server is down.
	k.Produce(t, records[5000:]...)
	time.Sleep(10*time.Second - time.Since(down)) // the outage itself, not a wait for a condition
	if err := r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("server down for %v", time.Since(down))
	k.WaitCommitted(t, "outage", "orders", 60*time.Second)
	checkKeys(t, r, "", want)
}
