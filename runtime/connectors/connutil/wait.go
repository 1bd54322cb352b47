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

// Package connutil holds small helpers the bundled sink connectors share.
package connutil

import (
	"context"
	"sync"
)

// WaitCond waits on cond, whose lock the caller holds, while blocked
// holds; it returns ctx's cause when ctx ends first (the wait is woken
// for it), else nil. blocked is evaluated with the lock held.
func WaitCond(ctx context.Context, cond *sync.Cond, blocked func() bool) error {
	if !blocked() {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		cond.L.Lock()
		defer cond.L.Unlock()
		cond.Broadcast()
	})
	defer stop()
	for blocked() {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		cond.Wait()
	}
	return nil
}
