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

package herder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// fakeTasks is a TaskRuntime that records which tasks run.
type fakeTasks struct {
	mu       sync.Mutex
	pausable map[store.TaskID]*pausableTask
	running  map[store.TaskID]*fakeTask
	starts   map[store.TaskID]int
	specs    map[store.TaskID]TaskSpec
}

type fakeTask struct {
	done chan struct{}
	err  error
	once sync.Once
	// stopDelay is how long Stop takes (a flush and commit).
	stopDelay time.Duration
}

func (t *fakeTask) Stop(context.Context) error {
	time.Sleep(t.stopDelay)
	t.once.Do(func() { close(t.done) })
	return nil
}
func (t *fakeTask) Done() <-chan struct{} { return t.done }
func (t *fakeTask) Err() error            { return t.err }

// pausableTask can pause in place, like the real runners.
type pausableTask struct {
	*fakeTask
	mu     sync.Mutex
	paused bool
}

func (p *pausableTask) Pause()  { p.mu.Lock(); p.paused = true; p.mu.Unlock() }
func (p *pausableTask) Resume() { p.mu.Lock(); p.paused = false; p.mu.Unlock() }
func (p *pausableTask) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

func (f *fakeTasks) StartTask(_ context.Context, spec TaskSpec) (RunningTask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTask{done: make(chan struct{})}
	if spec.ConnectorConfig["slow.stop"] == "true" {
		t.stopDelay = 200 * time.Millisecond
	}
	if spec.ConnectorConfig["pausable"] == "true" {
		f.pausable[spec.ID] = &pausableTask{fakeTask: t}
	}
	f.running[spec.ID] = t
	f.starts[spec.ID]++
	f.specs[spec.ID] = spec
	go func() {
		<-t.done
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.running[spec.ID] == t {
			delete(f.running, spec.ID)
		}
	}()
	if p := f.pausable[spec.ID]; p != nil && p.fakeTask == t {
		return p, nil
	}
	return t, nil
}

func (f *fakeTasks) count(connector string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for id := range f.running {
		if id.Connector == connector {
			n++
		}
	}
	return n
}

func (f *fakeTasks) fail(id store.TaskID, err error) {
	f.mu.Lock()
	t := f.running[id]
	f.mu.Unlock()
	t.err = err
	t.once.Do(func() { close(t.done) })
}

// testSink is a sink connector whose natural limit is its topics' partitions.
type testSink struct {
	cc    plugin.ConnectorContext
	cfg   map[string]string
	extra int // task configs beyond the max asked for (a misbehaving connector)
}

func (c *testSink) Validate(context.Context, map[string]string) []plugin.FieldError { return nil }
func (c *testSink) Start(ctx context.Context, cc plugin.ConnectorContext, cfg map[string]string) error {
	c.cc, c.cfg = cc, cfg
	if cfg["block.start"] == "true" {
		<-ctx.Done() // a broken connector: returns only when the worker stops
		return ctx.Err()
	}
	return nil
}
func (c *testSink) NaturalLimit(ctx context.Context) (int, plugin.Reason, error) {
	return plugin.SinkNaturalLimit(ctx, c.cc, c.cfg)
}
func (c *testSink) TaskConfigs(max int) ([]map[string]string, error) {
	var out []map[string]string
	for i := 0; i < max+c.extra; i++ {
		out = append(out, map[string]string{"task": fmt.Sprint(i), "topics": c.cfg["topics"], "secret": c.cfg["secret"]})
	}
	return out, nil
}
func (c *testSink) Stop() error { return nil }

// testSource is a source connector with a fixed natural limit of 2.
type testSource struct{}

func (testSource) Validate(context.Context, map[string]string) []plugin.FieldError { return nil }
func (testSource) Start(context.Context, plugin.ConnectorContext, map[string]string) error {
	return nil
}
func (testSource) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	return 2, plugin.Files, nil
}
func (testSource) TaskConfigs(max int) ([]map[string]string, error) {
	out := make([]map[string]string, max)
	for i := range out {
		out[i] = map[string]string{"file": fmt.Sprint(i)}
	}
	return out, nil
}
func (testSource) Stop() error { return nil }

type nopSinkTask struct{}

