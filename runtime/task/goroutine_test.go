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
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// panicLater starts, through the task context's Go, a goroutine that
// panics once trigger is closed, as a writer goroutine meeting a bad
// answer would.
func panicLater(trigger chan struct{}, start func(f func() error)) {
	start(func() error {
		<-trigger
		var m map[string]int
		m["x"]++ // assignment to entry in nil map
		return nil
	})
}

type goroutineSink struct {
	*recordingSink
	trigger chan struct{}
}

func (s goroutineSink) Start(_ context.Context, tc plugin.SinkTaskContext, _ map[string]string) error {
	panicLater(s.trigger, tc.Go)
	return nil
}

type goroutineSource struct {
	*counterSource
	trigger chan struct{}
}

func (s goroutineSource) Start(ctx context.Context, tc plugin.SourceTaskContext, config map[string]string) error {
	panicLater(s.trigger, tc.Go)
	return s.counterSource.Start(ctx, tc, config)
}

// A goroutine of a sink or source task, started through the context's Go,
// that panics fails that task (FAILED, the panic and its stack as the
// trace, the plugin task stopped) instead of ending the process; the
// other connector's task runs on.
func TestTaskGoroutinePanicFailsOnlyThatTask(t *testing.T) {
	c := cluster(t, map[string]int32{"in": 1, "other": 1, "out": 1})
	st := newStatuses()
	sinkTrigger, sourceTrigger := make(chan struct{}), make(chan struct{})
	badSink := goroutineSink{newRecordingSink(), sinkTrigger}
	rs := newSink(t, SinkConfig{Common: common(c, st, ID{"bad-sink", 0}, map[string]string{"topics": "in"}), Task: badSink})
	badSource := goroutineSource{&counterSource{topic: "out", limit: 1 << 30, batch: 10}, sourceTrigger}
	rsrc := newSource(t, SourceConfig{Common: common(c, st, ID{"bad-source", 0}, nil), Task: badSource, Offsets: newMemOffsets()})
	good := newRecordingSink()
	rg := newSink(t, SinkConfig{Common: common(c, st, ID{"good", 0}, map[string]string{"topics": "other"}), Task: good})

	close(sinkTrigger)
	close(sourceTrigger)
	for _, r := range []struct {
		id   ID
		done <-chan struct{}
		st   func() State
	}{{ID{"bad-sink", 0}, rs.Done(), rs.State}, {ID{"bad-source", 0}, rsrc.Done(), rsrc.State}} {
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the task whose goroutine panicked did not finish", r.id)
		}
		if r.st() != StateFailed || st.last(r.id) != StateFailed {
			t.Fatalf("%s: state %s / reported %s, want FAILED", r.id, r.st(), st.last(r.id))
		}
		tr := st.trace(r.id)
		if !strings.Contains(tr, "task goroutine: panic: assignment to entry in nil map") || !strings.Contains(tr, "panicLater") {
			t.Errorf("%s: trace lacks the panic and its stack:\n%s", r.id, tr)
		}
	}
	if !badSink.stopped {
		t.Error("the failed sink task's plugin was not stopped")
	}
	produce(t, c, "other", "y", 20)
	testkit.EventuallyTrue(t, 10*time.Second, "the other task keeps working", func() bool { return good.distinct() == 20 })
	if rg.State() != StateRunning {
		t.Fatalf("the other task is %s", rg.State())
	}
}
