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

package tablesource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// memOffsets is the worker's offset store in memory: offsets go through
// JSON like on the offsets topic. kill makes every later write fail, as if
// the worker died before writing them.
type memOffsets struct {
	mu   sync.Mutex
	m    map[string][]byte
	dead bool
}

var errKilled = errors.New("worker killed")

func offsetKey(connector string, p map[string]any) string {
	b, _ := json.Marshal(p)
	return connector + "/" + string(b)
}

func (s *memOffsets) Read(_ context.Context, connector string, parts []map[string]any) ([]map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(parts))
	for i, p := range parts {
		if b, ok := s.m[offsetKey(connector, p)]; ok && string(b) != "null" {
			if err := json.Unmarshal(b, &out[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (s *memOffsets) Write(_ context.Context, connector string, offs []task.SourceOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return errKilled
	}
	for _, o := range offs {
		b, err := json.Marshal(o.Offset)
		if err != nil {
			return err
		}
		s.m[offsetKey(connector, o.Partition)] = b
	}
	return nil
}

// kill makes later writes fail and returns the incrementing offset stored
// per table at that moment.
func (s *memOffsets) kill(connector string, tables []string) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
	out := map[string]int64{}
	for _, tb := range tables {
		var off map[string]any
		if b, ok := s.m[offsetKey(connector, map[string]any{PartitionTable: "public." + tb})]; ok {
			_ = json.Unmarshal(b, &off)
		}
		if v, ok := off[OffsetIncrementing].(float64); ok {
			out[tb] = int64(v)
		}
	}
	return out
}

func (s *memOffsets) revive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = false
}

// seen counts the ids consumed per topic.
type seen struct {
	mu     sync.Mutex
	counts map[string]map[int64]int
	total  int
}

func (s *seen) add(topic string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts[topic] == nil {
		s.counts[topic] = map[int64]int{}
	}
	s.counts[topic][id]++
	s.total++
}

func (s *seen) distinct(topic string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.counts[topic])
}

func (s *seen) snapshot(topic string) map[int64]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64]int{}
	for k, v := range s.counts[topic] {
		out[k] = v
	}
	return out
}

func (s *seen) records() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// consume reads the topics from the start until ctx ends, decoding the
// id of each JSON value (schema envelope).
func consume(ctx context.Context, t *testing.T, c *kfake.Cluster, topics []string, s *seen) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		f := cl.PollFetches(ctx)
		f.EachRecord(func(r *kgo.Record) {
			var env struct {
				Payload struct {
					ID int64 `json:"id"`
				} `json:"payload"`
			}
			if err := json.Unmarshal(r.Value, &env); err != nil {
				t.Errorf("record on %s: %v: %s", r.Topic, err, r.Value)
				return
			}
			s.add(r.Topic, env.Payload.ID)
		})
	}
}

