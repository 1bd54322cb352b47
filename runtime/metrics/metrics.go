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

// Package metrics holds the Prometheus metrics of one worker.
//
// Names follow Kafka Connect's MBeans (connect-worker-metrics,
// source-task-metrics, sink-task-metrics, connector-task-metrics,
// connect-worker-rebalance-metrics) in snake_case with the prefix
// "kafka_connect_", so a dashboard reads the same words it reads for Apache
// Kafka Connect. Every worker owns its own *prometheus.Registry; nothing is
// registered in the global default registry, so several workers (tests,
// standalone mode) can live in one process.
//
// Per-task metrics carry the labels "connector" and "task". The task runners
// call a *Task obtained from Metrics.Task; a nil *Task is valid and records
// nothing, so runners work without metrics.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace is the prefix of every metric name.
const Namespace = "kafka_connect"

// Task states used as the "state" label of task counts; they match Kafka
// Connect's status strings.
const (
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StateFailed     = "FAILED"
	StateUnassigned = "UNASSIGNED"
	StateRestarting = "RESTARTING"
)

// States lists the task states in the order Kafka Connect reports them.
var States = []string{StateRunning, StatePaused, StateFailed, StateUnassigned, StateRestarting}

// batchBucketsMs are the histogram buckets of batch and commit times in
// milliseconds: 0.5 ms to 30 s.
var batchBucketsMs = []float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

var taskLabels = []string{"connector", "task"}

// Metrics is the set of metrics of one worker. Create it with New; it is
// safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	connectorCount *prometheus.GaugeVec // no labels beyond state-less; vec to allow reset
	taskCount      *prometheus.GaugeVec
	connTaskCount  *prometheus.GaugeVec

	rebalancesTotal prometheus.Counter
	rebalancing     prometheus.Gauge
	rebalanceTimeMs prometheus.Histogram
	rebalanceAvgMs  prometheus.Gauge
	rebalanceMaxMs  prometheus.Gauge
	rebalanceLastMs prometheus.Gauge
	sinceRebalance  prometheus.GaugeFunc
	leaderName      *prometheus.GaugeVec
	epoch           prometheus.Gauge
	heldOff         prometheus.Gauge
	heldOffWorkers  prometheus.Gauge

	taskRestarts *prometheus.CounterVec
	taskStarts   *prometheus.CounterVec

	sourcePoll      *prometheus.CounterVec
	sourceWrite     *prometheus.CounterVec
	sourceActive    *prometheus.GaugeVec
	pollBatchTime   *prometheus.HistogramVec
	sinkRead        *prometheus.CounterVec
	sinkSend        *prometheus.CounterVec
	putBatchTime    *prometheus.HistogramVec
	sinkLag         *prometheus.GaugeVec
	partitionCount  *prometheus.GaugeVec
	commitSuccess   *prometheus.CounterVec
	commitFailure   *prometheus.CounterVec
	commitTime      *prometheus.HistogramVec
	batchSize       *prometheus.HistogramVec
	recordErrors    *prometheus.CounterVec
	taskStatusGauge *prometheus.GaugeVec
	stalls          *stalls

	// task-error-metrics (Kafka Connect's KIP-298 group)
	recordFailures, recordsSkipped, retries, errorsLogged *prometheus.CounterVec
	dlqRequests, dlqFailures                              *prometheus.CounterVec
	shareRedelivered, sharePastLimit                      *prometheus.CounterVec
	lastErrorTime                                         *prometheus.GaugeVec

	mu       sync.Mutex
	restarts map[taskKey]int
	starts   map[taskKey]int
	// rebalance figures behind the avg/max/last gauges
	rebalances    int
	rebalanceSum  time.Duration
	rebalanceMax  time.Duration
	lastRebalance time.Time
	leader        string
}

type taskKey struct {
	connector string
	task      int
}

