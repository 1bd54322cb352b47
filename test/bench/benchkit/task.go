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

package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
)

// Task is one task of a connector run in this process by RunTask.
type Task struct {
	// Kafka are the client options (seed brokers).
	Kafka []kgo.Opt
	// Plugin implements the connector.
	Plugin plugin.Plugin
	// Connector is the connector's configuration (its "name" names the
	// task); Config the task's, Connector when nil.
	Connector, Config map[string]string
	// Offsets stores a source's offsets; required for a source.
	Offsets task.OffsetStore
}

// RunTask runs t until done says everything was written, and returns n
// records over the time from the task's RUNNING (from Start if it never
// said so). It fails when the task fails or done is not reached in five
// minutes.
func RunTask(ctx context.Context, t Task, n int, done func() (bool, error)) (float64, error) {
	var running atomic.Pointer[time.Time]
	cfg := t.Config
	if cfg == nil {
		cfg = t.Connector
	}
	r, err := task.New(task.Spec{Common: task.Common{
		ID: task.ID{Connector: t.Connector["name"]}, Config: cfg,
		Kafka: t.Kafka,
		Status: task.StatusFunc(func(_ task.ID, st task.State, _ string) {
			if st == task.StateRunning {
				now := time.Now()
				running.CompareAndSwap(nil, &now)
			}
		}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OffsetFlushInterval: 10 * time.Second, // the worker's default
	}, Plugin: t.Plugin, Connector: t.Connector, Offsets: t.Offsets})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := r.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}()
	for {
		ok, err := done()
		if err != nil {
			return 0, err
		}
		if ok {
			break
		}
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("task failed: %w", err)
		}
		if time.Since(start) > 5*time.Minute {
			return 0, errors.New("the task did not write everything in 5 minutes")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if t := running.Load(); t != nil {
		start = *t
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// Paired runs base and conn in turn, tries times, and returns the rates
// of the try with the median ratio conn/base. logf, when not nil, gets
// every try.
func Paired(name string, tries int, logf func(string, ...any), base, conn func() (float64, error)) (b, c float64, err error) {
	type try struct{ b, c float64 }
	var ts []try
	for i := 0; i < max(tries, 1); i++ {
		br, err := base()
		if err != nil {
			return 0, 0, fmt.Errorf("baseline: %w", err)
		}
		cr, err := conn()
		if err != nil {
			return 0, 0, fmt.Errorf("connector: %w", err)
		}
		if logf != nil {
			logf("%s try %d: baseline %.0f records/s, measured %.0f records/s, ratio %.3f", name, i+1, br, cr, cr/br)
		}
		ts = append(ts, try{br, cr})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].c/ts[i].b < ts[j].c/ts[j].b })
	m := ts[len(ts)/2]
	return m.b, m.c, nil
}

// Figure prints one figure as "conveyor-bench: NAME=VALUE".
func Figure(name string, v float64) { fmt.Printf("conveyor-bench: %s=%.3f\n", name, v) }
