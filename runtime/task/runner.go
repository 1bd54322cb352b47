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
	"fmt"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Runner is what the herder drives; SourceRunner and SinkRunner implement it.
type Runner interface {
	// Start runs the task in its own goroutine.
	Start(ctx context.Context) error
	// Pause and Resume set the target state.
	Pause()
	Resume()
	// Stop stops gracefully within ctx's deadline, else abandons the task
	// and returns ErrStopTimeout; it returns the error that failed the task.
	Stop(ctx context.Context) error
	// State is the task's current state; Err the error that failed it.
	State() State
	Err() error
	// Done is closed once the task finished.
	Done() <-chan struct{}
}

var (
	_ Runner = (*SourceRunner)(nil)
	_ Runner = (*SinkRunner)(nil)
)

// New creates the runner for one task of a connector implemented by p, with
// a fresh plugin task instance. offsets is required for source plugins and
// ignored for sinks. Sink-specific settings take their defaults and the
// topics come from c.Config.
func New(p plugin.Plugin, c Common, offsets OffsetStore) (Runner, error) {
	switch p.Kind {
	case plugin.KindSource:
		if p.NewSourceTask == nil {
			return nil, fmt.Errorf("plugin %s has no source task", p.Class)
		}
		return NewSourceRunner(SourceConfig{Common: c, Task: p.NewSourceTask(), Offsets: offsets})
	case plugin.KindSink:
		if p.NewSinkTask == nil {
			return nil, fmt.Errorf("plugin %s has no sink task", p.Class)
		}
		return NewSinkRunner(SinkConfig{Common: c, Task: p.NewSinkTask()})
	}
	return nil, fmt.Errorf("plugin %s: unknown kind %q", p.Class, p.Kind)
}