// New creates the metrics of one worker in a fresh registry, including the
// Go runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, restarts: map[taskKey]int{}, starts: map[taskKey]int{}}
	f := func(c prometheus.Collector) { reg.MustRegister(c) }

	m.connectorCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "connector_count", Help: "Number of connectors run by this worker."}, nil)
	m.taskCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "task_count", Help: "Number of tasks run by this worker, by state."}, []string{"state"})
	m.connTaskCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "connector_task_count", Help: "Number of tasks of a connector on this worker, by state."},
		[]string{"connector", "state"})
	m.rebalancesTotal = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
		Name: "completed_rebalances_total", Help: "Rebalances completed by this worker."})
	m.rebalancing = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "rebalancing", Help: "1 while this worker is rebalancing, else 0."})
	m.rebalanceTimeMs = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace,
		Name: "rebalance_time_ms", Help: "Time this worker spent rebalancing, in milliseconds.",
		Buckets: batchBucketsMs})
	m.rebalanceAvgMs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "rebalance_avg_time_ms", Help: "Average time of this worker's completed rebalances, in milliseconds."})
	m.rebalanceMaxMs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "rebalance_max_time_ms", Help: "Longest of this worker's completed rebalances, in milliseconds."})
	m.rebalanceLastMs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "rebalance_last_time_ms", Help: "Time of this worker's last completed rebalance, in milliseconds."})
	m.sinceRebalance = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "time_since_last_rebalance_ms", Help: "Time since this worker completed a rebalance, in milliseconds; -1 before the first."},
		m.timeSinceLastRebalance)
	m.leaderName = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "leader_name", Help: "1 with the group leader's REST URL in the label \"leader\" (Kafka Connect's leader-name)."},
		[]string{"leader"})
	m.epoch = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "epoch", Help: "The group generation of this worker's last rebalance."})
	m.heldOff = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "held_off", Help: "1 while the crash-loop guard holds this worker off (it keeps crashing: no work is assigned to it), else 0 (Conveyor)."})
	m.heldOffWorkers = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "held_off_workers", Help: "On the leader: workers the crash-loop guard holds off at the last assignment (Conveyor)."})
	m.taskRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "task_restarts_total", Help: "Restarts of a task on this worker."}, taskLabels)
	m.taskStarts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "task_starts_total", Help: "Starts of a task on this worker (a rebalance that keeps a task on its worker does not start it again)."}, taskLabels)

	m.sourcePoll = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "source_record_poll_total", Help: "Records polled from a source task (before transformation)."}, taskLabels)
	m.sourceWrite = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "source_record_write_total", Help: "Records a source task wrote to Kafka, acknowledged by the broker."}, taskLabels)
	m.sourceActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "source_record_active_count", Help: "Records a source task polled but whose offsets are not yet committable."}, taskLabels)
	m.pollBatchTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace,
		Name: "poll_batch_time_ms", Help: "Time a source task's poll took, in milliseconds.", Buckets: batchBucketsMs}, taskLabels)
	m.sinkRead = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "sink_record_read_total", Help: "Records a sink task read from Kafka."}, taskLabels)
	m.sinkSend = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "sink_record_send_total", Help: "Records a sink task handed to the connector's put."}, taskLabels)
	m.putBatchTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace,
		Name: "put_batch_time_ms", Help: "Time a sink task's put took, in milliseconds.", Buckets: batchBucketsMs}, taskLabels)
	m.sinkLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "sink_lag", Help: "Records between the high watermark and the committed offset, summed over a sink task's partitions."}, taskLabels)
	m.partitionCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "partition_count", Help: "Topic partitions assigned to a sink task."}, taskLabels)
	m.commitSuccess = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "offset_commit_success_total", Help: "Successful offset commits of a task."}, taskLabels)
	m.commitFailure = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "offset_commit_failure_total", Help: "Failed offset commits of a task (flush or commit failed)."}, taskLabels)
	m.commitTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace,
		Name: "offset_commit_time_ms", Help: "Time an offset commit (flush and commit) took, in milliseconds.", Buckets: batchBucketsMs}, taskLabels)
	m.batchSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace,
		Name: "batch_size", Help: "Records per poll (source) or put (sink) batch.",
		Buckets: []float64{1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000}}, taskLabels)
	m.recordErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "total_record_errors", Help: "Records of a task that failed (after any retries) in conversion, transformation or delivery."}, taskLabels)
	m.recordFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "total_record_failures", Help: "Failed attempts to process a record in a task, retried ones included."}, taskLabels)
	m.recordsSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "total_records_skipped", Help: "Records a task skipped after an error (errors.tolerance=all)."}, taskLabels)
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "total_retries", Help: "Retries of failed record operations in a task (errors.retry.timeout)."}, taskLabels)
	m.errorsLogged = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "total_errors_logged", Help: "Record errors a task wrote to the log (errors.log.enable)."}, taskLabels)
	m.dlqRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "deadletterqueue_produce_requests", Help: "Records a sink task wrote to its dead letter queue."}, taskLabels)
	m.dlqFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "deadletterqueue_produce_failures", Help: "Records a sink task failed to write to its dead letter queue."}, taskLabels)
	m.shareRedelivered = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "share_records_redelivered_total", Help: "Records a share-mode sink task received again (share group delivery count above 1)."}, taskLabels)
	m.sharePastLimit = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
		Name: "share_records_past_delivery_limit_total", Help: "Records a share-mode sink task gave up on at the share group's delivery limit (rejected; to the dead letter queue with errors.tolerance=all)."}, taskLabels)
	m.lastErrorTime = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "last_error_timestamp", Help: "When a task last met a record error, in milliseconds since the Unix epoch; 0 before the first."}, taskLabels)
	m.taskStatusGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "task_status", Help: "1 for the current state of a task, else 0."}, []string{"connector", "task", "state"})
	m.stalls = newStalls()

	for _, c := range []prometheus.Collector{
		m.connectorCount, m.taskCount, m.connTaskCount, m.rebalancesTotal, m.rebalancing,
		m.rebalanceTimeMs, m.rebalanceAvgMs, m.rebalanceMaxMs, m.rebalanceLastMs, m.sinceRebalance,
		m.leaderName, m.epoch, m.heldOff, m.heldOffWorkers, m.taskRestarts, m.taskStarts, m.sourcePoll, m.sourceWrite, m.sourceActive,
		m.pollBatchTime, m.sinkRead, m.sinkSend, m.putBatchTime, m.sinkLag, m.partitionCount,
		m.commitSuccess, m.commitFailure, m.commitTime, m.batchSize, m.recordErrors, m.taskStatusGauge,
		m.recordFailures, m.recordsSkipped, m.retries, m.errorsLogged, m.dlqRequests, m.dlqFailures, m.lastErrorTime,
		m.shareRedelivered, m.sharePastLimit,
		m.stalls.gauge,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	m.connectorCount.WithLabelValues().Set(0)
	for _, s := range States {
		m.taskCount.WithLabelValues(s).Set(0)
	}
	return m
}

