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

// Package attackconnector holds CrashSource, a connector that crashes the
// worker process it runs in: its task starts a goroutine of its own (not
// through the runtime's guard) that panics, which no recover can catch, the
// way a connector with a bug in a library's background goroutine would. It
// is compiled into the worker only with the build tag conveyor_attack (see
// runtime/bundled/attack.go), for the adversarial tier's image: it shows
// that the worker holds such a connector FAILED on every worker instead of
// moving it on to crash the next one.
package attackconnector

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// KeyCrashAfterMs is how long the task runs before its goroutine panics.
const KeyCrashAfterMs = "crash.after.ms"

// Plugin is CrashSource.
func Plugin() plugin.Plugin {
	return plugin.Plugin{
		Class:   "dev.conveyor.connect.attack.CrashSourceConnector",
		Kind:    plugin.KindSource,
		Version: "0.1.0",
		Doc:     "Test only (build tag conveyor_attack): a source whose task ends the worker process with a panic on a goroutine the runtime did not start.",
		Spec: plugin.ConfigSpec{Fields: []plugin.ConfigField{
			{Name: KeyCrashAfterMs, Type: plugin.TypeLong, Default: "1000", Importance: plugin.ImportanceLow,
				Validator: plugin.AtLeast(0), Max: 600_000, Doc: "Milliseconds the task runs before it crashes the worker."},
		}},
		NewConnector:  func() plugin.Connector { return &connector{} },
		NewSourceTask: func() plugin.SourceTask { return &task{} },
	}
}

type connector struct{ config map[string]string }

func (c *connector) Validate(context.Context, map[string]string) []plugin.FieldError { return nil }
func (c *connector) Start(_ context.Context, _ plugin.ConnectorContext, config map[string]string) error {
	c.config = config
	return nil
}
func (c *connector) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	return 1, plugin.SingleReader, nil
}
func (c *connector) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{c.config}, nil
}
func (c *connector) Stop() error { return nil }

type task struct{}

// Start starts the goroutine that crashes the process. It is started with a
// plain go statement on purpose: it inherits the task goroutine's labels
// (which name the connector in the runtime's crash report) but no recover.
func (t *task) Start(_ context.Context, _ plugin.SourceTaskContext, config map[string]string) error {
	ms, err := strconv.ParseInt(config[KeyCrashAfterMs], 10, 64)
	if err != nil {
		ms = 1000
	}
	go func() {
		<-time.After(time.Duration(ms) * time.Millisecond)
		panic(fmt.Sprintf("CrashSource: crashing the worker after %d ms, on a goroutine the runtime did not start", ms))
	}()
	return nil
}

func (t *task) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
	return nil, nil
}
func (t *task) CommitRecord(*plugin.SourceRecord, *plugin.RecordMetadata) error { return nil }
func (t *task) Commit(context.Context) error                                    { return nil }
func (t *task) Stop() error                                                     { return nil }
