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
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
)

// Objects also end on rotate.interval.ms of record time and on a schema
// change; the time partitioner files them under the record's hour.
func TestS3SinkRotationAndTimePartitioner(t *testing.T) {
	s, c := bucket(t)
	cfg := sinkConfig("rot", "orders", s, KeyFlushSize, "100", KeyRotateInterval, "60000", KeyPartitioner, PartitionerTime,
		KeyPathFormat, "dt=${yyyy}-${MM}-${dd}/hour=${HH}")
	task := plugintest.StartSinkTask(t, &Task{}, cfg)
	base := time.Date(2026, 12, 1, 9, 59, 0, 0, time.UTC)
	v1 := data.StructOf("v", data.F("id", data.Int64Schema))
	v2 := data.StructOf("v", data.F("id", data.Int64Schema), data.F("extra", data.OptionalStringSchema))
	rec := func(off int64, at time.Duration, schema *data.Schema) *plugin.SinkRecord {
		vals := []any{off}
		if len(schema.Fields) == 2 {
			vals = append(vals, nil)
		}
		st, err := data.NewStructValues(schema, vals)
		if err != nil {
			t.Fatal(err)
		}
		return &plugin.SinkRecord{Topic: "orders", Offset: off, Timestamp: base.Add(at), ValueSchema: schema, Value: st}
	}
	batch := []*plugin.SinkRecord{
		rec(0, 0, v1), rec(1, 30*time.Second, v1), // 09:59
		rec(2, 61*time.Second, v1), // 10:00:01: a new hour (and a minute on)
		rec(3, 62*time.Second, v2), // another schema
		rec(4, 63*time.Second, v2),
	}
	ctx := context.Background()
	if err := task.Put(ctx, batch); err != nil {
		t.Fatal(err)
	}
	offs := map[plugin.TopicPartition]int64{{Topic: "orders"}: 5}
	durable, err := task.PreCommit(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if got := durable[plugin.TopicPartition{Topic: "orders"}]; got > 3 {
		t.Fatalf("PreCommit lets offset %d be committed; records 3 and 4 are in the open object", got)
	}
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkObjects(t, objects(t, c, "rot"), map[string]string{
		"orders/dt=2026-12-01/hour=09/orders+0+0000000000.json": "{\"id\":0}\n{\"id\":1}\n",
		"orders/dt=2026-12-01/hour=10/orders+0+0000000002.json": "{\"id\":2}\n",
	})
	durable, _ = task.PreCommit(ctx, offs)
	if got := durable[plugin.TopicPartition{Topic: "orders"}]; got != 3 {
		t.Fatalf("PreCommit says %d, want 3 (the open object's start)", got)
	}
}

// Validation names the key and never shows the secret.
func TestS3SinkValidation(t *testing.T) {
	s, _ := bucket(t)
	good := sinkConfig("v", "orders", s)
	good["connector.class"] = Class
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range good {
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
		{with(KeySecretKey, "not-the-secret"), KeySecretKey, "SignatureDoesNotMatch"},
		{with(KeyBucket, "missing"), KeyBucket, "does not exist"},
		{with(KeyStoreURL, "ftp://x"), KeyStoreURL, "http://host:port"},
		{with(KeyAccessKey, "someone"), KeyAccessKey, "access key"},
		{with(KeyFlushSize, "0"), KeyFlushSize, ""},
		{with(KeyPartitioner, PartitionerTime, KeyPathFormat, "static"), KeyPathFormat, "${yyyy}"},
	} {
		res := plugin.ValidateConfig(context.Background(), Plugin(), tc.config)
		found := false
		for _, e := range res.Errors() {
			if strings.Contains(e.Message, s.Secret) || strings.Contains(e.Message, "not-the-secret") {
				t.Errorf("an error shows the secret: %s", e.Message)
			}
			if e.Name == tc.key && strings.Contains(e.Message, tc.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s=%s: errors %v, want one on %s mentioning %q", tc.key, tc.config[tc.key], res.Errors(), tc.key, tc.msg)
		}
	}
	if res := plugin.ValidateConfig(context.Background(), Plugin(), good); res.ErrorCount != 0 {
		t.Fatalf("a good config: %v", res.Errors())
	}
}

// format.class=bytes writes the values' bytes as they are, one per line,
// into .bin objects; a value that is no bytes or string is a bad record.
func TestS3SinkBytesFormat(t *testing.T) {
	s, c := bucket(t)
	task := plugintest.StartSinkTask(t, &Task{}, sinkConfig("raw", "t", s, KeyFormat, FormatBytes, KeyFlushSize, "2"))
	ctx := context.Background()
	if err := task.Put(ctx, []*plugin.SinkRecord{{Topic: "t", Offset: 0, Value: []byte(`{"b":1, "a":2}`)}, {Topic: "t", Offset: 1, Value: "text"}}); err != nil {
		t.Fatal(err)
	}
	if err := task.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkObjects(t, objects(t, c, "raw"), map[string]string{"t/partition=0/t+0+0000000000.bin": "{\"b\":1, \"a\":2}\ntext\n"})
	err := task.Put(ctx, []*plugin.SinkRecord{{Topic: "t", Offset: 2, Value: int64(3)}})
	if err == nil || !strings.Contains(err.Error(), "record t-0/2") || !strings.Contains(err.Error(), "format.class=bytes") {
		t.Fatalf("got %v, want an error naming the record and the format", err)
	}
}
