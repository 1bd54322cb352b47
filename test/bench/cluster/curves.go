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

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/bench/benchkit"
	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// workerCurve measures one conveyor-worker process at each size of
// -worker-sizes tasks: half RangeSources (one task each, 200-byte records,
// each to a topic of its own) and half FileSinks (one task each) reading
// them. Idle: every source has written its 10 records, every sink has
// them, nothing flows. Under load: the sources are reconfigured to write
// -worker-rate records per second each, without end, and the sinks follow.
// In each state, after -settle, the worker's CPU time over -window and its
// VmRSS at the window's end, then its heap profile (the live heap after a
// collection) into the output folder as worker_heap_{idle,load}_N.pprof.
// Four curves: RSS and CPU (millicores), idle and under load, each with its
// cost per task.
func workerCurve(ctx context.Context, bin, dir string) error {
	sizes, err := parseSizes(*workerSizes)
	if err != nil {
		return fmt.Errorf("-worker-sizes: %w", err)
	}
	rss := benchkit.Curve{Name: "worker_rss_mb_per_task", X: "tasks on one worker", Y: "VmRSS (MiB), idle", Per: 1}
	cpu := benchkit.Curve{Name: "worker_cpu_millicores_per_task", X: "tasks on one worker", Y: "CPU (millicores), idle", Per: 1}
	loadRSS := benchkit.Curve{Name: "worker_load_rss_mb_per_task", X: "tasks on one worker", Y: fmt.Sprintf("VmRSS (MiB), %g records/s per source", *workerRate), Per: 1}
	loadCPU := benchkit.Curve{Name: "worker_load_cpu_millicores_per_task", X: "tasks on one worker", Y: fmt.Sprintf("CPU (millicores), %g records/s per source", *workerRate), Per: 1}
	for _, n := range sizes {
		m, err := measureWorker(ctx, bin, filepath.Join(dir, fmt.Sprintf("worker-%d", n)), n)
		if err != nil {
			return fmt.Errorf("worker curve at %d tasks: %w", n, err)
		}
		logf("worker curve, %d tasks: idle %.1f MiB %.0f millicores; load %.1f MiB %.0f millicores, %.0f records/s into the sinks' files; under load %.1f records per source poll, %.0f source records in flight at the end",
			n, m.idleRSS, m.idleCPU, m.loadRSS, m.loadCPU, m.loadRecords, m.loadBatch, m.loadInFlight)
		rss.Add(float64(n), m.idleRSS)
		cpu.Add(float64(n), m.idleCPU)
		loadRSS.Add(float64(n), m.loadRSS)
		loadCPU.Add(float64(n), m.loadCPU)
	}
	var errs []error
	for _, c := range []*benchkit.Curve{&rss, &cpu, &loadRSS, &loadCPU} {
		errs = append(errs, c.Report())
	}
	return errors.Join(errs...)
}

type workerFigures struct {
	idleRSS, idleCPU, loadRSS, loadCPU float64
	loadRecords                        float64 // lines the sinks wrote per second over -settle and -window
	// loadBatch is the sources' mean poll batch over -window (records);
	// loadInFlight the source records polled and not yet committable at
	// its end, summed over the sources: what the worker holds grows with
	// them when it waits for CPU.
	loadBatch, loadInFlight float64
}

