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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/test/bench/benchkit"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// rolloutResult is what a rolling update of the workers did to the tasks
// and the records.
type rolloutResult struct {
	maxPause        time.Duration
	pausedTask      harness.TaskKey
	restarts, tasks int
	lost, dupes     int
}

// rollout runs 3 workers with a rate-limited RangeSource (3 tasks) and a
// FileSink (3 tasks) reading its topic, and replaces the workers one at a
// time as a Deployment's rolling update does (maxSurge 1, maxUnavailable
// 0, the operator's strategy): the new worker starts and reports /readyz,
// then the old one gets SIGTERM (a planned handover: it leaves its group)
// and exits. A poller reads every task's status every 50ms; a task is
// paused while it is not RUNNING on a live worker.
func rollout(ctx context.Context, bin, dir string) (rolloutResult, error) {
	const perConnector, rate = 3, 3000
	count := *rolloutRecords
	var res rolloutResult
	old := []string{"w1", "w2", "w3"}
	// The revision each worker's pod would carry (pod-template-hash).
	revision := func(name string) []string {
		if slices.Contains(old, name) {
			return []string{"worker.revision=a"}
		}
		return []string{"worker.revision=b"}
	}
	b, c, err := newClusterWith(bin, dir, revision, kfake.SeedTopics(6, "roll"))
	if err != nil {
		return res, err
	}
	defer b.Close()
	defer c.Close()
	ws, err := c.StartAll(ctx, old...)
	if err != nil {
		return res, withLogs(c, err)
	}
	out := filepath.Join(dir, "roll.out")
	src := harness.RangeSource("roll", perConnector)
	src["count"], src["rate"], src["record.size"] = strconv.Itoa(count), strconv.Itoa(rate), "20"
	src["key.converter"], src["value.converter"], src["value.converter.schemas.enable"] = harness.StringConverter, "org.apache.kafka.connect.json.JsonConverter", "false"
	sink := harness.FileSink("roll", out, perConnector)
	sink["value.converter"] = "org.apache.kafka.connect.converters.ByteArrayConverter"
	for name, cfg := range map[string]map[string]string{"roll-src": src, "roll-sink": sink} {
		if err := ws[0].REST.PutConnector(ctx, name, cfg); err != nil {
			return res, withLogs(c, err)
		}
	}
	res.tasks = 2 * perConnector
	if _, _, err := ws[0].REST.WaitPlacement(ctx, 60*time.Second, "6 tasks balanced on 3 workers", harness.Balanced(res.tasks, old...), "roll-src", "roll-sink"); err != nil {
		return res, withLogs(c, err)
	}
	if err := b.WaitConsumerGroup(ctx, "connect-roll-sink", perConnector, 60*time.Second); err != nil {
		return res, withLogs(c, err)
	}

	// The poller: the longest time any task was not RUNNING on a live worker.
	pctx, stopPoll := context.WithCancel(ctx)
	var mu sync.Mutex
	lastRunning := map[harness.TaskKey]time.Time{}
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pctx.Err() == nil {
			live := map[string]bool{}
			var any *harness.Worker
			for _, w := range c.Running() {
				live[w.Name] = true
				any = w
			}
			if any != nil {
				if p, err := any.REST.Placement(pctx, "roll-src", "roll-sink"); err == nil {
					now := time.Now()
					mu.Lock()
					for k, t := range p {
						if t.State == "RUNNING" && live[t.WorkerID] {
							if last, ok := lastRunning[k]; ok && now.Sub(last) > res.maxPause {
								res.maxPause, res.pausedTask = now.Sub(last), k
							}
							lastRunning[k] = now
						}
					}
					mu.Unlock()
				}
			}
			select {
			case <-pctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	begin := time.Now()
	for i, o := range old {
		name := fmt.Sprintf("w%d", len(old)+i+1)
		nw, err := c.Start(ctx, name)
		if err == nil {
			err = testkit.Until(ctx, 60*time.Second, name+" ready", func(ctx context.Context) (bool, error) {
				code, err := nw.REST.Do(ctx, "GET", "/readyz", nil, nil)
				return err == nil && code == 200, nil
			})
		}
		if err == nil {
			err = c.Worker(o).Terminate()
		}
		if err == nil {
			err = c.Worker(o).Wait(30 * time.Second)
		}
		if err != nil {
			stopPoll()
			<-polled
			return res, withLogs(c, fmt.Errorf("replacing %s by %s: %w", o, name, err))
		}
		logf("rollout: %s replaced by %s after %s", o, name, time.Since(begin).Round(time.Millisecond))
	}
	nw := c.Running()[0]
	_, _, err = nw.REST.WaitPlacement(ctx, 60*time.Second, "6 tasks RUNNING on the new workers", harness.AllRunning(res.tasks, old...), "roll-src", "roll-sink")
	// A last look after settling: a task still paused counts to now.
	time.Sleep(200 * time.Millisecond)
	stopPoll()
	<-polled
	if err != nil {
		return res, withLogs(c, err)
	}
	logf("rollout: done in %s", time.Since(begin).Round(time.Millisecond))
	starts, err := b.TaskStarts(ctx, "connect-status", begin)
	if err != nil {
		return res, err
	}
	res.restarts = len(starts)

	// Every record in the sink's file, once the source wrote them all.
	err = testkit.Until(ctx, 3*time.Minute, fmt.Sprintf("%d records in the sink's file", count), func(context.Context) (bool, error) {
		ids, _, err := fileIDs(out)
		return err == nil && len(ids) >= count, nil
	})
	ids, lines, ferr := fileIDs(out)
	if ferr != nil {
		return res, ferr
	}
	res.lost, res.dupes = count-len(ids), lines-len(ids)
	if err != nil {
		logf("rollout: %v", err)
	}
	return res, nil
}

// fileIDs reads the sink's file: the distinct record ids and the lines.
func fileIDs(path string) (map[int64]bool, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	ids := map[int64]bool{}
	lines := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(line, &v) != nil {
			continue // a line cut at the file's end while the sink writes
		}
		lines++
		ids[v.ID] = true
	}
	return ids, lines, sc.Err()
}

// memory200 runs one worker with 100 RangeSources and 100 FileSinks (one
// task each) and returns its VmRSS (MiB) once every task is RUNNING and
// has done its first work.
func memory200(ctx context.Context, bin, dir string) (float64, error) {
	const each = 100
	b, c, err := newCluster(bin, dir)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	defer c.Close()
	w, err := c.Start(ctx, "w1")
	if err != nil {
		return 0, withLogs(c, err)
	}
	ws := []*harness.Worker{w}
	// Each source writes 1000 records of 200 B to its own topic over
	// about 10 s; each sink reads one source's topic into a file.
	src := harness.RangeSource("", 1)
	src["count"], src["rate"], src["record.size"] = "1000", "100", "200"
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []error
	for i := range each {
		for _, kind := range []string{"src", "sink"} {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				topic := fmt.Sprintf("mem-%03d", i)
				cfg := harness.FileSink(topic, filepath.Join(dir, topic+".out"), 1)
				if kind == "src" {
					cfg = map[string]string{}
					for k, v := range src {
						cfg[k] = v
					}
					cfg["topic"] = topic
				}
				if err := ws[0].REST.PutConnector(ctx, kind+"-"+topic, cfg); err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, withLogs(c, errs[0])
	}
	if _, _, err := w.REST.WaitPlacement(ctx, 3*time.Minute, "200 tasks RUNNING", harness.AllRunning(2*each)); err != nil {
		return 0, withLogs(c, err)
	}
	// The sources' records reach the sinks' files: every task has worked.
	err = testkit.Until(ctx, 2*time.Minute, "every sink wrote", func(context.Context) (bool, error) {
		for i := range each {
			st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("mem-%03d.out", i)))
			if err != nil || st.Size() == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, withLogs(c, err)
	}
	time.Sleep(5 * time.Second) // steady: the sources keep writing, the sinks keep reading
	return benchkit.VmRSSMB(w.Pid())
}
