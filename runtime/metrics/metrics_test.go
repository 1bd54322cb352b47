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

package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTaskMetricsExposition(t *testing.T) {
	m := New()
	tm := m.Task("files", 2)
	tm.SourcePolled(7, 3*time.Millisecond)
	tm.SourceWritten(5)
	tm.SinkRead(11)
	tm.SinkPut(9, 20*time.Millisecond)
	tm.SetSinkLag(42, 42)
	tm.OffsetCommit(time.Millisecond, nil)
	tm.OffsetCommit(time.Millisecond, errors.New("flush failed"))
	tm.SetState(StateRunning)
	tm.RecordFailure()
	tm.RecordFailure()
	tm.RecordRetry()
	tm.RecordErrors(1)
	tm.RecordSkipped()
	tm.ErrorLogged()
	tm.DeadLetterProduced(nil)
	tm.DeadLetterProduced(errors.New("broker gone"))
	m.SetConnectorCount(3)
	m.SetTaskCounts(map[string]int{StateRunning: 4, StateFailed: 1})
	m.TaskRestarted("files", 2)
	m.TaskRestarted("files", 2)
	m.RebalanceStarted()()

	if got := m.Restarts("files", 2); got != 2 {
		t.Fatalf("Restarts = %d, want 2", got)
	}
	if got := testutil.ToFloat64(m.sinkLag.WithLabelValues("files", "2")); got != 42 {
		t.Fatalf("sink_lag = %v, want 42", got)
	}

	text := scrape(m)
	for _, want := range []string{
		`kafka_connect_connector_count 3`,
		`kafka_connect_task_count{state="RUNNING"} 4`,
		`kafka_connect_task_count{state="FAILED"} 1`,
		`kafka_connect_task_count{state="PAUSED"} 0`,
		`kafka_connect_source_record_poll_total{connector="files",task="2"} 7`,
		`kafka_connect_source_record_write_total{connector="files",task="2"} 5`,
		`kafka_connect_sink_record_read_total{connector="files",task="2"} 11`,
		`kafka_connect_sink_record_send_total{connector="files",task="2"} 9`,
		`kafka_connect_put_batch_time_ms_count{connector="files",task="2"} 1`,
		`kafka_connect_poll_batch_time_ms_sum{connector="files",task="2"} 3`,
		`kafka_connect_offset_commit_success_total{connector="files",task="2"} 1`,
		`kafka_connect_offset_commit_failure_total{connector="files",task="2"} 1`,
		`kafka_connect_offset_commit_time_ms_count{connector="files",task="2"} 2`,
		`kafka_connect_sink_lag{connector="files",task="2"} 42`,
		`kafka_connect_task_restarts_total{connector="files",task="2"} 2`,
		`kafka_connect_task_status{connector="files",state="RUNNING",task="2"} 1`,
		`kafka_connect_completed_rebalances_total 1`,
		`kafka_connect_total_record_failures{connector="files",task="2"} 2`,
		`kafka_connect_total_retries{connector="files",task="2"} 1`,
		`kafka_connect_total_record_errors{connector="files",task="2"} 1`,
		`kafka_connect_total_records_skipped{connector="files",task="2"} 1`,
		`kafka_connect_total_errors_logged{connector="files",task="2"} 1`,
		`kafka_connect_deadletterqueue_produce_requests{connector="files",task="2"} 2`,
		`kafka_connect_deadletterqueue_produce_failures{connector="files",task="2"} 1`,
		`kafka_connect_last_error_timestamp{connector="files",task="2"} `,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}

	m.RemoveTask("files", 2)
	text = scrape(m)
	for _, gone := range []string{`kafka_connect_sink_lag{connector="files"`, `kafka_connect_total_records_skipped{connector="files"`, `kafka_connect_last_error_timestamp{connector="files"`} {
		if strings.Contains(text, gone) {
			t.Errorf("%s of a removed task is still exposed", gone)
		}
	}
}

func TestNilTaskIsNoop(t *testing.T) {
	var tm *Task
	tm.SourcePolled(1, time.Second)
	tm.SinkPut(1, time.Second)
	tm.SetSinkLag(1, 1)
	tm.OffsetCommit(time.Second, nil)
	tm.SetState(StateFailed)
	tm.RecordFailure()
	tm.RecordRetry()
	tm.RecordSkipped()
	tm.ErrorLogged()
	tm.DeadLetterProduced(nil)
	var m *Metrics
	if m.Task("x", 0) != nil {
		t.Fatal("nil Metrics must give a nil Task")
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.Task("c", 0).SinkRead(5)
	if n := testutil.ToFloat64(b.sinkRead.WithLabelValues("c", "0")); n != 0 {
		t.Fatalf("second worker sees %v records of the first", n)
	}
}

func TestRebalanceMetrics(t *testing.T) {
	m := New()
	if got := testutil.ToFloat64(m.sinceRebalance); got != -1 {
		t.Errorf("time_since_last_rebalance_ms before any = %v, want -1", got)
	}
	done := m.RebalanceStarted()
	if got := testutil.ToFloat64(m.rebalancing); got != 1 {
		t.Errorf("rebalancing during a rebalance = %v, want 1", got)
	}
	time.Sleep(20 * time.Millisecond)
	done()
	m.RebalanceStarted()()
	m.SetLeader("http://10.0.0.1:8083", 4)
	m.SetLeader("http://10.0.0.2:8083", 5)
	m.TaskStarted("c", 1)
	m.TaskStarted("c", 1)
	if got := m.TaskStarts("c", 1); got != 2 {
		t.Errorf("TaskStarts = %d, want 2", got)
	}
	if got := testutil.ToFloat64(m.rebalanceMaxMs); got < 20 {
		t.Errorf("rebalance_max_time_ms = %v, want >= 20", got)
	}
	if avg, mx := testutil.ToFloat64(m.rebalanceAvgMs), testutil.ToFloat64(m.rebalanceMaxMs); avg >= mx || avg <= 0 {
		t.Errorf("rebalance_avg_time_ms = %v with max %v: want 0 < avg < max", avg, mx)
	}
	if got := testutil.ToFloat64(m.rebalanceLastMs); got >= 20 {
		t.Errorf("rebalance_last_time_ms = %v, want the short second one", got)
	}
	if got := testutil.ToFloat64(m.sinceRebalance); got < 0 {
		t.Errorf("time_since_last_rebalance_ms = %v after a rebalance", got)
	}
	text := scrape(m)
	for _, want := range []string{
		`kafka_connect_completed_rebalances_total 2`,
		`kafka_connect_rebalancing 0`,
		`kafka_connect_leader_name{leader="http://10.0.0.2:8083"} 1`,
		`kafka_connect_epoch 5`,
		`kafka_connect_task_starts_total{connector="c",task="1"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %s", want)
		}
	}
	if strings.Contains(text, "10.0.0.1") {
		t.Error("the former leader is still exported")
	}
}

// scrape returns m's exposition, as GET /metrics serves it.
func scrape(m *Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}
