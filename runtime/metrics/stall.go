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
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stall detection: a task that is RUNNING and has work but makes no
// progress is a fault, as much as a FAILED one, yet its state says nothing.
// The task recorder already sees both sides, so it keeps them:
//   - work: a source's records in flight (polled, not yet acknowledged by
//     the broker: source-record-active-count), a sink's lag;
//   - progress: records acknowledged (source), records handed to the sink
//     (put); a task without work is idle, not stalled, and its clock starts
//     again when work arrives.
//
// The clock is read only when Stalled runs (every few seconds), so a stall
// is reported between the timeout and the timeout plus that interval.
//
// Stalled evaluates every task against a timeout and sets
// kafka_connect_task_stalled; the worker turns the answer into the tasks'
// status, so the operator and the REST API say it too.

// progress is one task run's work and progress. The hot paths only add
// to count and store work (atomics, no clock read); Stalled, which runs
// every few seconds, notices when count last moved.
type progress struct {
	connector string
	task      int
	count     atomic.Int64 // records acknowledged (source) or put (sink)
	work      atomic.Int64 // records in flight or lag
	running   atomic.Bool

	// Stalled's own state, under stalls.mu.
	seen    int64     // count at the last evaluation
	movedAt time.Time // when count last moved, or the task last had no work or was not running
}

// stalls holds the progress of the tasks this worker runs.
type stalls struct {
	mu    sync.Mutex
	tasks map[taskKey]*progress
	gauge *prometheus.GaugeVec
}

func newStalls() *stalls {
	return &stalls{tasks: map[taskKey]*progress{}, gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
		Name: "task_stalled", Help: "1 while a RUNNING task has work (records in flight, sink lag) but made no progress for task.stall.timeout.ms, else 0."},
		taskLabels)}
}

// start begins a task run's tracking (a restarted task starts afresh).
func (s *stalls) start(connector string, task int) *progress {
	p := &progress{connector: connector, task: task, movedAt: time.Now()}
	s.mu.Lock()
	s.tasks[taskKey{connector, task}] = p
	s.mu.Unlock()
	s.gauge.WithLabelValues(connector, strconv.Itoa(task)).Set(0)
	return p
}

func (s *stalls) remove(connector string, task int) {
	s.mu.Lock()
	delete(s.tasks, taskKey{connector, task})
	s.mu.Unlock()
}

// StalledTask is a task found stalled.
type StalledTask struct {
	Connector string
	Task      int
	// Since is how long the task has made no progress.
	Since time.Duration
	// Work is the records in flight (source) or the lag (sink).
	Work int64
}

// Stalled returns the RUNNING tasks that had work and no progress for at
// least timeout at now, sorted, and sets kafka_connect_task_stalled for
// every task; timeout <= 0 finds none.
func (m *Metrics) Stalled(timeout time.Duration, now time.Time) []StalledTask {
	s := m.stalls
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StalledTask
	for _, p := range s.tasks {
		count, work := p.count.Load(), p.work.Load()
		if count != p.seen || work <= 0 || !p.running.Load() {
			// Progress, or nothing to make progress on: the clock starts again.
			p.seen, p.movedAt = count, now
		}
		idle := now.Sub(p.movedAt)
		v := 0.0
		if timeout > 0 && idle >= timeout {
			v = 1
			out = append(out, StalledTask{Connector: p.connector, Task: p.task, Since: idle, Work: work})
		}
		s.gauge.WithLabelValues(p.connector, strconv.Itoa(p.task)).Set(v)
	}
	slices.SortFunc(out, func(a, b StalledTask) int {
		if a.Connector != b.Connector {
			if a.Connector < b.Connector {
				return -1
			}
			return 1
		}
		return a.Task - b.Task
	})
	return out
}