func measureWorker(ctx context.Context, bin, dir string, n int) (workerFigures, error) {
	var f workerFigures
	b, err := harness.StartBroker()
	if err != nil {
		return f, err
	}
	defer b.Close()
	profile := filepath.Join(dir, "worker.heap")
	c, err := harness.NewCluster(harness.Options{Binary: bin, Dir: dir, Bootstrap: b.Addr,
		SessionTimeout: *session, HeartbeatInterval: *heartbeat, LostWorkerDelay: *lostDelay,
		Args: func(string) []string { return []string{"--heapprofile", profile} }})
	if err != nil {
		return f, err
	}
	defer c.Close()
	w, err := c.Start(ctx, "w1")
	if err != nil {
		return f, withLogs(c, err)
	}
	pairs := n / 2
	topic := func(i int) string { return fmt.Sprintf("curve-%04d", i) }
	out := func(i int) string { return filepath.Join(dir, topic(i)+".out") }
	source := func(i int, count, rate string) map[string]string {
		cfg := harness.RangeSource(topic(i), 1)
		cfg["count"], cfg["rate"], cfg["record.size"], cfg["poll.interval.ms"] = count, rate, "200", "100"
		return cfg
	}
	err = forEach(ctx, 2*pairs, func(i int) error {
		if i%2 == 0 {
			return w.REST.PutConnector(ctx, "src-"+topic(i/2), source(i/2, "10", "0"))
		}
		return w.REST.PutConnector(ctx, "sink-"+topic(i/2), harness.FileSink(topic(i/2), out(i/2), 1))
	})
	if err != nil {
		return f, withLogs(c, err)
	}
	if _, _, err := w.REST.WaitPlacement(ctx, 5*time.Minute, fmt.Sprintf("%d tasks RUNNING", 2*pairs), harness.AllRunning(2*pairs)); err != nil {
		return f, withLogs(c, err)
	}
	err = testkit.Until(ctx, 3*time.Minute, "every sink wrote its source's 10 records", func(context.Context) (bool, error) {
		for i := range pairs {
			if lines(out(i)) < 10 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return f, withLogs(c, err)
	}
	if f.idleRSS, f.idleCPU, err = window(w.Pid()); err != nil {
		return f, err
	}
	if err := heapProfile(ctx, w.Pid(), profile, fmt.Sprintf("worker_heap_idle_%d.pprof", n)); err != nil {
		return f, err
	}

	// Under load: the same sources, writing without end.
	err = forEach(ctx, pairs, func(i int) error {
		return w.REST.PutConnector(ctx, "src-"+topic(i), source(i, "1000000000", strconv.FormatFloat(*workerRate, 'f', -1, 64)))
	})
	if err != nil {
		return f, withLogs(c, err)
	}
	if _, _, err := w.REST.WaitPlacement(ctx, 5*time.Minute, fmt.Sprintf("%d tasks RUNNING after the reconfiguration", 2*pairs), harness.AllRunning(2*pairs)); err != nil {
		return f, withLogs(c, err)
	}
	count := func() int {
		total := 0
		for i := range pairs {
			total += lines(out(i))
		}
		return total
	}
	before := count()
	at := time.Now()
	var polls0, polled0 float64
	if f.loadRSS, f.loadCPU, err = windowThen(w.Pid(), func() {
		if m, err := w.REST.Metrics(ctx); err == nil {
			polls0, polled0 = sourceSum(m, "kafka_connect_batch_size_count"), sourceSum(m, "kafka_connect_batch_size_sum")
		}
	}); err != nil {
		return f, err
	}
	f.loadRecords = float64(count()-before) / time.Since(at).Seconds()
	if m, err := w.REST.Metrics(ctx); err == nil {
		if polls := sourceSum(m, "kafka_connect_batch_size_count") - polls0; polls > 0 {
			f.loadBatch = (sourceSum(m, "kafka_connect_batch_size_sum") - polled0) / polls
		}
		f.loadInFlight = sourceSum(m, "kafka_connect_source_record_active_count")
	}
	return f, heapProfile(ctx, w.Pid(), profile, fmt.Sprintf("worker_heap_load_%d.pprof", n))
}

// heapProfile has the worker (started with --heapprofile path) write its
// heap profile and moves it into the output folder under name.
func heapProfile(ctx context.Context, pid int, path, name string) error {
	out, err := benchkit.OutDir()
	if err != nil {
		return err
	}
	os.Remove(path)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("asking the worker for its heap profile: %w", err)
	}
	err = testkit.Until(ctx, time.Minute, "the worker wrote its heap profile "+path, func(context.Context) (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, name), b, 0o644)
}

// window waits -settle, then returns the process's CPU use over -window
// (millicores) and its VmRSS (MiB) at the end.
func window(pid int) (rssMB, millicores float64, err error) {
	return windowThen(pid, func() {})
}

// windowThen is window, calling atStart as the window begins.
func windowThen(pid int, atStart func()) (rssMB, millicores float64, err error) {
	time.Sleep(*settle)
	atStart()
	cpu0, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	time.Sleep(*windowLen)
	cpu1, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return 0, 0, err
	}
	millicores = (cpu1 - cpu0) / time.Since(t0).Seconds() * 1000
	rssMB, err = benchkit.VmRSSMB(pid)
	return rssMB, millicores, err
}

// sourceSum sums a metric's samples of the source connectors (src-...) in
// a Prometheus exposition.
func sourceSum(exposition, metric string) float64 {
	total := 0.0
	for l := range strings.SplitSeq(exposition, "\n") {
		if rest, ok := strings.CutPrefix(l, metric+`{connector="src-`); ok {
			if i := strings.LastIndexByte(rest, ' '); i >= 0 {
				v, _ := strconv.ParseFloat(rest[i+1:], 64)
				total += v
			}
		}
	}
	return total
}

