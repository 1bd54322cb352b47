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
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/localcluster/kafkafault"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestAutoscaleWithAnUnreadableSink: KEDA may not read one sink's consumer group (the
// broker answers KEDA's offset reads of group connect-sink-d with
// GROUP_AUTHORIZATION_FAILED, as an ACL that does not grant KEDA's principal DESCRIBE on
// the group would; the sinks' own consumers read it as usual). The other sink's lag must
// still scale the workers, to exactly its own need: not held at the minimum (one
// unreadable trigger failing the whole composite, as before), not raised by the
// unreadable sink's cap. The ConnectCluster's Autoscaling condition names the unreadable
// triggers and their connector. Once KEDA may read the group again, its lag counts too.
//
// Figures: sink c reads c1 and c2 (2 partitions each) with tasksMax 3, lag 4000 → capped
// at 3 × 1000; sink d reads d1 (2 partitions) with tasksMax 2, lag 3000 → capped at 2000.
// Unreadable d counts 0: 3000 → 3 workers. Readable: 5000 → 5 (the tasks' total, 5).
func TestAutoscaleWithAnUnreadableSink(t *testing.T) {
	const (
		ns, name       = "autoscale-blind", "blind"
		wantBlind      = 3
		wantReadable   = 5
		perTopicC, nD  = 2000, 3000
		tasksC, tasksD = 3, 2
	)
	ctx := t.Context()
	if err := cluster.SetKafkaFaults(ctx, kafkafault.Fault{Request: "OffsetFetch", Group: "connect-sink-d", MaxVersion: ptr.To[int16](7), Error: "GROUP_AUTHORIZATION_FAILED"}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.SetKafkaFaults(context.Background()) }()

	kc, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "c1", "c2", "d1"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for topic, n := range map[string]int{"c1": perTopicC, "c2": perTopicC, "d1": nD} {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":%d}`, i)})
		}
	}
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.RunKubectl(ctx, "", "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = cluster.RunKubectl(context.Background(), "", "delete", "namespace", ns, "--wait=false") }()
	m := clusterManifest(name, 1, cluster.KafkaAddr, lagThreshold) +
		sinkManifest("sink-c", name, []string{"c1", "c2"}, tasksC, sinkPath) + sinkManifest("sink-d", name, []string{"d1"}, tasksD, sinkPath)
	if _, err := cluster.RunKubectl(ctx, m, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if _, err := cv.WaitConnectorsRunning(ctx, ns, 3*time.Minute, "sink-c", "sink-d"); err != nil {
		t.Fatal(err)
	}
	running := time.Now()

	// 1. Sink c alone scales the workers: exactly 3, never the 5 that d's cap would add.
	peak := 0
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d Ready workers from sink c's lag alone", wantBlind), func() error {
		all, _, err := cv.WorkerPods(ctx, ns, name)
		if err != nil {
			return err
		}
		if peak = max(peak, len(all)); peak > wantBlind {
			t.Fatalf("the workers went up to %d, want %d: the unreadable sink added workers; HPA %s", peak, wantBlind, hpaState(ctx, ns))
		}
		pods, err := readyWorkers(ctx, ns, name)
		if err != nil {
			return err
		}
		if len(pods) != wantBlind {
			return fmt.Errorf("%d Ready workers; HPA %s", len(pods), hpaState(ctx, ns))
		}
		return nil
	})
	t.Logf("%d workers %.1fs after the sinks ran, sink d unreadable; HPA %s", wantBlind, time.Since(running).Seconds(), hpaState(ctx, ns))
	testkit.Consistently(t, 8*time.Second, fmt.Sprintf("the HPA to keep %d workers", wantBlind), func() (bool, string) {
		hpa, err := theHPA(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		return hpa.Status.DesiredReplicas == wantBlind, fmt.Sprintf("HPA desires %d workers, want %d: %s", hpa.Status.DesiredReplicas, wantBlind, hpaState(ctx, ns))
	})

	// 2. The status names the unreadable triggers and their connector.
	var cond metav1.Condition
	testkit.EventuallyNoError(t, 3*time.Minute, "the Autoscaling condition to name sink d's trigger", func() error {
		var cc v1alpha1.ConnectCluster
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cc); err != nil {
			return err
		}
		i := slices.IndexFunc(cc.Status.Conditions, func(c metav1.Condition) bool { return c.Type == v1alpha1.ConnectClusterAutoscaling })
		if i < 0 {
			return fmt.Errorf("no Autoscaling condition in %v", cc.Status.Conditions)
		}
		cond = cc.Status.Conditions[i]
		if cond.Reason != v1alpha1.ReasonTriggersUnreadable || !strings.Contains(cond.Message, "lag_sink_d__d1 (connector sink-d, topic d1") {
			return fmt.Errorf("Autoscaling=%s %s: %s", cond.Status, cond.Reason, cond.Message)
		}
		if strings.Contains(cond.Message, "sink-c") {
			t.Fatalf("the condition names the readable sink c: %s", cond.Message)
		}
		return nil
	})
	t.Logf("Autoscaling=%s %s: %s", cond.Status, cond.Reason, cond.Message)

	// 3. KEDA may read the group again: sink d's lag counts, 5 workers.
	if err := cluster.SetKafkaFaults(ctx); err != nil {
		t.Fatal(err)
	}
	lifted := time.Now()
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d Ready workers once sink d is readable", wantReadable), func() error {
		pods, err := readyWorkers(ctx, ns, name)
		if err != nil {
			return err
		}
		if len(pods) != wantReadable {
			return fmt.Errorf("%d Ready workers; HPA %s", len(pods), hpaState(ctx, ns))
		}
		return nil
	})
	fmt.Printf("conveyor-e2e: autoscale_unreadable_scale_up_s=%.1f\n", time.Since(running).Seconds())
	fmt.Printf("conveyor-e2e: autoscale_readable_again_s=%.1f\n", time.Since(lifted).Seconds())
}