// Registry returns the worker's registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (for /metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// SetConnectorCount sets the number of connectors this worker runs.
func (m *Metrics) SetConnectorCount(n int) { m.connectorCount.WithLabelValues().Set(float64(n)) }

// SetTaskCounts sets the number of tasks by state (keys as in States, e.g.
// "RUNNING"); states missing from counts are set to 0.
func (m *Metrics) SetTaskCounts(counts map[string]int) {
	for _, s := range States {
		m.taskCount.WithLabelValues(s).Set(float64(counts[s]))
	}
	for s, n := range counts {
		m.taskCount.WithLabelValues(s).Set(float64(n))
	}
}

// SetConnectorTaskCounts sets the task counts by state of one connector
// (connector-running-task-count and friends); states missing are set to 0.
func (m *Metrics) SetConnectorTaskCounts(connector string, counts map[string]int) {
	for _, s := range States {
		m.connTaskCount.WithLabelValues(connector, s).Set(float64(counts[s]))
	}
}

// RemoveConnector drops the per-connector series of a deleted connector.
func (m *Metrics) RemoveConnector(connector string) {
	m.connTaskCount.DeletePartialMatch(prometheus.Labels{"connector": connector})
}

// RebalanceStarted marks the start of a rebalance; call the returned
// function when it completed.
func (m *Metrics) RebalanceStarted() (completed func()) {
	start := time.Now()
	m.rebalancing.Set(1)
	return func() {
		d := time.Since(start)
		m.rebalancing.Set(0)
		m.rebalancesTotal.Inc()
		m.rebalanceTimeMs.Observe(ms(d))
		m.mu.Lock()
		m.rebalances++
		m.rebalanceSum += d
		m.rebalanceMax = max(m.rebalanceMax, d)
		m.lastRebalance = time.Now()
		avg, mx := m.rebalanceSum/time.Duration(m.rebalances), m.rebalanceMax
		m.mu.Unlock()
		m.rebalanceAvgMs.Set(ms(avg))
		m.rebalanceMaxMs.Set(ms(mx))
		m.rebalanceLastMs.Set(ms(d))
	}
}

