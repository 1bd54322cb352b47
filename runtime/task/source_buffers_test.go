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
	"testing"
)

// drainPool empties p's free sets and returns their capacities (records,
// arena bytes).
func drainPool(p *sendPool) (sets []*sendBuffers, records, arena int) {
	sets, p.free = p.free, nil
	for _, b := range sets {
		records += cap(b.krs)
		arena += cap(b.arena)
	}
	return sets, records, arena
}

// A source that polled a few large catch-up batches and small ones since
// keeps no set of the large size: the pool follows recent batches.
func TestSendPoolLetsGoOfSetsLargerThanRecentBatches(t *testing.T) {
	p := newSendPool()
	ctx := context.Background()
	var big []*sendBuffers
	for range sendPoolSets {
		big = append(big, p.get(ctx, 1000))
	}
	for _, b := range big {
		p.put(b)
	}
	sets, records, _ := drainPool(p)
	if len(sets) != sendPoolSets || records < sendPoolSets*1000 {
		t.Fatalf("after batches of 1000 the pool kept %d sets of %d records in all, want %d sets of 1000 (recent batches are that large)", len(sets), records, sendPoolSets)
	}
	for _, b := range sets {
		p.put(b)
	}
	// Batches of 10 from now on, up to four in flight at once.
	for range 40 {
		var inFlight []*sendBuffers
		for range sendPoolSets {
			b := p.get(ctx, 10)
			if cap(b.krs) < 10 {
				t.Fatalf("a set of %d records for a batch of 10", cap(b.krs))
			}
			inFlight = append(inFlight, b)
		}
		for _, b := range inFlight {
			p.put(b)
		}
	}
	sets, records, arena := drainPool(p)
	limit := 2 * sendPoolFloor
	for _, b := range sets {
		if cap(b.krs) > limit || cap(b.arena) > 2*p.arenaHint*limit {
			t.Errorf("after 160 batches of 10 the pool keeps a set of %d records and %d arena bytes, want at most %d records (twice the floor)", cap(b.krs), cap(b.arena), limit)
		}
	}
	t.Logf("after 160 batches of 10: %d sets kept, %d records, %d arena bytes (recent estimate %d)", len(sets), records, arena, p.recent.Load())
}

// Batches of varying size within a few times the floor reuse the kept
// sets: the sender allocates nothing per batch once the pool is warm.
func TestSendPoolReusesSetsForSimilarBatches(t *testing.T) {
	p := newSendPool()
	ctx := context.Background()
	sizes := []int{100, 90, 120, 80, 110, 60, 115}
	cycle := func() {
		for _, n := range sizes {
			b := p.get(ctx, n)
			b.arena = b.arena[:n*p.arenaHint/2] // half used
			p.put(b)
		}
	}
	cycle()
	if allocs := testing.AllocsPerRun(100, cycle); allocs != 0 {
		t.Fatalf("%.1f allocations per cycle of %d batches of 60 to 120 records, want 0", allocs, len(sizes))
	}
}

// A source of small batches gets small sets: a set is sized to recent
// batches, not to the floor under which sets are kept.
func TestSendPoolSizesSetsToSmallBatches(t *testing.T) {
	p := newSendPool()
	for range 10 {
		b := p.get(context.Background(), 2)
		if cap(b.krs) > 2 || cap(b.arena) > 2*p.arenaHint {
			t.Fatalf("a set of %d records and %d arena bytes for batches of 2", cap(b.krs), cap(b.arena))
		}
		p.put(b)
	}
}

// Small batches in flight next to a large one get small sets: a batch is
// not carried in a free set many times its size.
func TestSendPoolFitsSetsToTheBatch(t *testing.T) {
	p := newSendPool()
	ctx := context.Background()
	big := p.get(ctx, 1000)
	p.put(big)
	for i := range 3 { // few enough that 1000 is still a recent size
		b := p.get(ctx, 5)
		if b == big || cap(b.krs) > 4*5 {
			t.Fatalf("batch %d of 5 records got a set of %d", i, cap(b.krs))
		}
		p.put(b)
	}
	if b := p.get(ctx, 900); b != big {
		t.Fatalf("a batch of 900 got a new set of %d, not the free one of %d", cap(b.krs), cap(big.krs))
	}
}
