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

package cdc

import (
	"math/rand/v2"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// The prefix ends at the last record acknowledged with all before it,
// whatever the acknowledgement order, and lets go of what it passed.
func TestAckedPrefix(t *testing.T) {
	recs := make([]*plugin.SourceRecord, 3000)
	for i := range recs {
		recs[i] = &plugin.SourceRecord{SourceOffset: map[string]any{"i": i}}
	}
	at := func(a *ackedPrefix) int {
		if a.last == nil {
			return -1
		}
		return a.last["i"].(int)
	}
	var a ackedPrefix
	a.handedOut(recs[:5])
	for _, step := range []struct{ ack, want int }{{1, -1}, {0, 1}, {3, 1}, {4, 1}, {2, 4}} {
		a.acked(recs[step.ack])
		if got := at(&a); got != step.want {
			t.Fatalf("after acknowledging %d: prefix ends at %d, want %d", step.ack, got, step.want)
		}
	}
	if len(a.queue) != 0 || len(a.early) != 0 {
		t.Fatalf("everything acknowledged, but %d records queued and %d early", len(a.queue)-a.head, len(a.early))
	}

	// Many records in several partitions, each acknowledged in order but
	// interleaved at random, handed out in batches meanwhile.
	rng := rand.New(rand.NewPCG(1, 2))
	const parts = 4
	next := [parts]int{}
	for p := range next {
		next[p] = 5 + p
	}
	handed := 5
	acked := map[int]bool{}
	for {
		if handed < len(recs) {
			n := min(1+rng.IntN(300), len(recs)-handed)
			a.handedOut(recs[handed : handed+n])
			handed += n
		}
		for range 100 {
			p := rng.IntN(parts)
			if next[p] >= handed {
				continue
			}
			a.acked(recs[next[p]])
			acked[next[p]] = true
			next[p] += parts
			want := 4
			for acked[want+1] {
				want++
			}
			if got := at(&a); got != want {
				t.Fatalf("prefix ends at %d, want %d", got, want)
			}
		}
		if len(acked) == len(recs)-5 {
			break
		}
	}
	if at(&a) != len(recs)-1 || len(a.early) != 0 || a.head != len(a.queue) {
		t.Fatalf("at the end: prefix at %d, %d early, head %d of %d", at(&a), len(a.early), a.head, len(a.queue))
	}
	for _, r := range a.queue[:cap(a.queue)] {
		if r != nil {
			t.Fatal("the queue still holds an acknowledged record")
		}
	}
}
