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

// Package guard runs plugin code so that its panics fail the connector or
// task that ran it instead of the worker process: every call into a
// connector, task, transform or converter, and every goroutine a plugin
// starts through its context's Go, goes through Call.
package guard

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// PanicError is a recovered panic of plugin code, with the stack of the
// goroutine that panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Call runs f, turning a panic into an error that wraps a *PanicError;
// what names the call ("polling source task") and prefixes f's own error
// too.
func Call(what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%s: %w", what, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Go runs f through Call on a goroutine of its own and hands a non-nil
// outcome (f's error or its panic) to fail. The goroutine ends with f.
func Go(what string, f func() error, fail func(error)) {
	go func() {
		if err := Call(what, f); err != nil {
			fail(err)
		}
	}()
}

// Trace returns the text reported as a FAILED connector's or task's trace:
// the error and, for a panic, the goroutine stack. Callers pass it through
// the connector's scrubber before it leaves the worker.
func Trace(err error) string {
	var pe *PanicError
	if errors.As(err, &pe) {
		return err.Error() + "\n\n" + string(pe.Stack)
	}
	return err.Error()
}

// IsPanic reports whether err wraps a recovered panic.
func IsPanic(err error) bool {
	var pe *PanicError
	return errors.As(err, &pe)
}