// lines counts the newlines of a file (0 when it does not exist yet).
func lines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// forEach runs fn(0..n-1), eight at a time, and joins their errors.
func forEach(ctx context.Context, n int, fn func(int) error) error {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// rebalanceCurve measures, at each size of -rebalance-sizes tasks (RangeSource
// connectors of 10 tasks each, idle once their records are written) on 3
// workers, the time until every task is RUNNING again after a worker
// joins (a 4th starts; until the 4 are balanced), leaves (the 4th gets
// SIGTERM; until its tasks run on the others) and crashes (w3 gets
// SIGKILL; until its tasks run on the others, which waits the session
// timeout and the lost-worker delay first). One curve per event, each with
// its seconds per 1000 tasks; rebalance_s_per_1000_tasks is the largest of
// the three.
func rebalanceCurve(ctx context.Context, bin, dir string) error {
	sizes, err := parseSizes(*rebalanceSizes)
	if err != nil {
		return fmt.Errorf("-rebalance-sizes: %w", err)
	}
	events := []string{"join", "leave", "crash"}
	curves := map[string]*benchkit.Curve{}
	for _, e := range events {
		curves[e] = &benchkit.Curve{Name: "rebalance_" + e + "_s_per_1000_tasks", X: "tasks on 3 workers", Y: "seconds until every task RUNNING after a " + e, Per: 1000}
	}
	for _, n := range sizes {
		took, err := measureRebalance(ctx, bin, filepath.Join(dir, fmt.Sprintf("rebalance-%d", n)), n)
		if err != nil {
			return fmt.Errorf("rebalance curve at %d tasks: %w", n, err)
		}
		logf("rebalance curve, %d tasks: join %s, leave %s, crash %s", n, took["join"], took["leave"], took["crash"])
		for _, e := range events {
			curves[e].Add(float64(n), took[e].Seconds())
		}
	}
	var errs []error
	worst := math.Inf(-1)
	for _, e := range events {
		errs = append(errs, curves[e].Report())
		worst = max(worst, curves[e].Slope()*1000)
	}
	report("rebalance_s_per_1000_tasks", worst)
	return errors.Join(errs...)
}

func measureRebalance(ctx context.Context, bin, dir string, n int) (map[string]time.Duration, error) {
	const perConnector = 10
	if n%perConnector != 0 {
		return nil, fmt.Errorf("%d tasks is not a multiple of %d", n, perConnector)
	}
	b, c, err := newCluster(bin, dir)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	defer c.Close()
	three := []string{"w1", "w2", "w3"}
	ws, err := c.StartAll(ctx, three...)
	if err != nil {
		return nil, withLogs(c, err)
	}
	if err := harness.CreateConnectors(ctx, ws, "rb", n/perConnector, harness.RangeSource("rb", perConnector)); err != nil {
		return nil, withLogs(c, err)
	}
	w1 := ws[0]
	wait := func(what string, cond func(harness.Placement) bool) (time.Time, error) {
		_, at, err := w1.REST.WaitPlacement(ctx, 5*time.Minute, what, cond)
		return at, err
	}
	if _, err := wait(fmt.Sprintf("%d tasks balanced on 3 workers", n), harness.Balanced(n, three...)); err != nil {
		return nil, withLogs(c, err)
	}
	took := map[string]time.Duration{}
	begin := time.Now()
	w4, err := c.Start(ctx, "w4")
	if err != nil {
		return nil, withLogs(c, err)
	}
	at, err := wait("balanced on 4 workers after w4 joined", harness.Balanced(n, "w1", "w2", "w3", "w4"))
	if err != nil {
		return nil, withLogs(c, err)
	}
	took["join"] = at.Sub(begin)

	time.Sleep(*settle)
	begin = time.Now()
	if err := w4.Terminate(); err != nil {
		return nil, err
	}
	if at, err = wait("every task RUNNING off w4 after its SIGTERM", harness.AllRunning(n, "w4")); err != nil {
		return nil, withLogs(c, err)
	}
	took["leave"] = at.Sub(begin)
	if err := w4.Wait(30 * time.Second); err != nil {
		return nil, withLogs(c, err)
	}

	if _, err := wait("balanced on 3 workers again", harness.Balanced(n, three...)); err != nil {
		return nil, withLogs(c, err)
	}
	time.Sleep(*settle)
	begin = time.Now()
	if err := ws[2].Kill(); err != nil {
		return nil, err
	}
	if at, err = wait("every task RUNNING off w3 after its SIGKILL", harness.AllRunning(n, "w3")); err != nil {
		return nil, withLogs(c, err)
	}
	took["crash"] = at.Sub(begin)
	return took, nil
}

// parseSizes parses "10,100,400".
func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("%q is not a size of 2 or more", f)
		}
		out = append(out, n)
	}
	if len(out) < 3 {
		return nil, fmt.Errorf("%q: a curve needs 3 sizes or more", s)
	}
	return out, nil
}
