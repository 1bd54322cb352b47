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

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit/certs"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

func startTask(t *testing.T, config map[string]string) *Task {
	t.Helper()
	task := &Task{}
	if err := task.Start(context.Background(), plugintest.NewSinkTaskContext(), config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

func putFlush(t *testing.T, task *Task, records ...*plugin.SinkRecord) {
	t.Helper()
	ctx := context.Background()
	if err := task.Put(ctx, records); err != nil {
		t.Fatal(err)
	}
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

var orderSchema = data.StructOf("order", data.F("id", data.Int64Schema), data.F("qty", data.Int32Schema),
	data.F("note", data.OptionalStringSchema), data.F("tags", data.ArrayOf(data.StringSchema)))

func order(offset int64, id int64, qty int32, note any) *plugin.SinkRecord {
	s, _ := data.NewStructValues(orderSchema, []any{id, qty, note, []any{"x", "y"}})
	return &plugin.SinkRecord{Topic: "orders", Offset: offset, KeySchema: data.Int64Schema, Key: id, ValueSchema: orderSchema, Value: s}
}

// Hash mode: each record replaces the key's hash with the struct's
// non-null fields (numbers as decimal text, nested values as JSON), a
// TTL applies to every written key, and a tombstone deletes the hash.
func TestRedisSinkHashModeWithTTL(t *testing.T) {
	r := servers.For(t).Redis(servers.RedisOptions{})
	task := startTask(t, map[string]string{KeyURL: r.URL(), KeyMode: ModeHash, KeyPrefix: "order:", KeyTTL: "60000"})
	putFlush(t, task, order(0, 7, 3, "first"), order(1, 8, 1, nil), order(2, 7, 4, nil))
	c := r.Client()
	defer c.Close()
	ctx := context.Background()
	got, err := c.HGetAll(ctx, "order:7").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["id"] != "7" || got["qty"] != "4" || got["tags"] != `["x","y"]` {
		t.Fatalf("order:7 = %v, want the last record's fields without the null note", got)
	}
	if ttl := c.PTTL(ctx, "order:8").Val(); ttl <= 50*time.Second || ttl > 60*time.Second {
		t.Fatalf("TTL of order:8 is %v, want about 60s", ttl)
	}
	putFlush(t, task, &plugin.SinkRecord{Topic: "orders", Offset: 3, KeySchema: data.Int64Schema, Key: int64(7)})
	if n := c.Exists(ctx, "order:7", "order:8").Val(); n != 1 {
		t.Fatalf("%d of order:7 and order:8 exist after the tombstone of 7, want only order:8", n)
	}
	// A value that is no struct cannot become a hash: the error names the record.
	err = task.Put(ctx, []*plugin.SinkRecord{{Topic: "orders", Partition: 2, Offset: 9, Key: "k", Value: "plain"}})
	if err == nil || !strings.Contains(err.Error(), "record orders-2/9") || !strings.Contains(err.Error(), "redis.mode=hash") {
		t.Fatalf("got %v, want an error naming the record and the mode", err)
	}
}

// Stream mode: XADD of key, value and the record's coordinates to the
// topic's stream; a tombstone adds an entry without a value.
func TestRedisSinkStreamMode(t *testing.T) {
	r := servers.For(t).Redis(servers.RedisOptions{})
	task := startTask(t, map[string]string{KeyURL: r.URL(), KeyMode: ModeStream, KeyStream: "events-${topic}"})
	putFlush(t, task, &plugin.SinkRecord{Topic: "orders", Partition: 1, Offset: 5, Key: "a", Value: "1"},
		&plugin.SinkRecord{Topic: "orders", Partition: 1, Offset: 6, Key: "a"})
	c := r.Client()
	defer c.Close()
	msgs, err := c.XRange(context.Background(), "events-orders", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Values["value"] != "1" || msgs[0].Values["offset"] != "5" || msgs[0].Values["partition"] != "1" ||
		msgs[1].Values["key"] != "a" || msgs[1].Values["value"] != nil {
		t.Fatalf("stream entries %v", msgs)
	}
}

// Validation names the key and never shows the password.
func TestRedisSinkValidation(t *testing.T) {
	r := servers.For(t).Redis(servers.RedisOptions{Password: "s3cret-pass"})
	base := map[string]string{"name": "c", "connector.class": Class, "topics": "orders"}
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		config   map[string]string
		key, msg string
	}{
		{with(KeyURL, "http://x:1"), KeyURL, "redis://"},
		{with(KeyURL, r.URL(), KeyPassword, "wrong-pass"), KeyPassword, "WRONGPASS"},
		{with(KeyURL, r.URL()), KeyPassword, "NOAUTH"},
		{with(KeyURL, r.URL(), KeyMode, "list"), KeyMode, "string"},
		{with(KeyURL, "redis://:s3cret-pass@127.0.0.1:1", KeyCluster, "true", KeyDatabase, "2"), KeyDatabase, "only database 0"},
		{with(KeyURL, r.URL(), KeyTLSCAFile, "/nonexistent"), KeyTLSCAFile, "rediss://"},
	} {
		res := plugin.ValidateConfig(context.Background(), Plugin(), tc.config)
		found := false
		for _, e := range res.Errors() {
			if strings.Contains(e.Message, "s3cret-pass") || strings.Contains(e.Message, "wrong-pass") {
				t.Errorf("an error shows the password: %s", e.Message)
			}
			if e.Name == tc.key && strings.Contains(e.Message, tc.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("config %v: errors %v, want one on %s mentioning %q", tc.config, res.Errors(), tc.key, tc.msg)
		}
	}
	if res := plugin.ValidateConfig(context.Background(), Plugin(), with(KeyURL, r.URL(), KeyPassword, "s3cret-pass")); res.ErrorCount != 0 {
		t.Fatalf("a good config: %v", res.Errors())
	}
}

// TLS: a rediss:// URL with redis.tls.ca.file reaches a server that speaks
// only TLS; without the CA the certificate is refused, naming the URL key.
func TestRedisSinkTLS(t *testing.T) {
	cert, key, err := certs.WriteSelfSigned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := servers.For(t).Redis(servers.RedisOptions{TLSCert: cert, TLSKey: key, TLSCA: cert})
	cfg := map[string]string{"name": "c", "connector.class": Class, "topics": "orders", KeyURL: r.URL(), KeyTLSCAFile: cert}
	if res := plugin.ValidateConfig(context.Background(), Plugin(), cfg); res.ErrorCount != 0 {
		t.Fatalf("TLS config: %v", res.Errors())
	}
	task := startTask(t, cfg)
	putFlush(t, task, &plugin.SinkRecord{Topic: "orders", Key: "tls", Value: "yes"})
	c := r.Client()
	defer c.Close()
	if v := c.Get(context.Background(), "tls").Val(); v != "yes" {
		t.Fatalf("tls = %q, want yes", v)
	}
	delete(cfg, KeyTLSCAFile)
	res := plugin.ValidateConfig(context.Background(), Plugin(), cfg)
	if errs := res.Errors(); len(errs) != 1 || errs[0].Name != KeyURL || !strings.Contains(errs[0].Message, "certificate") {
		t.Fatalf("without the CA: %v, want a certificate error on %s", errs, KeyURL)
	}
}

// Cluster mode: against a real three-node Redis Cluster, keys are routed
// to the nodes owning their slots; every key lands, spread over all nodes.
func TestRedisSinkClusterMode(t *testing.T) {
	rc := servers.For(t).RedisCluster(3)
	cfg := map[string]string{"name": "c", "connector.class": Class, "topics": "orders", KeyURL: rc.URL(), KeyCluster: "true"}
	if res := plugin.ValidateConfig(context.Background(), Plugin(), cfg); res.ErrorCount != 0 {
		t.Fatalf("cluster config: %v", res.Errors())
	}
	task := startTask(t, cfg)
	var recs []*plugin.SinkRecord
	for i := 0; i < 3000; i++ {
		recs = append(recs, &plugin.SinkRecord{Topic: "orders", Offset: int64(i), Key: "key-" + strconv.Itoa(i), Value: strconv.Itoa(i)})
	}
	putFlush(t, task, recs...)
	total := int64(0)
	for i, n := range rc.Nodes {
		c := n.Client()
		size := c.DBSize(context.Background()).Val()
		c.Close()
		if size == 0 {
			t.Errorf("node %d holds no key", i)
		}
		total += size
	}
	if total != 3000 {
		t.Fatalf("the nodes hold %d keys, want 3000", total)
	}
	// Without cluster mode, the first redirection fails the task with the fix.
	delete(cfg, KeyCluster)
	cfg[KeyURL] = rc.Nodes[0].URL()
	plain := startTask(t, cfg)
	ctx := context.Background()
	err := plain.Put(ctx, recs)
	if err == nil {
		err = plain.Flush(ctx, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "redis.cluster.enabled=true") {
		t.Fatalf("without cluster mode: %v, want the fix named", err)
	}
}
