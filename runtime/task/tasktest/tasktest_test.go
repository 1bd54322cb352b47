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

package tasktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// recorder is a testing.TB whose cleanups run when the test says and
// whose errors are collected.
type recorder struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recorder) end() {
	for _, f := range r.cleanups {
		f()
	}
}

type fakeRunner struct {
	started      bool
	stopErr, err error
}

func (f *fakeRunner) Start(context.Context) error { f.started = true; return nil }
func (f *fakeRunner) Stop(context.Context) error  { return f.stopErr }
func (f *fakeRunner) Err() error                  { return f.err }

func TestStartStopsAtTheEndAndReportsAFailedStop(t *testing.T) {
	failed := errors.New("task failed")
	for _, tc := range []struct {
		name    string
		mayFail bool
		r       *fakeRunner
		wantErr bool
	}{
		{"clean stop", false, &fakeRunner{}, false},
		{"stop fails", false, &fakeRunner{stopErr: failed}, true},
		{"stop returns the failure, strict", false, &fakeRunner{stopErr: failed, err: failed}, true},
		{"stop returns the failure, may fail", true, &fakeRunner{stopErr: failed, err: failed}, false},
		{"stop fails without a failure, may fail", true, &fakeRunner{stopErr: failed}, true},
	} {
		rec := &recorder{TB: t}
		if tc.mayFail {
			StartMayFail(rec, tc.r, nil)
		} else {
			Start(rec, tc.r, nil)
		}
		if !tc.r.started || len(rec.cleanups) != 1 {
			t.Fatalf("%s: started %v, %d cleanups", tc.name, tc.r.started, len(rec.cleanups))
		}
		rec.end()
		if got := len(rec.errs) > 0; got != tc.wantErr {
			t.Errorf("%s: test failed %v (%v), want %v", tc.name, got, rec.errs, tc.wantErr)
		}
	}
}
