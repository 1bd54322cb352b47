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

package worker

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// A connector's errors.* settings reach its tasks: a file sink reading JSON
// with errors.tolerance=all writes the good records and sends the bad ones
// to its dead letter queue; bad error settings are refused at creation,
// naming the key.
func TestConnectorErrorToleranceAndDeadLetterQueue(t *testing.T) {
	kafka := newKafka(t)
	w := startTestWorker(t, kafka, nil)
	out := filepath.Join(t.TempDir(), "out.txt")
	cfg := map[string]string{
		"name": "errs", "connector.class": "FileSink", "tasks.max": "1", "topics": "in", "file": out,
		"value.converter": "JsonConverter", "value.converter.schemas.enable": "false",
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "in-dlq",
		"errors.deadletterqueue.topic.replication.factor": "1", "errors.deadletterqueue.context.headers.enable": "true",
	}
	for key, bad := range map[string]string{"errors.tolerance": "most", "errors.deadletterqueue.topic.name": "in"} {
		c := map[string]string{}
		for k, v := range cfg {
			c[k] = v
		}
		c[key] = bad
		code, body := doAuth(t, w.token, http.MethodPost, w.url+"/connectors", map[string]any{"name": "errs", "config": c})
		if code != http.StatusBadRequest || !strings.Contains(string(body), key) {
			t.Fatalf("%s=%s: %d %s, want 400 naming the key", key, bad, code, body)
		}
	}
	createConnector(t, w, cfg)

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range []string{`{"n":1}`, `oops`, `{"n":2}`, `{"n":3`, `{"n":4}`} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 20*time.Second, "the 3 good records in the file", func() (bool, string) {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), "\n") == 3, string(b)
	})
	cons, err := kgo.NewClient(kgo.SeedBrokers(kafka), kgo.ConsumeTopics("in-dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bad := map[string]bool{}
	for len(bad) < 2 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == task.HeaderErrorConnector && string(h.Value) == "errs" {
					bad[string(r.Value)] = true
				}
			}
		})
	}
	if !bad["oops"] || !bad[`{"n":3`] {
		t.Fatalf("dead letters %v, want the two bad records with their context headers", bad)
	}
}
