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

package task

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/connectors/file"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// slowFileSink starts task n of connector "slow": the real FileSink writing
// at most rate records per second to its own file in dir, committing every
// flush interval.
func slowFileSink(t *testing.T, c *kfake.Cluster, dir string, n int, rate string, flush time.Duration, tm *metrics.Task, rebalanceTimeout time.Duration) *SinkRunner {
	t.Helper()
	cm := common(c, newStatuses(), ID{"slow", n}, map[string]string{
		"topics": "in", file.KeyFile: filepath.Join(dir, fmt.Sprintf("task-%d.txt", n)), file.KeySinkRate: rate})
	cm.OffsetFlushInterval = flush
	cm.Metrics = tm
	return newSink(t, SinkConfig{Common: cm, Task: &file.SinkTask{}, RebalanceTimeout: rebalanceTimeout})
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

// A rate-limited sink task that holds a whole topic's backlog must still
// hand partitions over within seconds when more tasks of its connector
// join: the group's rebalance waits for it to rejoin, and a task that only
// rejoins once it has put everything it fetched keeps the new tasks idle
// until the rebalance timeout drops it from the group (the "slow spread" of
// a sink's partitions over its tasks: in the local cluster task 0 held all
// four partitions and tasks 1-3 got theirs one rebalance timeout, 60 s,
// later).
func TestSlowSinkSpreadsPartitionsOverNewTasksWithinSeconds(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 4})
	produce(t, c, "in", "r", 4000) // 1000 a partition: 200 s of work at 20 records/s
	dir := t.TempDir()
	const rebalanceTimeout = 20 * time.Second
	r0 := slowFileSink(t, c, dir, 0, "20", time.Second, nil, rebalanceTimeout)
	testkit.EventuallyTrue(t, 10*time.Second, "task 0 to hold the 4 partitions and write", func() bool {
		return len(r0.Assignment()) == 4 && lines(t, filepath.Join(dir, "task-0.txt")) > 0
	})
	begin := time.Now()
	rs := []*SinkRunner{r0}
	for n := 1; n < 4; n++ {
		rs = append(rs, slowFileSink(t, c, dir, n, "20", time.Second, nil, rebalanceTimeout))
	}
	spread := func() (bool, string) {
		per := make([]int, len(rs))
		ok := true
		for i, r := range rs {
			per[i] = len(r.Assignment())
			ok = ok && per[i] == 1
		}
		return ok, fmt.Sprintf("partitions per task %v after %v", per, time.Since(begin).Round(100*time.Millisecond))
	}
	testkit.Eventually(t, 2*rebalanceTimeout, "the 4 partitions to spread over the 4 tasks", spread)
	took := time.Since(begin)
	t.Logf("spread over 4 tasks in %v (rebalance timeout %v)", took.Round(10*time.Millisecond), rebalanceTimeout)
	if took > rebalanceTimeout/3 { // about 7 s: well below the rebalance timeout, slack for a loaded machine
		t.Fatalf("the partitions spread over the tasks only after %v, want well within the rebalance timeout (%v): task 0 did not rejoin while it worked through its backlog", took.Round(10*time.Millisecond), rebalanceTimeout)
	}
}

// A slow sink keeps committing what it wrote at the offset flush interval
// while it works through a large fetch, and its records-read counter moves
// with it: a whole fetch put in one go left the committed lag unchanged for
// minutes (the rate demo in docs/dev.md: lag 29,369 for over 3 minutes while
// sink_record_read_total stood still).
func TestSlowSinkCommitsWhileWorkingThroughABacklog(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1})
	adm := admin(t, c)
	produce(t, c, "in", "r", 4000) // 80 s of work at 50 records/s
	dir := t.TempDir()
	m := metrics.New()
	tm := m.Task("slow", 0)
	slowFileSink(t, c, dir, 0, "50", 500*time.Millisecond, tm, 0)
	out := filepath.Join(dir, "task-0.txt")
	read := func() float64 {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() == metrics.Namespace+"_sink_record_read_total" {
				for _, mm := range f.GetMetric() {
					return mm.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	testkit.EventuallyTrue(t, 10*time.Second, "the sink to write", func() bool { return lines(t, out) > 0 })
	began := time.Now()
	var last int64
	for round := range 3 {
		testkit.Eventually(t, 5*time.Second, fmt.Sprintf("commit round %d to go past %d", round, last), func() (bool, string) {
			got := committed(t, adm, connectnames.SinkGroup("slow"), "in")[0]
			if got <= last {
				return false, fmt.Sprintf("committed %d, %d lines written, %v read, %v since writing began", got, lines(t, out), read(), time.Since(began).Round(100*time.Millisecond))
			}
			last = got
			return true, ""
		})
		if n := lines(t, out); last > int64(n) {
			t.Fatalf("committed %d with %d lines written", last, n)
		}
		if r := read(); r < float64(last) || r > float64(lines(t, out))+500 {
			t.Fatalf("sink_record_read_total %v with %d committed and %d written: it counts records read but not put", r, last, lines(t, out))
		}
	}
	t.Logf("committed %d after %v; %d lines, %v read", last, time.Since(began).Round(100*time.Millisecond), lines(t, out), read())
}