func (nopSinkTask) Start(context.Context, plugin.SinkTaskContext, map[string]string) error {
	return nil
}
func (nopSinkTask) Open(context.Context, []plugin.TopicPartition) error          { return nil }
func (nopSinkTask) Put(context.Context, []*plugin.SinkRecord) error              { return nil }
func (nopSinkTask) Flush(context.Context, map[plugin.TopicPartition]int64) error { return nil }
func (nopSinkTask) Close(context.Context, []plugin.TopicPartition) error         { return nil }
func (nopSinkTask) Stop() error                                                  { return nil }

type envResolver map[string]string

func (r envResolver) Resolve(_ context.Context, cfg map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range cfg {
		for ph, val := range r {
			v = strings.ReplaceAll(v, ph, val)
		}
		out[k] = v
	}
	return out, nil
}

type env struct {
	h     *Herder
	tasks *fakeTasks
	adm   *kadm.Client
	ticks chan time.Time
	cfgs  *store.ConfigStore
}

func newEnv(t *testing.T) *env { return newEnvWith(t, true) }

func newEnvWith(t *testing.T, assignAll bool, mods ...func(*Options)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, opts := kafkatest.Cluster(t, kfake.SeedTopics(4, "events"))
	adm := kafkatest.Admin(t, opts)
	open := kafkatest.Opener(opts)
	reg := plugin.NewRegistry()
	reg.MustRegister(plugin.Plugin{Class: "test.TestSinkConnector", Kind: plugin.KindSink,
		NewConnector: func() plugin.Connector { return &testSink{} }, NewSinkTask: func() plugin.SinkTask { return nopSinkTask{} }})
	reg.MustRegister(plugin.Plugin{Class: "test.TestSourceConnector", Kind: plugin.KindSource,
		NewConnector: func() plugin.Connector { return &testSource{} }, NewSourceTask: func() plugin.SourceTask { return nil }})
	reg.MustRegister(plugin.Plugin{Class: "test.GreedySinkConnector", Kind: plugin.KindSink,
		NewConnector: func() plugin.Connector { return &testSink{extra: 1} }, NewSinkTask: func() plugin.SinkTask { return nopSinkTask{} }})
	e := &env{tasks: &fakeTasks{pausable: map[store.TaskID]*pausableTask{}, running: map[store.TaskID]*fakeTask{}, starts: map[store.TaskID]int{}, specs: map[store.TaskID]TaskSpec{}},
		adm: adm, ticks: make(chan time.Time)}
	var hp *Herder
	cfgs, err := store.OpenConfigStore(ctx, open, kafkalog.Topic{Name: "configs"}, func(ev store.ConfigEvent) {
		if hp != nil {
			hp.OnConfigEvent(ev)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	offs, err := store.OpenOffsetStore(ctx, open, kafkalog.Topic{Name: "offsets"})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := store.OpenStatusStore(ctx, open, kafkalog.Topic{Name: "status"})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{WorkerID: "w1:8083", URL: "http://w1:8083", Plugins: reg, Configs: cfgs, Offsets: offs, Statuses: stats,
		Admin: e.adm, Tasks: e.tasks, AssignAll: assignAll, LimitCheckTicks: e.ticks,
		Resolver: envResolver{"${env:PW}": "hunter2"}}
	for _, m := range mods {
		m(&o)
	}
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hp = h
	h.Run()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Close(ctx)
		cfgs.Close()
		offs.Close()
		stats.Close()
	})
	e.h, e.cfgs = h, cfgs
	return e
}

// wait bounds the waits of these tests.
const wait = 15 * time.Second

func sinkConfig(name, class string, tasksMax int) map[string]string {
	return map[string]string{"name": name, "connector.class": class, "tasks.max": fmt.Sprint(tasksMax), "topics": "events", "secret": "${env:PW}"}
}

func TestSinkTasksFollowPartitionsWithoutRestart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "s", Config: sinkConfig("s", "TestSink", 10)}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "4 tasks", func() bool { return e.tasks.count("s") == 4 })
	lim, err := e.h.Limits(ctx, "s")
	if err != nil || lim.TasksMax != 10 || lim.NaturalLimit == nil || *lim.NaturalLimit != 4 || lim.EffectiveTasks != 4 || lim.Reason != string(plugin.TopicPartitions) {
		t.Fatalf("limits = %+v (natural %v), %v", lim, lim.NaturalLimit, err)
	}
	// Secrets: tasks get resolved values, the config topic keeps placeholders.
	e.tasks.mu.Lock()
	spec := e.tasks.specs[store.TaskID{Connector: "s", Task: 0}]
	e.tasks.mu.Unlock()
	if spec.TaskConfig["secret"] != "hunter2" || spec.ConnectorConfig["secret"] != "hunter2" {
		t.Fatalf("task did not get the resolved secret: %v", spec.TaskConfig)
	}
	tis, _ := e.h.TaskConfigs(ctx, "s")
	if tis[0].Config["secret"] != "${env:PW}" {
		t.Fatalf("stored task config holds %q, want the placeholder", tis[0].Config["secret"])
	}

	if _, err := e.adm.UpdatePartitions(ctx, 6, "events"); err != nil {
		t.Fatal(err)
	}
	e.ticks <- time.Now()
	testkit.EventuallyTrue(t, wait, "6 tasks after growing the topic", func() bool { return e.tasks.count("s") == 6 })
	e.tasks.mu.Lock()
	restarts := e.tasks.starts[store.TaskID{Connector: "s", Task: 0}]
	e.tasks.mu.Unlock()
	if restarts != 1 {
		t.Errorf("task 0 started %d times; tasks whose config did not change must keep running", restarts)
	}
	st, _ := e.h.ConnectorStatus(ctx, "s")
	if st.Connector.State != "RUNNING" || len(st.Tasks) != 6 || st.Type != connectapi.TypeSink {
		t.Fatalf("status = %+v", st)
	}

	// A shutdown stops the tasks and leaves them UNASSIGNED, as Kafka Connect does.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.h.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if n := e.tasks.count("s"); n != 0 {
		t.Fatalf("%d tasks still run after Close", n)
	}
	for i := 0; i < 6; i++ {
		if ts, _ := e.h.opts.Statuses.Task(store.TaskID{Connector: "s", Task: i}); ts.State != connectapi.StateUnassigned {
			t.Errorf("task %d is %s after shutdown, want UNASSIGNED", i, ts.State)
		}
	}
	if cs, _ := e.h.opts.Statuses.Connector("s"); cs.State != connectapi.StateUnassigned {
		t.Errorf("connector is %s after shutdown, want UNASSIGNED", cs.State)
	}
}

