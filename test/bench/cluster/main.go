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

// Command cluster measures a Conveyor cluster of conveyor-worker processes
// (issue 4) on an in-process kfake broker and prints one figure per line,
// "conveyor-bench: NAME=VALUE":
//
//   - graceful_handoff_s: SIGTERM of one of 3 workers sharing a 6-task sink,
//     in a steady state (tasks balanced, the sink's consumer group stable),
//     until its tasks are RUNNING on the others (median of -rounds; target
//     <= 1);
//   - crash_failover_s: SIGKILL of one of them until its tasks are RUNNING
//     on the others (median), beside crash_failover_configured_delay_s (the
//     lost-worker delay, scheduled.rebalance.max.delay.ms) and
//     crash_failover_session_timeout_s: the failover cannot be shorter than
//     their sum;
//   - restart_200_connectors_s: 200 connectors with 1000 tasks on 5 workers,
//     all workers SIGTERMed and started again, until every task is RUNNING
//     (target <= 30);
//   - rolling_update_max_task_pause_s: 3 workers running a RangeSource
//     (3 tasks, -rollout-records records at 3000/s) and a FileSink (3
//     tasks) that reads its topic are replaced one at a time, as the
//     Deployment's rolling update does (maxSurge 1, maxUnavailable 0): a
//     new worker starts and reports /readyz, then the old one gets SIGTERM
//     (a planned handover) and exits. A poller reads the tasks' status
//     every 50ms; a task is paused from its last poll RUNNING on a live
//     worker until its next one (so the figure is up to 50ms high), and the
//     figure is the longest pause of any task (target <= 1);
//     rolling_update_task_restarts counts the task starts written to the
//     status topic during the rollout (each of the rolling_update_tasks
//     tasks must move at least once, since every worker is replaced, and
//     should move only once: the workers carry worker.revision as the
//     operator's pods do, old ones "a", new ones "b");
//     rolling_update_records_lost counts the source's record ids missing
//     from the sink's file afterwards (must be 0) and
//     rolling_update_records_duplicated the lines written twice
//     (at-least-once delivery allows them);
//   - worker_rss_200_tasks_mb: VmRSS of one worker running 100 RangeSources
//     (1000 records of 200 B each at 100/s) and 100 FileSinks reading
//     them, one task each, once all 200 are RUNNING and every sink wrote
//     (target <= 200);
//   - assignment_200c_1000t_5w_ms: the slowest of 20 calls of the assignor
//     (runtime/assignor.Assign) for 200 connectors with 1000 tasks on 5
//     workers, fresh and after one worker restarted (target < 50).
//
// Run it with `make bench` (go run ./test/bench/cluster) from the
// repository root. A missed target does not fail the run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/runtime/assignor"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/test/cluster/harness"
)

var (
	rounds    = flag.Int("rounds", 3, "handoff and failover measurements (the median is printed)")
	session   = flag.Duration("session-timeout", 3*time.Second, "session.timeout.ms of the workers")
	heartbeat = flag.Duration("heartbeat", 300*time.Millisecond, "heartbeat.interval.ms of the workers")
	lostDelay = flag.Duration("lost-worker-delay", 3*time.Second, "scheduled.rebalance.max.delay.ms of the workers")
	verbose   = flag.Bool("v", false, "log progress and every measurement to stderr")
	keep      = flag.Bool("keep", false, "keep the worker logs (their folder is printed)")
	only      = flag.String("only", "assign,handoff,restart,rollout,memory,worker-curve,rebalance-curve", "the measurements to run, comma-separated")

	workerSizes    = flag.String("worker-sizes", "10,100,400", "worker curve: tasks on one worker (half sources, half sinks)")
	workerRate     = flag.Float64("worker-rate", 100, "worker curve under load: records per second of each source")
	rebalanceSizes = flag.String("rebalance-sizes", "10,100,1000", "rebalance curve: tasks on 3 workers (connectors of 10 tasks)")
	settle         = flag.Duration("settle", 5*time.Second, "curves: wait before each measurement")
	windowLen      = flag.Duration("window", 10*time.Second, "worker curve: how long CPU time is measured")

	rolloutRecords = flag.Int("rollout-records", 60000, "records the source of the rolling update writes (3000/s)")
)

func want(name string) bool { return slices.Contains(strings.Split(*only, ","), name) }

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench cluster: "+format+"\n", args...)
	}
}

