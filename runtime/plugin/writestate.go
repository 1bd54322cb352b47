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

package plugin

import (
	"context"
	"errors"
	"sync"
)

// WriteState is how a sink task that writes on goroutines of its own
// hands their failures to Put and Flush, and how Put and Flush wait for
// those goroutines. Every field and method is used with the task's mutex
// (Cond.L) held, and Cond is broadcast on every change of what a wait
// depends on.
type WriteState struct {
	// Cond is on the task's mutex.
	Cond *sync.Cond
	// Failure is a retriable failure of a write that the next Put or Flush
	// returns, once; the writers start nothing new until one has.
	Failure error
	// Fatal is returned by every later Put and Flush: the task fails.
	Fatal error
	// Stopped is set by Stop.
	Stopped bool
}

// WaitWhile waits while pending holds and there is no failure to report.
// It returns ctx's cause when ctx ends first, and an error once the task
// is stopped (with no failure to report).
func (w *WriteState) WaitWhile(ctx context.Context, pending func() bool) error {
	blocked := func() bool { return pending() && w.Failure == nil && w.Fatal == nil && !w.Stopped }
	if blocked() {
		stop := context.AfterFunc(ctx, w.Wake)
		defer stop()
		for blocked() {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			w.Cond.Wait()
		}
	}
	if w.Stopped && w.Fatal == nil && w.Failure == nil {
		return errors.New("the task is stopped")
	}
	return nil
}

// TakeFailure returns the failure Put or Flush must report: the fatal one
// every time, a retriable one once (the writers then resume).
func (w *WriteState) TakeFailure() error {
	if w.Fatal != nil {
		return w.Fatal
	}
	err := w.Failure
	if err != nil {
		w.Failure = nil
		w.Cond.Broadcast()
	}
	return err
}

// Wake broadcasts Cond, taking the mutex: for timers and context
// callbacks, which run without it.
func (w *WriteState) Wake() {
	w.Cond.L.Lock()
	defer w.Cond.L.Unlock()
	w.Cond.Broadcast()
}