func TestTooManyTaskConfigsFailsConnector(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "g", Config: sinkConfig("g", "GreedySink", 2)}); err != nil {
		t.Fatal(err)
	}
	var st connectapi.ConnectorStateInfo
	testkit.EventuallyTrue(t, wait, "FAILED", func() bool { st, _ = e.h.ConnectorStatus(ctx, "g"); return st.Connector.State == "FAILED" })
	if !strings.Contains(st.Connector.Trace, "3 task configs for tasks.max=2") {
		t.Fatalf("trace %q does not explain the KIP-1004 refusal", st.Connector.Trace)
	}
	if n := e.tasks.count("g"); n != 0 {
		t.Fatalf("%d tasks run for a connector that broke its limit", n)
	}
}

func TestBrokenConnectorDoesNotBlockOthers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := sinkConfig("bad", "TestSink", 1)
	bad["block.start"] = "true"
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "bad", Config: bad}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "good", Config: sinkConfig("good", "TestSink", 2)}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "the good connector's tasks", func() bool { return e.tasks.count("good") == 2 })
}

func TestLifecycleAndOffsets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "c", Config: sinkConfig("c", "TestSink", 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "c", Config: sinkConfig("c", "TestSink", 2)}); !errors.Is(err, connectapi.ErrAlreadyExists) {
		t.Fatalf("second create: %v, want already exists", err)
	}
	bad := sinkConfig("x", "TestSink", 0)
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "x", Config: bad}); !errors.Is(err, connectapi.ErrBadRequest) || !strings.Contains(err.Error(), "tasks.max") {
		t.Fatalf("invalid create: %v", err)
	}
	testkit.EventuallyTrue(t, wait, "2 tasks", func() bool { return e.tasks.count("c") == 2 })

	// A failing task goes FAILED with its trace; a restart brings it back.
	e.tasks.fail(store.TaskID{Connector: "c", Task: 1}, errors.New("disk full"))
	testkit.EventuallyTrue(t, wait, "task 1 FAILED", func() bool {
		ts, _ := e.h.TaskStatus(ctx, connectapi.ConnectorTaskID{Connector: "c", Task: 1})
		return ts.State == "FAILED" && ts.Trace == "disk full"
	})
	if _, err := e.h.RestartConnector(ctx, "c", true, true); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "task 1 restarted", func() bool {
		ts, _ := e.h.TaskStatus(ctx, connectapi.ConnectorTaskID{Connector: "c", Task: 1})
		return ts.State == "RUNNING" && e.tasks.count("c") == 2
	})

	if _, err := e.h.AlterOffsets(ctx, "c", connectapi.ConnectorOffsets{Offsets: []connectapi.ConnectorOffset{{}}}); !errors.Is(err, connectapi.ErrBadRequest) {
		t.Fatalf("alter offsets while running: %v, want 400", err)
	}
	if err := e.h.Pause(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "PAUSED", func() bool {
		st, _ := e.h.ConnectorStatus(ctx, "c")
		return st.Connector.State == "PAUSED" && len(st.Tasks) == 2 && st.Tasks[0].State == "PAUSED" && e.tasks.count("c") == 0
	})
	if err := e.h.Stop(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "STOPPED without tasks", func() bool {
		st, _ := e.h.ConnectorStatus(ctx, "c")
		return st.Connector.State == "STOPPED" && len(st.Tasks) == 0
	})
	msg, err := e.h.AlterOffsets(ctx, "c", connectapi.ConnectorOffsets{Offsets: []connectapi.ConnectorOffset{{
		Partition: map[string]any{"kafka_topic": "events", "kafka_partition": float64(2)},
		Offset:    map[string]any{"kafka_offset": float64(42)},
	}}})
	if err != nil || !strings.Contains(msg.Message, "altered successfully") {
		t.Fatalf("alter: %v %v", msg, err)
	}
	offs, err := e.h.Offsets(ctx, "c")
	if err != nil || len(offs.Offsets) != 1 || offs.Offsets[0].Offset["kafka_offset"] != int64(42) {
		t.Fatalf("offsets = %+v, %v", offs, err)
	}
	if _, err := e.h.ResetOffsets(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if offs, _ := e.h.Offsets(ctx, "c"); len(offs.Offsets) != 0 {
		t.Fatalf("offsets after reset = %+v", offs)
	}
	if err := e.h.Resume(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "running again", func() bool { return e.tasks.count("c") == 2 })
	if err := e.h.DeleteConnector(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "tasks gone after delete", func() bool { return e.tasks.count("c") == 0 })
	if _, err := e.h.ConnectorStatus(ctx, "c"); !errors.Is(err, connectapi.ErrNotFound) {
		t.Fatalf("status after delete: %v", err)
	}
}

