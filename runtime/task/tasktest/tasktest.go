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

// Package tasktest holds the test helpers for code that runs task runners:
// the runtime's own runner tests and the connectors' pipeline tests. It
// does not import runtime/task, so the task package's internal tests may
// use it too.
package tasktest

import (
	"context"
	"testing"
	"time"
)

// Runner is what Start needs of a runner (task.Runner has it).
type Runner interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	// Err is the error that failed the runner, nil while it has not.
	Err() error
}

// StopTimeout bounds the stop at the end of a test.
const StopTimeout = 15 * time.Second

// Start starts r, as built by a constructor that returned err, and stops it
// when the test ends. A Stop that fails fails the test: the runner must end
// clean.
func Start[R Runner](t testing.TB, r R, err error) R {
	t.Helper()
	return start(t, r, err, false)
}

// StartMayFail is Start for tests of failures: a Stop that returns the
// failure the runner had already (Err) passes; any other Stop error fails
// the test.
func StartMayFail[R Runner](t testing.TB, r R, err error) R {
	t.Helper()
	return start(t, r, err, true)
}

func start[R Runner](t testing.TB, r R, err error, mayFail bool) R {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		if err := r.Stop(ctx); err != nil && !(mayFail && r.Err() != nil) {
			t.Errorf("stopping the runner: %v", err)
		}
	})
	return r
}
