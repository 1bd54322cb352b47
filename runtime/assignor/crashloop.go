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

package assignor

import (
	"maps"
	"slices"
	"time"
)

// CrashLoopGuard holds off a worker that keeps crashing more slowly than the
// lost-worker delay. Each time such a worker vanishes, its work waits the
// delay and is then released to the others; when it returns, balancing pulls
// work back onto it, and it crashes again: every cycle drags its share of
// tasks across the cluster twice. After Releases releases within Window, a
// returning worker is held off: it is assigned nothing until HoldOff after
// its last release, so its share stays where it is. A worker is never held
// off when no other active worker would be left to run the work. The zero
// value turns the guard off.
type CrashLoopGuard struct {
	Releases int
	Window   time.Duration
	HoldOff  time.Duration
}

func (g CrashLoopGuard) enabled() bool { return g.Releases > 0 && g.Window > 0 && g.HoldOff > 0 }

// UnstableWorker is a worker whose work was released to others recently.
type UnstableWorker struct {
	WorkerID string `json:"workerId"`
	// Releases are the times its work was released (it stayed away past
	// its lost-worker deadline), within the guard's window, oldest first.
	Releases []time.Time `json:"releases"`
}

// HeldOff is a worker the crash-loop guard keeps without work this round.
type HeldOff struct {
	WorkerID string
	// Until is when it may get work again (a rebalance is due then).
	Until    time.Time
	Releases int
}

// crashLoop is the guard's working state in one Assign call.
type crashLoop struct {
	guard    CrashLoopGuard
	now      time.Time
	releases map[string][]time.Time
}

func newCrashLoop(in Input) *crashLoop {
	c := &crashLoop{guard: in.CrashLoop, now: in.Now, releases: map[string][]time.Time{}}
	if !c.guard.enabled() {
		return c
	}
	for _, u := range in.Previous.Unstable {
		for _, at := range u.Releases {
			if in.Now.Sub(at) < c.guard.Window {
				c.releases[u.WorkerID] = append(c.releases[u.WorkerID], at)
			}
		}
	}
	return c
}

// released records that a lost worker's work went to the others now.
func (c *crashLoop) released(worker string) {
	if c.guard.enabled() {
		c.releases[worker] = append(c.releases[worker], c.now)
	}
}

// until returns when a present worker may get work again, and whether it
// is held off now.
func (c *crashLoop) until(worker string) (time.Time, bool) {
	r := c.releases[worker]
	if !c.guard.enabled() || len(r) < c.guard.Releases {
		return time.Time{}, false
	}
	until := slices.MaxFunc(r, time.Time.Compare).Add(c.guard.HoldOff)
	return until, c.now.Before(until)
}

// holdOff decides which of the active workers get nothing this round: those
// the guard holds off, unless that would leave no active worker, then none.
func (c *crashLoop) holdOff(active []string) map[string]HeldOff {
	out := map[string]HeldOff{}
	for _, w := range active {
		if until, held := c.until(w); held {
			out[w] = HeldOff{WorkerID: w, Until: until, Releases: len(c.releases[w])}
		}
	}
	free := 0
	for _, w := range active {
		if _, held := out[w]; !held {
			free++
		}
	}
	if free == 0 {
		return map[string]HeldOff{}
	}
	return out
}

// state returns the records to remember, sorted by worker id.
func (c *crashLoop) state() []UnstableWorker {
	var out []UnstableWorker
	for _, w := range slices.Sorted(maps.Keys(c.releases)) {
		r := slices.Clone(c.releases[w])
		slices.SortFunc(r, time.Time.Compare)
		out = append(out, UnstableWorker{WorkerID: w, Releases: r})
	}
	return out
}