// TestAssignmentIsAnInput: without AssignAll the herder runs exactly what
// SetAssignment gives it (the seam for group membership), and a change of
// assignment stops only the tasks that left and starts only those that came.
func TestAssignmentIsAnInput(t *testing.T) {
	e := newEnvWith(t, false)
	ctx := context.Background()
	e.h.SetLeader(true, "http://w1:8083")
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "s", Config: sinkConfig("s", "TestSink", 4)}); err != nil {
		t.Fatal(err)
	}
	testkit.Consistently(t, 200*time.Millisecond, "nothing is assigned: nothing runs, no task configs are written", func() (bool, string) {
		n, cfgs := e.tasks.count("s"), len(e.cfgs.TaskConfigs("s"))
		return n == 0 && cfgs == 0, fmt.Sprintf("%d tasks run, %d task configs written", n, cfgs)
	})
	e.h.SetAssignment(Assignment{Generation: 1, Connectors: []string{"s"}})
	testkit.EventuallyTrue(t, wait, "task configs from the assigned connector", func() bool { return len(e.cfgs.TaskConfigs("s")) == 4 })
	if n := e.tasks.count("s"); n != 0 {
		t.Fatalf("%d tasks run though none is assigned", n)
	}
	id := func(i int) store.TaskID { return store.TaskID{Connector: "s", Task: i} }
	e.h.SetAssignment(Assignment{Generation: 2, Connectors: []string{"s"}, Tasks: []store.TaskID{id(0), id(1)}})
	testkit.EventuallyTrue(t, wait, "tasks 0 and 1", func() bool { return e.tasks.count("s") == 2 })
	e.h.SetAssignment(Assignment{Generation: 3, Connectors: []string{"s"}, Tasks: []store.TaskID{id(1), id(2), id(3)}})
	testkit.EventuallyTrue(t, wait, "tasks 1, 2 and 3", func() bool {
		e.tasks.mu.Lock()
		defer e.tasks.mu.Unlock()
		_, has0 := e.tasks.running[id(0)]
		return !has0 && len(e.tasks.running) == 3
	})
	e.tasks.mu.Lock()
	starts := e.tasks.starts[id(1)]
	e.tasks.mu.Unlock()
	if starts != 1 {
		t.Errorf("task 1 kept its worker but was started %d times", starts)
	}
	testkit.EventuallyTrue(t, wait, "task 0 UNASSIGNED", func() bool {
		st, _ := e.h.TaskStatus(ctx, connectapi.ConnectorTaskID{Connector: "s", Task: 0})
		return st.State == connectapi.StateUnassigned
	})
	st, _ := e.h.TaskStatus(ctx, connectapi.ConnectorTaskID{Connector: "s", Task: 2})
	if st.WorkerID != "w1:8083" {
		t.Errorf("task 2 status names worker %q", st.WorkerID)
	}
	// A follower does not write: it refuses writes with the leader's URL.
	e.h.SetLeader(false, "http://leader:8083")
	var nl *connectapi.NotLeaderError
	if err := e.h.Pause(ctx, "s"); !errors.As(err, &nl) || nl.LeaderURL != "http://leader:8083" {
		t.Fatalf("pause on a follower: %v", err)
	}
}

