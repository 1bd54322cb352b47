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
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

var (
	sentRE        = regexp.MustCompile(`(?m)^kafka_connect_sink_record_send_total\{connector="([^"]+)",task="(\d+)"\} (\S+)$`)
	redeliveredRE = regexp.MustCompile(`(?m)^kafka_connect_share_records_redelivered_total\{[^}]*\} (\S+)$`)
)

// Beyond partitions: a rate-limited file sink in share mode
// (consumer.group.type=share) with tasks.max 8 on a 2-partition topic runs
// 8 tasks on 4 worker processes, and all 8 write records (a consumer group
// would run 2). The limits endpoint says the share group, not the
// partition count, sets the bound.
//
// kfake: the share group heartbeat interval is lowered to 100 ms (a broker
// config in kfake, 5 s by default) so members join within the test's time.
func TestShareSinkEightTasksOnTwoPartitions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e := newEnv(t, harness.Options{}, kfake.SeedTopics(2, "events"),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "100"}))
	ws := e.start(ctx, "w1", "w2", "w3", "w4")
	recs := make([]*kgo.Record, 4000)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))}
	}
	// Both partitions get half: a share group assigns each partition to
	// some of its members (4 of 8 here), as Kafka's does.
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := harness.FileSink("events", outPath(e, "out.txt"), 8)
	cfg["consumer.group.type"], cfg["rate"] = "share", "20"
	if err := ws[0].REST.PutConnector(ctx, "wide", cfg); err != nil {
		t.Fatal(err)
	}
	p, _ := e.waitPlacement(ctx, ws[0], 40*time.Second, "8 tasks RUNNING on 4 workers", harness.Balanced(8, "w1", "w2", "w3", "w4"), "wide")
	t.Logf("placement: %s", p)
	var limits struct {
		Effective int    `json:"effective_tasks"`
		Reason    string `json:"reason"`
	}
	if _, err := ws[0].REST.Do(ctx, "GET", "/connectors/wide/limits", nil, &limits); err != nil {
		t.Fatal(err)
	}
	if limits.Effective != 8 || limits.Reason != "ShareGroup" {
		t.Fatalf("limits %+v, want 8 effective tasks, reason ShareGroup", limits)
	}
	sent := map[string]float64{}
	if err := testkit.Until(ctx, 30*time.Second, "all 8 tasks to write records", func(ctx context.Context) (bool, error) {
		for _, w := range ws {
			m, err := w.REST.Metrics(ctx)
			if err != nil {
				return false, err
			}
			for _, g := range sentRE.FindAllStringSubmatch(m, -1) {
				if g[1] == "wide" {
					v, _ := strconv.ParseFloat(g[3], 64)
					sent[g[2]] = v
				}
			}
		}
		for i := range 8 {
			if sent[strconv.Itoa(i)] == 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("%v; records written per task: %v", err, sent)
	}
	t.Logf("records written per task: %v", fmt.Sprint(sent))
}
