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

package autoscale

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

const (
	shareNS, shareCC, shareSink = "autoscale-share", "sh", "share"
	shareTopic                  = "sh1"
	// The share-mode sink reads one topic of 2 partitions with tasksMax 6: in share mode its
	// tasks share the partitions, so it runs 6 tasks, and its backlog trigger is capped at
	// 6 × lagThreshold, not 2 × lagThreshold as a consumer group's lag would be.
	shareTasks   = 6
	shareWorkers = 2 // minReplicas
	// 9000 records behind → ceil(min(9000, 6 × 1000) / 1000) = 6 workers. Capped by the
	// partitions it would be 2; uncapped 9 (the operator bounds maxReplicas by the tasks, 6).
	shareRecords = 9000
)

// TestShareSinkBacklogScalesPastThePartitions makes a share-mode FileSink on a 2-partition
// topic fall behind, and checks with real KEDA and the HPA that the workers go up from 2 to
// 6, past the partition count, on the share group's backlog the workers serve (GET
// /backlog/{c}, from DescribeShareGroupOffsets, read by the derived metrics-api trigger),
// never above the sink's 6 tasks, and back down to 2 once every record is written.
//
// How it falls behind: the sink writes 1 record a second per task (rate 1) while 9000
// records wait; setting rate 0 lets it drain at full speed.
func TestShareSinkBacklogScalesPastThePartitions(t *testing.T) {
	t.Parallel() // beside TestTableSourceBacklogScalesTheWorkers: its own namespace and HPA
	ctx := t.Context()
	start := time.Now()
	kc, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if _, err := kadm.NewClient(kc).CreateTopics(ctx, 2, 1, nil, shareTopic); err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, shareRecords)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: shareTopic, Value: fmt.Appendf(nil, `{"id":%d}`, i)}
	}
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.RunKubectl(ctx, "", "create", "namespace", shareNS); err != nil {
		t.Fatal(err)
	}
	m := clusterManifest(shareCC, shareWorkers, cluster.KafkaAddr, lagThreshold) +
		sinkManifest(shareSink, shareCC, []string{shareTopic}, shareTasks, sinkPath) + "    consumer.group.type: share\n"
	if _, err := cluster.RunKubectl(ctx, m, "apply", "-n", shareNS, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if _, err := cv.WaitConnectorsRunning(ctx, shareNS, 3*time.Minute, shareSink); err != nil {
		t.Fatal(err)
	}
	running := time.Now()
	t.Logf("the share sink ran %.1fs after the test began", running.Sub(start).Seconds())
	testkit.EventuallyNoError(t, time.Minute, fmt.Sprintf("the share sink's %d tasks on 2 partitions in status", shareTasks), func() error {
		var k v1alpha1.KafkaConnector
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: shareNS, Name: shareSink}, &k); err != nil {
			return err
		}
		if k.Status.EffectiveTasks != shareTasks {
			return fmt.Errorf("effectiveTasks %d", k.Status.EffectiveTasks)
		}
		return nil
	})

	// 1. Scale up past the 2 partitions to the sink's 6 tasks, and no further.
	peak := 0
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d Ready workers", shareTasks), func() error {
		all, _, err := cv.WorkerPods(ctx, shareNS, shareCC)
		if err != nil {
			return err
		}
		if peak = max(peak, len(all)); peak > shareTasks {
			t.Fatalf("the workers went up to %d, want %d (the share sink's tasks); HPA %s", peak, shareTasks, hpaState(ctx, shareNS))
		}
		pods, err := readyWorkers(ctx, shareNS, shareCC)
		if err != nil {
			return err
		}
		if len(pods) != shareTasks {
			return fmt.Errorf("%d Ready workers; HPA %s; %s; %s", len(pods), hpaState(ctx, shareNS), scaledObjectState(ctx, shareNS), backlogState(ctx, shareNS, shareCC, shareSink, pods))
		}
		return nil
	})
	scaleUp := time.Since(running)
	pods, err := readyWorkers(ctx, shareNS, shareCC)
	if err != nil {
		t.Fatal(err)
	}
	backlog := backlogState(ctx, shareNS, shareCC, shareSink, pods)
	t.Logf("%d workers %.1fs after the sink ran %d records behind; HPA %s; %s", shareTasks, scaleUp.Seconds(), shareRecords, hpaState(ctx, shareNS), backlog)

	// The 6 tasks run one on each worker, all on the 2 partitions.
	var cc v1alpha1.ConnectCluster
	if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: shareNS, Name: shareCC}, &cc); err != nil {
		t.Fatal(err)
	}
	token, err := cv.RestToken(ctx, &cc)
	if err != nil {
		t.Fatal(err)
	}
	spreadFrom := time.Now()
	testkit.EventuallyNoError(t, time.Minute, fmt.Sprintf("the %d share tasks to spread over the %d workers", shareTasks, shareTasks), func() error {
		per, err := tasksPerWorker(ctx, pods[0].Status.PodIP, token, shareSink)
		if err != nil {
			return err
		}
		n := 0
		for _, c := range per {
			n += c
		}
		if n != shareTasks || len(per) != shareTasks {
			return fmt.Errorf("%d running tasks on %d workers: %v", n, len(per), per)
		}
		return nil
	})

	spread := time.Since(spreadFrom)

	// 2. Drain at full speed: every record in the sink's file.
	if _, err := cluster.RunKubectl(ctx, "", "patch", "-n", shareNS, "kafkaconnector/"+shareSink, "--type=merge", "-p", `{"spec":{"config":{"rate":"0"}}}`); err != nil {
		t.Fatal(err)
	}
	drainFrom := time.Now()
	testkit.EventuallyNoError(t, 2*time.Minute, "every record in the share sink's file", func() error {
		if n := len(fileIDs(t, shareSink)); n != shareRecords {
			return fmt.Errorf("%d of %d records written", n, shareRecords)
		}
		return nil
	})
	drained := time.Now()

	// 3. Back down to minReplicas once the backlog the workers serve is 0.
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d workers", shareWorkers), func() error {
		all, _, err := cv.WorkerPods(ctx, shareNS, shareCC)
		if err != nil {
			return err
		}
		if len(all) != shareWorkers {
			return fmt.Errorf("%d workers; HPA %s", len(all), hpaState(ctx, shareNS))
		}
		return nil
	})
	scaleDown := time.Since(drained)
	ids := fileIDs(t, shareSink)
	for id := range ids {
		if id < 0 || id >= shareRecords {
			t.Fatalf("unexpected record id %d", id)
		}
	}
	fmt.Printf("conveyor-e2e: autoscale_share_peak_workers=%d\n", peak)
	fmt.Printf("conveyor-e2e: autoscale_share_partitions=%d\n", 2)
	fmt.Printf("conveyor-e2e: autoscale_share_backlog_records=%d\n", shareRecords)
	fmt.Printf("conveyor-e2e: autoscale_share_scale_up_s=%.1f\n", scaleUp.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_share_spread_s=%.1f\n", spread.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_share_drain_s=%.1f\n", drained.Sub(drainFrom).Seconds())
	fmt.Printf("conveyor-e2e: autoscale_share_scale_down_s=%.1f\n", scaleDown.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_share_missing=%d\n", shareRecords-len(ids))
	fmt.Printf("conveyor-e2e: autoscale_share_redelivered_lines=%d\n", fileLines(t, shareSink)-len(ids))
	fmt.Printf("conveyor-e2e: autoscale_share_test_s=%.1f\n", time.Since(start).Seconds())
}