func report(name string, value float64) {
	fmt.Printf("conveyor-bench: %s=%s\n", name, strconv.FormatFloat(value, 'f', 3, 64))
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench cluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "conveyor-bench-cluster-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(os.Stderr, "bench cluster: worker logs in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	logf("building conveyor-worker")
	bin, err := harness.BuildWorker(ctx, dir)
	if err != nil {
		return err
	}

	if want("assign") {
		report("assignment_200c_1000t_5w_ms", float64(slowestAssignment(20).Microseconds())/1000)
	}
	if want("handoff") {
		handoff, failover, err := handoffAndFailover(ctx, bin, filepath.Join(dir, "handoff"))
		if err != nil {
			return err
		}
		report("graceful_handoff_s", median(handoff).Seconds())
		report("crash_failover_s", median(failover).Seconds())
		report("crash_failover_configured_delay_s", lostDelay.Seconds())
		report("crash_failover_session_timeout_s", session.Seconds())
	}
	if want("restart") {
		restart, err := restart200(ctx, bin, filepath.Join(dir, "restart"))
		if err != nil {
			return err
		}
		report("restart_200_connectors_s", restart.Seconds())
	}
	if want("rollout") {
		r, err := rollout(ctx, bin, filepath.Join(dir, "rollout"))
		if err != nil {
			return err
		}
		logf("rollout: longest pause %s (task %s), %d task starts for %d tasks, %d records lost, %d duplicates", r.maxPause, r.pausedTask, r.restarts, r.tasks, r.lost, r.dupes)
		report("rolling_update_max_task_pause_s", r.maxPause.Seconds())
		report("rolling_update_task_restarts", float64(r.restarts))
		report("rolling_update_tasks", float64(r.tasks))
		report("rolling_update_records_lost", float64(r.lost))
		report("rolling_update_records_duplicated", float64(r.dupes))
	}
	if want("memory") {
		rss, err := memory200(ctx, bin, filepath.Join(dir, "memory"))
		if err != nil {
			return err
		}
		report("worker_rss_200_tasks_mb", rss)
	}
	if want("worker-curve") {
		if err := workerCurve(ctx, bin, filepath.Join(dir, "worker-curve")); err != nil {
			return err
		}
	}
	if want("rebalance-curve") {
		if err := rebalanceCurve(ctx, bin, filepath.Join(dir, "rebalance-curve")); err != nil {
			return err
		}
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// newCluster starts a broker and prepares a cluster of worker processes.
func newCluster(bin, dir string, kopts ...kfake.Opt) (*harness.Broker, *harness.Cluster, error) {
	return newClusterWith(bin, dir, nil, kopts...)
}

// newClusterWith is newCluster with per-worker config lines.
func newClusterWith(bin, dir string, perWorker func(string) []string, kopts ...kfake.Opt) (*harness.Broker, *harness.Cluster, error) {
	b, err := harness.StartBroker(kopts...)
	if err != nil {
		return nil, nil, err
	}
	c, err := harness.NewCluster(harness.Options{Binary: bin, Dir: dir, Bootstrap: b.Addr,
		SessionTimeout: *session, HeartbeatInterval: *heartbeat, LostWorkerDelay: *lostDelay, PerWorker: perWorker})
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, c, nil
}

// withLogs adds the workers' log tails to a failure.
func withLogs(c *harness.Cluster, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w\nworker logs:\n%s", err, c.Logs(3000))
}

// handoffAndFailover runs 3 workers sharing a 6-task FileSink and, each
// round, SIGTERMs then SIGKILLs w3, timing until its tasks are RUNNING on
// w1 and w2, and restarts it.
func handoffAndFailover(ctx context.Context, bin, dir string) (handoff, failover []time.Duration, err error) {
	b, c, err := newCluster(bin, dir, kfake.SeedTopics(6, "events"))
	if err != nil {
		return nil, nil, err
	}
	defer b.Close()
	defer c.Close()
	names := []string{"w1", "w2", "w3"}
	ws, err := c.StartAll(ctx, names...)
	if err != nil {
		return nil, nil, withLogs(c, err)
	}
	w1 := ws[0]
	if err := w1.REST.PutConnector(ctx, "sink", harness.FileSink("events", filepath.Join(dir, "out.txt"), 6)); err != nil {
		return nil, nil, withLogs(c, err)
	}
	// Steady state before each measurement: the tasks balanced and their
	// consumers settled in the sink's group.
	balanced := func() error {
		if _, _, err := w1.REST.WaitPlacement(ctx, 60*time.Second, "6 tasks balanced on 3 workers", harness.Balanced(6, names...), "sink"); err != nil {
			return err
		}
		return b.WaitConsumerGroup(ctx, "connect-sink", 6, 60*time.Second)
	}
	moved := func(graceful bool) (time.Duration, error) {
		if err := balanced(); err != nil {
			return 0, err
		}
		w3 := c.Worker("w3")
		at0 := time.Now()
		stop := w3.Kill
		if graceful {
			stop = w3.Terminate
		}
		if err := stop(); err != nil {
			return 0, err
		}
		_, at, err := w1.REST.WaitPlacement(ctx, 60*time.Second, "w3's tasks RUNNING on w1 and w2", harness.AllRunning(6, "w3"), "sink")
		if err != nil {
			return 0, err
		}
		if err := w3.Wait(30 * time.Second); graceful && err != nil {
			return 0, err
		}
		if _, err := c.Start(ctx, "w3"); err != nil {
			return 0, err
		}
		return at.Sub(at0), nil
	}
	for r := range *rounds {
		d, err := moved(true)
		if err != nil {
			return nil, nil, withLogs(c, fmt.Errorf("graceful handoff, round %d: %w", r+1, err))
		}
		logf("graceful handoff, round %d: %s", r+1, d)
		handoff = append(handoff, d)
		d, err = moved(false)
		if err != nil {
			return nil, nil, withLogs(c, fmt.Errorf("crash failover, round %d: %w", r+1, err))
		}
		logf("crash failover, round %d: %s (delay %s + session %s)", r+1, d, *lostDelay, *session)
		failover = append(failover, d)
	}
	return handoff, failover, nil
}

// restart200 runs 200 RangeSource connectors (1000 tasks) on 5 workers,
// restarts every worker and times from the SIGTERMs until every task is
// RUNNING again.
func restart200(ctx context.Context, bin, dir string) (time.Duration, error) {
	const connectors, perConnector = 200, 5
	b, c, err := newCluster(bin, dir)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	defer c.Close()
	names := []string{"w1", "w2", "w3", "w4", "w5"}
	ws, err := c.StartAll(ctx, names...)
	if err != nil {
		return 0, withLogs(c, err)
	}
	begin := time.Now()
	if err := harness.CreateConnectors(ctx, ws, "range", connectors, harness.RangeSource("range", perConnector)); err != nil {
		return 0, withLogs(c, err)
	}
	if _, _, err := ws[0].REST.WaitPlacement(ctx, 3*time.Minute, "1000 tasks balanced on 5 workers", harness.Balanced(connectors*perConnector, names...)); err != nil {
		return 0, withLogs(c, err)
	}
	logf("200 connectors created and their 1000 tasks balanced in %s", time.Since(begin))
	restartAt := time.Now()
	if err := harness.TerminateAll(ws, 30*time.Second); err != nil {
		return 0, withLogs(c, err)
	}
	logf("5 workers stopped in %s", time.Since(restartAt))
	ws, err = c.StartAll(ctx, names...)
	if err != nil {
		return 0, withLogs(c, err)
	}
	_, at, err := ws[0].REST.WaitPlacement(ctx, 3*time.Minute, "1000 tasks RUNNING after the restart", harness.AllRunning(connectors*perConnector))
	if err != nil {
		return 0, withLogs(c, err)
	}
	return at.Sub(restartAt), nil
}

// slowestAssignment times n calls of the assignor for 200 connectors with
// 1000 tasks on 5 workers, alternating a fresh cluster and one where a
// worker restarted empty, and returns the slowest.
func slowestAssignment(n int) time.Duration {
	conns := map[string]int{}
	for i := range 200 {
		conns[fmt.Sprintf("connector-%03d", i)] = 5
	}
	fresh := make([]assignor.Member, 5)
	for i := range fresh {
		fresh[i] = assignor.Member{MemberID: fmt.Sprintf("member-%d", i), WorkerID: fmt.Sprintf("127.0.0.%d:8083", i+1)}
	}
	now := time.Now()
	first := assignor.Assign(assignor.Input{Members: fresh, Connectors: conns, Now: now})
	rejoined := slices.Clone(fresh)
	for i := range rejoined {
		rejoined[i].Owned = first.Members[rejoined[i].MemberID].Assigned
	}
	rejoined[4].Owned, rejoined[4].MemberID = assignor.Assignment{}, "member-4-new"
	inputs := []assignor.Input{
		{Members: fresh, Connectors: conns, Now: now},
		{Members: rejoined, Connectors: conns, Previous: first.State, Now: now, LostWorkerDelay: *lostDelay},
	}
	var slowest time.Duration
	for i := range n {
		start := time.Now()
		res := assignor.Assign(inputs[i%2])
		slowest = max(slowest, time.Since(start))
		if tasks := assigned(res); tasks != 1000 {
			fmt.Fprintf(os.Stderr, "bench cluster: the assignor placed %d of 1000 tasks\n", tasks)
		}
	}
	return slowest
}

func assigned(res assignor.Result) int {
	seen := map[store.TaskID]bool{}
	for _, m := range res.Members {
		for _, t := range m.Assigned.Tasks {
			seen[t] = true
		}
	}
	return len(seen)
}