func rowCount(t *testing.T, url, table string) int {
	t.Helper()
	n, err := strconv.Atoi(pgtest.QueryString(t, url, "SELECT count(*)::text FROM "+table))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// insertRows inserts rounds x perRound rows into each table, one
// transaction per table and round, at a steady pace.
func insertRows(t *testing.T, url string, tables []string, rounds, perRound int) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(context.Background())
	tick := time.NewTicker(15 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < rounds; i++ {
		for _, tb := range tables {
			if _, err := conn.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s (payload) SELECT 'live-' || g FROM generate_series(1, %d) g`, tb, perRound)); err != nil {
				t.Error(err)
				return
			}
		}
		<-tick.C
	}
}

func startRunners(t *testing.T, c *kfake.Cluster, cfgs []map[string]string, store task.OffsetStore) []task.Runner {
	t.Helper()
	var out []task.Runner
	for i, cfg := range cfgs {
		r, err := task.New(task.Spec{Common: task.Common{
			ID: task.ID{Connector: "pg-source", Task: i}, Config: cfg,
			Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Status: task.StatusFunc(func(task.ID, task.State, string) {}),
			OffsetFlushInterval: 100 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
		}, Plugin: Plugin(), Connector: cfg, Offsets: store})
		out = append(out, tasktest.StartMayFail(t, r, err))
	}
	return out
}

func stopRunners(t *testing.T, rs []task.Runner) {
	t.Helper()
	for _, r := range rs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.Stop(ctx)
		cancel()
		if err != nil && !errors.Is(err, errKilled) {
			t.Logf("stopping a runner: %v", err)
		}
	}
}

// The must-show: three tables over tasks.max=2 through the worker's source
// runners into Kafka. Rows inserted while running arrive exactly once;
// after the worker is killed (offsets written after that moment are lost)
// and restarted from the stored offsets, no row is lost and exactly the
// rows sent after the last stored offset are sent again.
func TestThroughRunnersExactlyOnceAndKillRestart(t *testing.T) {
	url := pg.CreateDatabase(t)
	sizes := threeTables(t, url, 1500)
	tables := []string{"big", "mid", "small"}
	topics := []string{"pg.big", "pg.mid", "pg.small"}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topics...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	conn := Plugin().NewConnector()
	cfg := with(baseConfig(url), KeyTableWhitelist, "big,mid,small", KeyBatchMaxRows, "200", KeyTablePollIntervalMs, "0")
	if err := conn.Start(ctx, plugintest.NewConnectorContext(nil), cfg); err != nil {
		t.Fatal(err)
	}
	defer conn.Stop()
	cfgs, lim, err := plugin.PlanTasks(ctx, "pg-source", conn, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 || len(taskTables(t, cfgs[0])) != 1 || taskTables(t, cfgs[0])[0] != "public.big" || len(taskTables(t, cfgs[1])) != 2 {
		t.Fatalf("task tables %v / %v (limits %+v), want the big table alone", taskTables(t, cfgs[0]), taskTables(t, cfgs[1]), lim)
	}

	store := &memOffsets{m: map[string][]byte{}}
	s := &seen{counts: map[string]map[int64]int{}}
	cctx, stopConsumer := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); consume(cctx, t, c, topics, s) }()
	defer func() { stopConsumer(); wg.Wait() }()

	runners := startRunners(t, c, cfgs, store)
	insertRows(t, url, tables, 20, 10) // while the tasks copy the initial rows
	for i, tb := range tables {
		want := rowCount(t, url, tb)
		if want != sizes[tb]+200 {
			t.Fatalf("%s has %d rows", tb, want)
		}
		testkit.EventuallyTrue(t, 120*time.Second, fmt.Sprintf("%d rows of %s in Kafka", want, tb), func() bool { return s.distinct(topics[i]) >= want })
	}
	for _, tp := range topics {
		for id, n := range s.snapshot(tp) {
			if n != 1 {
				t.Fatalf("%s id %d arrived %d times while running", tp, id, n)
			}
		}
	}
	t.Logf("phase 1: %d rows, each exactly once", s.records())

	// Kill while rows are inserted and copied.
	done := make(chan struct{})
	go func() { defer close(done); insertRows(t, url, tables, 40, 10) }()
	before := s.records()
	testkit.EventuallyTrue(t, 30*time.Second, "live rows flowing", func() bool { return s.records() >= before+100 })
	stored := store.kill("pg-source", tables)
	stopRunners(t, runners)
	// Let the consumer read everything the dead worker produced.
	adm := kadm.NewClient(mustClient(t, c))
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	ends.Each(func(o kadm.ListedOffset) { total += int(o.Offset) })
	testkit.EventuallyTrue(t, 30*time.Second, "the consumer to read all produced records", func() bool { return s.records() >= total })
	maxSent := map[string]int64{}
	for i, tp := range topics {
		for id := range s.snapshot(tp) {
			maxSent[tables[i]] = max(maxSent[tables[i]], id)
		}
	}

	store.revive()
	runners = startRunners(t, c, cfgs, store)
	defer stopRunners(t, runners)
	<-done
	resent := 0
	for i, tb := range tables {
		want := rowCount(t, url, tb)
		testkit.EventuallyTrue(t, 120*time.Second, fmt.Sprintf("%d rows of %s after the restart", want, tb), func() bool { return s.distinct(topics[i]) >= want })
		counts := s.snapshot(topics[i])
		for id := int64(1); id <= int64(want); id++ {
			n := counts[id]
			inGap := id > stored[tb] && id <= maxSent[tb]
			switch {
			case n == 0:
				t.Fatalf("%s: row %d lost", tb, id)
			case n > 2:
				t.Fatalf("%s: row %d arrived %d times", tb, id, n)
			case n == 2 && !inGap:
				t.Fatalf("%s: row %d re-sent although it is outside (stored offset %d, last sent %d]", tb, id, stored[tb], maxSent[tb])
			case n == 1 && inGap:
				t.Fatalf("%s: row %d was sent before the kill after the stored offset %d, yet not re-sent", tb, id, stored[tb])
			}
			if n == 2 {
				resent++
			}
		}
		t.Logf("%s: %d rows; stored offset at kill %d, last sent %d: %d rows re-sent", tb, want, stored[tb], maxSent[tb], maxSent[tb]-stored[tb])
	}
	t.Logf("after kill and restart: no row lost, %d rows re-sent, all after the last stored offset", resent)
}

func mustClient(t *testing.T, c *kfake.Cluster) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
