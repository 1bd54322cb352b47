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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// panicSink panics where its config says: "start", "task.configs", or
// "goroutine" (a goroutine the connector starts through its context's Go).
type panicSink struct{ testSink }

func (c *panicSink) Start(ctx context.Context, cc plugin.ConnectorContext, cfg map[string]string) error {
	c.cc, c.cfg = cc, cfg
	switch cfg["panic.in"] {
	case "start":
		panic("boom in Start")
	case "goroutine":
		cc.Go(func() error {
			var m map[string]int
			m["x"]++ // assignment to entry in nil map
			return nil
		})
	}
	return nil
}

func (c *panicSink) TaskConfigs(max int) ([]map[string]string, error) {
	if c.cfg["panic.in"] == "task.configs" {
		panic("boom in TaskConfigs")
	}
	return c.testSink.TaskConfigs(max)
}

func registerPanicSink(o *Options) {
	o.Plugins.MustRegister(plugin.Plugin{Class: "test.PanicSinkConnector", Kind: plugin.KindSink,
		NewConnector: func() plugin.Connector { return &panicSink{} }, NewSinkTask: func() plugin.SinkTask { return nopSinkTask{} }})
}

// A connector that panics in Start, in TaskConfigs or on a goroutine it
// started through Go is FAILED with the panic and its stack as the
// trace; the worker (this test process) lives on, and so does the
// connector beside it.
func TestConnectorPanicsFailOnlyThatConnector(t *testing.T) {
	e := newEnvWith(t, true, registerPanicSink)
	ctx := context.Background()
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "good", Config: sinkConfig("good", "TestSink", 2)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ where, want string }{
		{"start", "starting connector: panic: boom in Start"},
		{"task.configs", "task configs: panic: boom in TaskConfigs"},
		{"goroutine", "connector goroutine: panic: assignment to entry in nil map"},
	} {
		name := "panics-in-" + strings.ReplaceAll(c.where, ".", "-")
		cfg := sinkConfig(name, "PanicSink", 1)
		cfg["panic.in"] = c.where
		if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: name, Config: cfg}); err != nil {
			t.Fatal(err)
		}
		var st connectapi.ConnectorStateInfo
		testkit.EventuallyTrue(t, wait, name+" FAILED", func() bool { st, _ = e.h.ConnectorStatus(ctx, name); return st.Connector.State == "FAILED" })
		if !strings.Contains(st.Connector.Trace, c.want) || !strings.Contains(st.Connector.Trace, "guard_test.go") {
			t.Errorf("%s: trace does not give the panic %q and its stack:\n%s", name, c.want, st.Connector.Trace)
		}
	}
	testkit.EventuallyTrue(t, wait, "the good connector's 2 tasks", func() bool { return e.tasks.count("good") == 2 })
	if st, _ := e.h.ConnectorStatus(ctx, "good"); st.Connector.State != "RUNNING" {
		t.Errorf("good is %s", st.Connector.State)
	}
}

// A crash record (a worker's previous process crashed in the connector's
// code) holds the connector FAILED: its tasks stop and do not start
// again until a restart; the connector beside it runs on. A restart
// removes the record and runs it again.
func TestCrashRecordHoldsTheConnectorUntilRestart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, n := range []string{"bad", "good"} {
		if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: n, Config: sinkConfig(n, "TestSink", 2)}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.EventuallyTrue(t, wait, "2 tasks each", func() bool { return e.tasks.count("bad") == 2 && e.tasks.count("good") == 2 })

	crash := guard.Crash{Head: "fatal error: runtime: out of memory", Connector: "bad", Task: 1, Stack: "goroutine 7 [running]:\nmain.grow()"}
	if err := e.h.RecordCrash(ctx, crash); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "bad's tasks stopped", func() bool { return e.tasks.count("bad") == 0 })
	var st connectapi.ConnectorStateInfo
	testkit.EventuallyTrue(t, wait, "bad FAILED with its tasks", func() bool {
		st, _ = e.h.ConnectorStatus(ctx, "bad")
		return st.Connector.State == "FAILED" && len(st.Tasks) == 2 && st.Tasks[0].State == "FAILED" && st.Tasks[1].State == "FAILED"
	})
	for _, want := range []string{"Held FAILED: task 1 ended the process of worker w1:8083", "fatal error: runtime: out of memory", "POST /connectors/bad/restart", "main.grow()"} {
		if !strings.Contains(st.Connector.Trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, st.Connector.Trace)
		}
	}
	if n := e.tasks.count("good"); n != 2 {
		t.Errorf("good runs %d tasks, want 2", n)
	}
	// A kick (a limit check) does not start it again.
	e.ticks <- time.Now()
	testkit.Consistently(t, 500*time.Millisecond, "bad stays held", func() (bool, string) {
		n := e.tasks.count("bad")
		return n == 0, fmt.Sprintf("%d tasks of bad run", n)
	})

	if _, err := e.h.RestartConnector(ctx, "bad", true, false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "bad runs again after the restart", func() bool { return e.tasks.count("bad") == 2 })
	if _, held := e.h.opts.Statuses.Crash("bad"); held {
		t.Error("the crash record outlived the restart")
	}
	if _, ok := e.h.opts.Statuses.Task(store.TaskID{Connector: "bad", Task: 0}); !ok {
		t.Error("no status for bad's task 0")
	}
}