func (m *Metrics) timeSinceLastRebalance() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastRebalance.IsZero() {
		return -1
	}
	return ms(time.Since(m.lastRebalance))
}

// SetLeader records the group leader (its REST URL) and the generation.
func (m *Metrics) SetLeader(leader string, generation int) {
	m.mu.Lock()
	old := m.leader
	m.leader = leader
	m.mu.Unlock()
	if old != leader {
		m.leaderName.DeleteLabelValues(old)
	}
	m.leaderName.WithLabelValues(leader).Set(1)
	m.epoch.Set(float64(generation))
}

// SetHeldOff records whether the crash-loop guard holds this worker off.
func (m *Metrics) SetHeldOff(on bool) {
	v := 0.0
	if on {
		v = 1
	}
	m.heldOff.Set(v)
}

// SetHeldOffWorkers records, on the leader, how many workers the crash-loop
// guard holds off.
func (m *Metrics) SetHeldOffWorkers(n int) { m.heldOffWorkers.Set(float64(n)) }

// TaskRestarted counts one restart of a task.
func (m *Metrics) TaskRestarted(connector string, task int) {
	m.taskRestarts.WithLabelValues(connector, strconv.Itoa(task)).Inc()
	m.mu.Lock()
	m.restarts[taskKey{connector, task}]++
	m.mu.Unlock()
}

// TaskStarted counts one start of a task on this worker.
func (m *Metrics) TaskStarted(connector string, task int) {
	m.taskStarts.WithLabelValues(connector, strconv.Itoa(task)).Inc()
	m.mu.Lock()
	m.starts[taskKey{connector, task}]++
	m.mu.Unlock()
}

// TaskStarts returns how often a task was started on this worker.
func (m *Metrics) TaskStarts(connector string, task int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.starts[taskKey{connector, task}]
}

// Restarts returns how often a task was restarted on this worker.
func (m *Metrics) Restarts(connector string, task int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restarts[taskKey{connector, task}]
}