func TestSourceOffsetsWhileStopped(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cfg := map[string]string{"name": "src", "connector.class": "TestSource", "tasks.max": "5"}
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "src", Config: cfg, InitialState: connectapi.InitialStopped}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "STOPPED", func() bool {
		st, _ := e.h.ConnectorStatus(ctx, "src")
		return st.Connector.State == "STOPPED"
	})
	if n := e.tasks.count("src"); n != 0 {
		t.Fatalf("%d tasks of a connector created STOPPED", n)
	}
	part := map[string]any{"file": "/a"}
	if _, err := e.h.AlterOffsets(ctx, "src", connectapi.ConnectorOffsets{Offsets: []connectapi.ConnectorOffset{{Partition: part, Offset: map[string]any{"position": float64(7)}}}}); err != nil {
		t.Fatal(err)
	}
	offs, err := e.h.Offsets(ctx, "src")
	if err != nil || len(offs.Offsets) != 1 || offs.Offsets[0].Offset["position"] != float64(7) {
		t.Fatalf("offsets = %+v, %v", offs, err)
	}
	// Offsets stored while stopped are what the tasks read once resumed.
	if err := e.h.Resume(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "2 tasks (natural limit Files)", func() bool { return e.tasks.count("src") == 2 })
	lim, _ := e.h.Limits(ctx, "src")
	if lim.Reason != "Files" || lim.EffectiveTasks != 2 || lim.TasksMax != 5 {
		t.Fatalf("limits = %+v", lim)
	}
	if _, err := e.h.ResetOffsets(ctx, "src"); !errors.Is(err, connectapi.ErrBadRequest) {
		t.Fatalf("reset while running: %v, want 400", err)
	}
	if err := e.h.Stop(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "no tasks", func() bool {
		st, _ := e.h.ConnectorStatus(ctx, "src")
		return st.Connector.State == "STOPPED" && len(st.Tasks) == 0 && e.tasks.count("src") == 0
	})
	if _, err := e.h.ResetOffsets(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	if offs, _ := e.h.Offsets(ctx, "src"); len(offs.Offsets) != 0 {
		t.Fatalf("offsets after reset = %+v", offs)
	}
}

// TestPauseInPlace: tasks that can pause keep running paused (their
// partitions and offsets stay) and resume without a restart.
func TestPauseInPlace(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cfg := sinkConfig("p", "TestSink", 2)
	cfg["pausable"] = "true"
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "p", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "2 tasks", func() bool { return e.tasks.count("p") == 2 })
	task0 := func() *pausableTask {
		e.tasks.mu.Lock()
		defer e.tasks.mu.Unlock()
		return e.tasks.pausable[store.TaskID{Connector: "p", Task: 0}]
	}
	if err := e.h.Pause(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "tasks paused in place", func() bool {
		st, _ := e.h.ConnectorStatus(ctx, "p")
		return st.Connector.State == "PAUSED" && len(st.Tasks) == 2 && st.Tasks[0].State == "PAUSED" && st.Tasks[1].State == "PAUSED" && task0().isPaused()
	})
	if n := e.tasks.count("p"); n != 2 {
		t.Fatalf("%d tasks run while paused; pausable tasks must stay", n)
	}
	if err := e.h.Resume(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "tasks resumed", func() bool {
		st, _ := e.h.ConnectorStatus(ctx, "p")
		return st.Connector.State == "RUNNING" && st.Tasks[0].State == "RUNNING" && !task0().isPaused()
	})
	e.tasks.mu.Lock()
	starts := e.tasks.starts[store.TaskID{Connector: "p", Task: 0}]
	e.tasks.mu.Unlock()
	if starts != 1 {
		t.Fatalf("task 0 started %d times; pause and resume must not restart it", starts)
	}
}

