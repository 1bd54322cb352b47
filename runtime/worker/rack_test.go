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
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestSinkFetchesCarryRackFromEnv: a worker whose pod has CONVEYOR_RACK
// (the operator sets it from the node's zone) and no client.rack sends
// that rack with its sink consumers' fetches (KIP-392), as Kafka's
// rack-aware replica selector needs. kfake differs from Kafka here: it
// ignores the rack and never names a preferred read replica, so the test
// checks what the brokers receive, not where the fetches are served from.
func TestSinkFetchesCarryRackFromEnv(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kafka := c.ListenAddrs()[0]
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "rack-in")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	topicID := resp.ID

	var mu sync.Mutex
	racks := map[string]int{} // rack of each fetch that reads rack-in
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		f := req.(*kmsg.FetchRequest)
		for _, tp := range f.Topics {
			if tp.Topic == "rack-in" || tp.TopicID == topicID {
				mu.Lock()
				racks[f.Rack]++
				mu.Unlock()
				break
			}
		}
		return nil, nil, false
	})

	cfg := workerConfig(t, kafka, nil)
	cfg.ApplyEnv(func(k string) string {
		if k == workerconfig.EnvRack {
			return " eu-west-1c\n"
		}
		return ""
	})
	if cfg.ClientRack != "eu-west-1c" {
		t.Fatalf("client.rack %q after ApplyEnv, want eu-west-1c from %s", cfg.ClientRack, workerconfig.EnvRack)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := Start(sctx, Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	})
	if err := w.WaitJoined(sctx); err != nil {
		t.Fatal(err)
	}
	tw := &testWorker{Worker: w, url: "http://" + w.RESTAddr()}
	createConnector(t, tw, map[string]string{"name": "rack-sink", "connector.class": "FileSink", "topics": "rack-in",
		"file": filepath.Join(t.TempDir(), "out.txt"), "tasks.max": "2"})
	testkit.Eventually(t, 20*time.Second, "the sink consumers fetching rack-in", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return racks["eu-west-1c"] > 0, fmt.Sprint(racks)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(racks) != 1 {
		t.Fatalf("fetches of rack-in by rack: %v, want only eu-west-1c", racks)
	}
	t.Logf("fetches of rack-in by rack: %v", racks)
}