// Task returns the recorder of one task's metrics. Calling it twice for the
// same task returns recorders of the same series. The series are resolved
// once here, so recording costs no label lookup.
func (m *Metrics) Task(connector string, task int) *Task {
	if m == nil {
		return nil
	}
	l := []string{connector, strconv.Itoa(task)}
	return &Task{
		m: m, labels: l,
		sourcePoll: m.sourcePoll.WithLabelValues(l...), sourceWrite: m.sourceWrite.WithLabelValues(l...),
		sourceActive: m.sourceActive.WithLabelValues(l...), pollBatchTime: m.pollBatchTime.WithLabelValues(l...),
		sinkRead: m.sinkRead.WithLabelValues(l...), sinkSend: m.sinkSend.WithLabelValues(l...),
		putBatchTime: m.putBatchTime.WithLabelValues(l...), sinkLag: m.sinkLag.WithLabelValues(l...),
		partitionCount: m.partitionCount.WithLabelValues(l...), commitSuccess: m.commitSuccess.WithLabelValues(l...),
		commitFailure: m.commitFailure.WithLabelValues(l...), commitTime: m.commitTime.WithLabelValues(l...),
		batchSize: m.batchSize.WithLabelValues(l...), recordErrors: m.recordErrors.WithLabelValues(l...),
		recordFailures: m.recordFailures.WithLabelValues(l...), recordsSkipped: m.recordsSkipped.WithLabelValues(l...),
		retries: m.retries.WithLabelValues(l...), errorsLogged: m.errorsLogged.WithLabelValues(l...),
		dlqRequests: m.dlqRequests.WithLabelValues(l...), dlqFailures: m.dlqFailures.WithLabelValues(l...),
		lastErrorTime:    m.lastErrorTime.WithLabelValues(l...),
		shareRedelivered: m.shareRedelivered.WithLabelValues(l...), sharePastLimit: m.sharePastLimit.WithLabelValues(l...),
		progress: m.stalls.start(connector, task),
	}
}

// RemoveTask drops the series of a task that no longer runs on this worker
// (its restart count is kept).
func (m *Metrics) RemoveTask(connector string, task int) {
	l := prometheus.Labels{"connector": connector, "task": strconv.Itoa(task)}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{
		m.sourcePoll.MetricVec, m.sourceWrite.MetricVec, m.sourceActive.MetricVec,
		m.pollBatchTime.MetricVec, m.sinkRead.MetricVec, m.sinkSend.MetricVec,
		m.putBatchTime.MetricVec, m.sinkLag.MetricVec, m.partitionCount.MetricVec,
		m.commitSuccess.MetricVec, m.commitFailure.MetricVec, m.commitTime.MetricVec,
		m.batchSize.MetricVec, m.recordErrors.MetricVec, m.taskStatusGauge.MetricVec,
		m.recordFailures.MetricVec, m.recordsSkipped.MetricVec, m.retries.MetricVec, m.errorsLogged.MetricVec,
		m.dlqRequests.MetricVec, m.dlqFailures.MetricVec, m.lastErrorTime.MetricVec, m.stalls.gauge.MetricVec,
		m.shareRedelivered.MetricVec, m.sharePastLimit.MetricVec,
	} {
		v.DeletePartialMatch(l)
	}
	m.stalls.remove(connector, task)
}