func (f *fakeTasks) isRunning(id store.TaskID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.running[id]
	return ok
}

func TestApplyAssignmentWaitsForRevokedTasksToStop(t *testing.T) {
	e := newEnvWith(t, false)
	ctx := context.Background()
	e.h.SetLeader(true, "http://w1:8083")
	cfg := sinkConfig("s", "TestSink", 2)
	cfg["slow.stop"] = "true"
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "s", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	t0, t1 := store.TaskID{Connector: "s", Task: 0}, store.TaskID{Connector: "s", Task: 1}
	e.h.SetAssignment(Assignment{Generation: 1, Connectors: []string{"s"}})
	testkit.EventuallyTrue(t, wait, "task configs", func() bool { return len(e.cfgs.TaskConfigs("s")) == 2 })
	e.h.SetAssignment(Assignment{Generation: 2, Connectors: []string{"s"}, Tasks: []store.TaskID{t0, t1}})
	testkit.EventuallyTrue(t, wait, "2 tasks", func() bool { return e.tasks.count("s") == 2 })

	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := e.h.ApplyAssignment(actx, Assignment{Generation: 3, Connectors: []string{"s"}, Tasks: []store.TaskID{t0}}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if e.tasks.isRunning(t1) {
		t.Fatalf("ApplyAssignment returned after %v with the revoked task still running", took)
	}
	if took < 200*time.Millisecond {
		t.Errorf("ApplyAssignment returned after %v, before the revoked task's 200ms stop", took)
	}
	if !e.tasks.isRunning(t0) {
		t.Error("the kept task was stopped")
	}
	e.tasks.mu.Lock()
	n := e.tasks.starts[t0]
	e.tasks.mu.Unlock()
	if n != 1 {
		t.Errorf("kept task started %d times, want 1", n)
	}
	if a := e.h.Assignment(); a.Generation != 3 || len(a.Tasks) != 1 {
		t.Errorf("Assignment() = %+v", a)
	}
}

func TestWritesWaitForARebalanceThenConflict(t *testing.T) {
	e := newEnvWith(t, false)
	ctx := context.Background()
	e.h.SetLeader(true, "http://w1:8083")
	e.h.opts.RebalanceWait = 100 * time.Millisecond
	e.h.SetRebalancing(true)
	_, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "a", Config: sinkConfig("a", "TestSink", 1)})
	if connectapi.StatusCode(err) != 409 || !errors.Is(err, connectapi.ErrRebalanceInProgress) || err.Error() != connectapi.MessageRebalance {
		t.Fatalf("write during a rebalance: %v (status %d), want 409 %q", err, connectapi.StatusCode(err), connectapi.MessageRebalance)
	}
	// A write that arrives during a short rebalance waits and goes through.
	e.h.opts.RebalanceWait = 5 * time.Second
	done := make(chan error, 1)
	go func() {
		_, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "b", Config: sinkConfig("b", "TestSink", 1)})
		done <- err
	}()
	testkit.Consistently(t, 50*time.Millisecond, "the write waits while the rebalance lasts", func() (bool, string) {
		select {
		case err := <-done:
			return false, fmt.Sprintf("write finished during the rebalance: %v", err)
		default:
			return true, ""
		}
	})
	e.h.SetRebalancing(false)
	if err := <-done; err != nil {
		t.Fatalf("write after the rebalance: %v", err)
	}
	// A follower refuses with the leader's URL, so REST forwards.
	e.h.SetLeader(false, "http://w2:8083")
	_, err = e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "c", Config: sinkConfig("c", "TestSink", 1)})
	var nl *connectapi.NotLeaderError
	if !errors.As(err, &nl) || nl.LeaderURL != "http://w2:8083" {
		t.Errorf("follower write: %v, want NotLeaderError with the leader URL", err)
	}
}
