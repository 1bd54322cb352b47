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
	"sync"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// The fencing round: with exactly-once enabled, new task configs of a
// source connector are written only after the producers of every task of
// the earlier generation were fenced, and a task count record follows
// them. Shrinking a connector from 2 tasks to 1 fences both earlier tasks
// (task 1 would otherwise never be fenced: no new instance of it starts).
// A failed fencing writes no task configs. A required connector is refused
// while the worker has exactly-once off.
func TestExactlyOnceFencesEarlierTasksBeforeNewConfigs(t *testing.T) {
	var mu sync.Mutex
	var events []string
	failFence := false
	var ep *env
	e := newEnvWith(t, true, func(o *Options) {
		o.ExactlyOnce = plugin.WorkerExactlyOnceEnabled
		o.FenceTasks = func(_ context.Context, connector string, tasks int) error {
			mu.Lock()
			defer mu.Unlock()
			if failFence {
				return fmt.Errorf("refused")
			}
			n := len(ep.cfgs.TaskConfigs(connector))
			events = append(events, fmt.Sprintf("fence %s %d (configs then: %d)", connector, tasks, n))
			return nil
		}
	})
	ep = e
	ctx := context.Background()
	src := map[string]string{"name": "src", "connector.class": "TestSource", "tasks.max": "2"}
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "src", Config: src}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "2 tasks and their task count record", func() bool {
		n, ok := e.cfgs.TaskCount("src")
		return e.tasks.count("src") == 2 && ok && n == 2
	})
	mu.Lock()
	if len(events) != 0 {
		t.Fatalf("a new connector has no earlier tasks to fence, but: %v", events)
	}
	mu.Unlock()

	src["tasks.max"] = "1"
	if _, _, err := e.h.PutConnectorConfig(ctx, "src", src); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, wait, "1 task and a task count record of 1", func() bool {
		n, ok := e.cfgs.TaskCount("src")
		return len(e.cfgs.TaskConfigs("src")) == 1 && ok && n == 1
	})
	mu.Lock()
	got := strings.Join(events, "; ")
	mu.Unlock()
	if got != "fence src 2 (configs then: 2)" {
		t.Fatalf("fencing: %q, want both earlier tasks fenced before the new configs were written", got)
	}

	mu.Lock()
	failFence = true
	mu.Unlock()
	src["tasks.max"] = "2"
	if _, _, err := e.h.PutConnectorConfig(ctx, "src", src); err != nil {
		t.Fatal(err)
	}
	testkit.Consistently(t, wait/5, "no task configs without fencing", func() (bool, string) {
		n := len(e.cfgs.TaskConfigs("src"))
		return n == 1, fmt.Sprintf("%d task configs", n)
	})

	req := map[string]string{"name": "req", "connector.class": "TestSource", plugin.KeyExactlyOnceSupport: plugin.ExactlyOnceRequired}
	_, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "req", Config: req})
	if err == nil || !strings.Contains(err.Error(), plugin.KeyExactlyOnceSupport) {
		t.Fatalf("required connector whose plugin declares no support: %v, want a refusal naming %s", err, plugin.KeyExactlyOnceSupport)
	}
}