// Task records the metrics of one task. A nil *Task records nothing.
// Recorders obtained before RemoveTask keep updating series that are no
// longer exported; get a new one after a task restarts.
type Task struct {
	m      *Metrics
	labels []string

	sourcePoll, sourceWrite, sinkRead, sinkSend        prometheus.Counter
	commitSuccess, commitFailure, recordErrors         prometheus.Counter
	sourceActive, sinkLag, partitionCount              prometheus.Gauge
	pollBatchTime, putBatchTime, commitTime, batchSize prometheus.Observer

	recordFailures, recordsSkipped, retries, errorsLogged, dlqRequests, dlqFailures prometheus.Counter
	shareRedelivered, sharePastLimit                                                prometheus.Counter
	lastErrorTime                                                                   prometheus.Gauge

	progress *progress // work and progress, for stall detection (stall.go)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// SetState marks the task's current state in kafka_connect_task_status.
func (t *Task) SetState(state string) {
	if t == nil {
		return
	}
	for _, s := range States {
		v := 0.0
		if s == state {
			v = 1
		}
		t.m.taskStatusGauge.WithLabelValues(t.labels[0], t.labels[1], s).Set(v)
	}
	t.progress.running.Store(state == StateRunning)
}

// SourcePolled records one source poll of n records that took d.
func (t *Task) SourcePolled(n int, d time.Duration) {
	if t == nil {
		return
	}
	t.sourcePoll.Add(float64(n))
	t.pollBatchTime.Observe(ms(d))
	if n > 0 {
		t.batchSize.Observe(float64(n))
	}
}

// SourceWritten records n records acknowledged by the broker.
func (t *Task) SourceWritten(n int) {
	if t == nil {
		return
	}
	t.sourceWrite.Add(float64(n))
	t.progress.count.Add(int64(n))
}

// SetSourceActive sets the number of polled records whose offsets are not
// yet committable.
func (t *Task) SetSourceActive(n int) {
	if t == nil {
		return
	}
	t.sourceActive.Set(float64(n))
	t.progress.work.Store(int64(n))
}

// SinkRead records n records read from Kafka.
func (t *Task) SinkRead(n int) {
	if t == nil {
		return
	}
	t.sinkRead.Add(float64(n))
}

// SinkPut records one put of n records that took d.
func (t *Task) SinkPut(n int, d time.Duration) {
	if t == nil {
		return
	}
	t.sinkSend.Add(float64(n))
	t.putBatchTime.Observe(ms(d))
	t.batchSize.Observe(float64(n))
	t.progress.count.Add(int64(n))
}

// SetSinkLag sets the task's lag in records (high watermark minus
// committed offset, summed over its partitions) and, in the same step, the
// stall detector's work: the lag while the task's polls return records,
// none once they return nothing (see task.SinkRunner).
func (t *Task) SetSinkLag(lag, work int64) {
	if t == nil {
		return
	}
	t.sinkLag.Set(float64(lag))
	t.progress.work.Store(work)
}

// SetPartitionCount sets the number of partitions assigned to a sink task.
func (t *Task) SetPartitionCount(n int) {
	if t == nil {
		return
	}
	t.partitionCount.Set(float64(n))
}

// OffsetCommit records one offset commit that took d; err nil counts a
// success, otherwise a failure.
func (t *Task) OffsetCommit(d time.Duration, err error) {
	if t == nil {
		return
	}
	if err != nil {
		t.commitFailure.Inc()
	} else {
		t.commitSuccess.Inc()
	}
	t.commitTime.Observe(ms(d))
}

// RecordErrors counts n records that failed (after any retries) in
// conversion, transformation or delivery, and stamps the last error time.
func (t *Task) RecordErrors(n int) {
	if t == nil {
		return
	}
	t.recordErrors.Add(float64(n))
	t.lastErrorTime.Set(float64(time.Now().UnixMilli()))
}

// RecordFailure counts one failed attempt to process a record (a retried
// attempt counts too, as Kafka's total-record-failures).
func (t *Task) RecordFailure() {
	if t == nil {
		return
	}
	t.recordFailures.Inc()
}

// RecordRetry counts one retry of a failed record operation.
func (t *Task) RecordRetry() {
	if t == nil {
		return
	}
	t.retries.Inc()
}

// RecordSkipped counts one record skipped after an error.
func (t *Task) RecordSkipped() {
	if t == nil {
		return
	}
	t.recordsSkipped.Inc()
}

// ErrorLogged counts one record error written to the log.
func (t *Task) ErrorLogged() {
	if t == nil {
		return
	}
	t.errorsLogged.Inc()
}

// DeadLetterProduced counts one dead letter queue write: a request, and a
// failure when err is not nil.
func (t *Task) DeadLetterProduced(err error) {
	if t == nil {
		return
	}
	t.dlqRequests.Inc()
	if err != nil {
		t.dlqFailures.Inc()
	}
}

// ShareRedelivered counts records a share-mode sink task received again.
func (t *Task) ShareRedelivered(n int) {
	if t == nil || n == 0 {
		return
	}
	t.shareRedelivered.Add(float64(n))
}

// SharePastDeliveryLimit counts one record a share-mode sink task gave up
// on at the delivery limit.
func (t *Task) SharePastDeliveryLimit() {
	if t == nil {
		return
	}
	t.sharePastLimit.Inc()
}
