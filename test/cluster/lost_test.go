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
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestLostWorkerReadsUnassignedAndStallsAreReported: a worker SIGKILLed and
// never restarted leaves its tasks' status records reading RUNNING on it;
// every worker's REST answer and the workers' own task counts must say
// UNASSIGNED for them once the group rebalanced without it (within the
// session timeout), before the lost-worker delay moves them. Then a task
// whose writes the broker refuses (records in flight, none acknowledged)
// is reported stalled in its status and in kafka_connect_task_stalled, and
// no longer once the broker takes its records again. The operator turns
// the status note into the KafkaConnector's TasksStalled condition
// (StalledCondition, tested in controllers/kafkaconnector).
func TestLostWorkerReadsUnassignedAndStallsAreReported(t *testing.T) {
	const tasks = 6
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := harness.Options{SessionTimeout: 3 * time.Second, LostWorkerDelay: 10 * time.Second,
		Extra: []string{"task.stall.timeout.ms=3000"}}
	e := newEnv(t, opts)
	ws := e.start(ctx, "w1", "w2", "w3")
	if err := ws[0].REST.PutConnector(ctx, "idle", harness.RangeSource("idle", tasks)); err != nil {
		t.Fatal(err)
	}
	p, _ := e.waitPlacement(ctx, ws[0], 60*time.Second, "tasks balanced over w1, w2, w3", harness.Balanced(tasks, "w1", "w2", "w3"))
	lost := p.On("w3")

	if err := ws[2].Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var unassignedAfter time.Duration
	err := testkit.Until(ctx, 30*time.Second, "w3's tasks UNASSIGNED in every live worker's REST answer and counts", func(ctx context.Context) (bool, error) {
		for _, w := range ws[:2] {
			p, err := w.REST.Placement(ctx, "idle")
			if err != nil {
				return false, err
			}
			for k, ts := range p {
				if slices.Contains(lost, k) && (ts.State != "UNASSIGNED" || ts.WorkerID != "w3") {
					return false, fmt.Errorf("%s says %s=%s@%s", w.Name, k, ts.State, ts.WorkerID)
				}
				if !slices.Contains(lost, k) && ts.State != "RUNNING" {
					return false, fmt.Errorf("%s says %s=%s@%s", w.Name, k, ts.State, ts.WorkerID)
				}
			}
		}
		running := 0.0
		for _, w := range ws[:2] {
			m, err := w.REST.Metrics(ctx)
			if err != nil {
				return false, err
			}
			v, _ := harness.MetricValue(m, `kafka_connect_task_count{state="RUNNING"}`)
			running += v
		}
		if want := float64(tasks - len(lost)); running != want {
			return false, fmt.Errorf("the live workers count %v RUNNING tasks, REST %v", running, want)
		}
		unassignedAfter = time.Since(killed)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("w3's %d tasks read UNASSIGNED %s after the kill (session timeout %s, lost-worker delay %s)",
		len(lost), unassignedAfter.Round(100*time.Millisecond), opts.SessionTimeout, opts.LostWorkerDelay)
	if unassignedAfter >= opts.LostWorkerDelay {
		t.Errorf("the tasks read UNASSIGNED only %s after the kill, not before the lost-worker delay %s moved them", unassignedAfter, opts.LostWorkerDelay)
	}
	_, moved := e.waitPlacement(ctx, ws[0], 60*time.Second, "w3's tasks RUNNING on w1 and w2", harness.Balanced(tasks, "w1", "w2"))
	t.Logf("w3's tasks moved %s after the kill", moved.Sub(killed).Round(100*time.Millisecond))

	// A task whose records the broker refuses: the producer retries, the
	// records stay in flight, nothing is acknowledged.
	if _, err := e.broker.Admin.CreateTopic(ctx, 1, 1, nil, "stuck"); err != nil {
		t.Fatal(err)
	}
	tds, err := e.broker.Admin.ListTopics(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	stuckID := tds["stuck"].ID
	var refuse atomic.Bool
	refuse.Store(true)
	e.broker.Kafka.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		e.broker.Kafka.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		// Produce v13 names topics by id.
		if !refuse.Load() || len(req.Topics) != 1 || (req.Topics[0].Topic != "stuck" && req.Topics[0].TopicID != stuckID) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	stuck := map[string]string{"connector.class": "RangeSource", "topic": "stuck", "count": "10000000", "rate": "2000", "tasks.max": "1"}
	if err := ws[0].REST.PutConnector(ctx, "stuck", stuck); err != nil {
		t.Fatal(err)
	}
	var on string
	err = testkit.Until(ctx, 60*time.Second, "the stuck task reported stalled in REST and in kafka_connect_task_stalled", func(ctx context.Context) (bool, error) {
		st, err := ws[0].REST.Status(ctx, "stuck")
		if err != nil {
			return false, err
		}
		if len(st.Tasks) != 1 || st.Tasks[0].State != "RUNNING" {
			return false, fmt.Errorf("status %+v", st.Tasks)
		}
		on = st.Tasks[0].WorkerID
		w := e.c.Worker(on)
		if w == nil {
			return false, fmt.Errorf("%s not running", on)
		}
		m, err := w.REST.Metrics(ctx)
		if err != nil {
			return false, err
		}
		v, _ := harness.MetricValue(m, `kafka_connect_task_stalled{connector="stuck",task="0"}`)
		active, _ := harness.MetricValue(m, `kafka_connect_source_record_active_count{connector="stuck",task="0"}`)
		written, _ := harness.MetricValue(m, `kafka_connect_source_record_write_total{connector="stuck",task="0"}`)
		return v == 1 && st.Tasks[0].Stalled != "", fmt.Errorf("status %+v; on %s: kafka_connect_task_stalled=%v, records in flight %v, written %v", st.Tasks, on, v, active, written)
	})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := ws[0].REST.Status(ctx, "stuck")
	t.Logf("stalled on %s: %s", on, st.Tasks[0].Stalled)
	// The idle tasks have no work: none of them is stalled.
	if p, err := ws[0].REST.Status(ctx, "idle"); err == nil {
		for _, ts := range p.Tasks {
			if ts.Stalled != "" {
				t.Errorf("idle task %d reported stalled: %s", ts.ID, ts.Stalled)
			}
		}
	}
	refuse.Store(false)
	if err := testkit.Until(ctx, 60*time.Second, "the stall cleared once the broker takes the records", func(ctx context.Context) (bool, error) {
		st, err := ws[0].REST.Status(ctx, "stuck")
		if err != nil {
			return false, err
		}
		return len(st.Tasks) == 1 && st.Tasks[0].State == "RUNNING" && st.Tasks[0].Stalled == "", fmt.Errorf("status %+v", st.Tasks)
	}); err != nil {
		t.Fatal(err)
	}
}
