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

package redis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

// A server of the tenant's choosing that answers a write with a 2^62-byte
// bulk string makes go-redis panic (makeslice) on the task's writer
// goroutine. The goroutine runs through the context's Go: the panic fails
// the task with its stack, and the task's waits end with an error instead
// of hanging or ending the process (this test binary).
func TestRedisSinkWriterPanicFailsTheTask(t *testing.T) {
	srv, err := servers.StartHostileRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tc := plugintest.NewSinkTaskContext()
	task := &Task{}
	if err := task.Start(context.Background(), tc, map[string]string{KeyURL: "redis://" + srv.Addr}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := &plugin.SinkRecord{Topic: "t", KeySchema: data.StringSchema, Key: "k", ValueSchema: data.StringSchema, Value: "v"}
	if err := task.Put(ctx, []*plugin.SinkRecord{rec}); err != nil {
		t.Fatal(err)
	}
	if err := task.Flush(ctx, nil); !errors.Is(err, sinkwriter.ErrPanicked) {
		t.Fatalf("Flush after the writer panicked: %v, want %v", err, sinkwriter.ErrPanicked)
	}
	// Flush returns as soon as the writer's own deferred settle ran, which is
	// while the panic unwinds, before the runtime's recover records it.
	testkit.EventuallyTrue(t, 5*time.Second, "the panic recorded as the task's failure", func() bool { return len(tc.Failures.Errors()) > 0 })
	fails := tc.Failures.Errors()
	if len(fails) != 1 || !guard.IsPanic(fails[0]) || !strings.Contains(fails[0].Error(), "makeslice: len out of range") {
		t.Fatalf("task goroutine failures: %v", fails)
	}
	if tr := guard.Trace(fails[0]); !strings.Contains(tr, "go-redis") {
		t.Errorf("the trace lacks the stack through go-redis:\n%s", tr)
	}
	if srv.Writes() == 0 {
		t.Error("the hostile server saw no write")
	}
}
