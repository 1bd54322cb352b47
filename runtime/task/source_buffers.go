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
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sendBuffers are the buffers of one batch in flight: the kgo records,
// their serialised keys and values, and the records' contexts, which hold
// their tracker entries. Once every record of the batch left the tracker
// (acknowledged, so kgo is done with it, and popped as committable), they
// go back to the runner's sendPool and serve a later batch, which keeps
// the sender from allocating about half a kilobyte per record.
type sendBuffers struct {
	krs   []kgo.Record
	pend  []pendingRecord
	rctxs []recordContext
	arena []byte
	left  atomic.Int64 // records of the batch still in the tracker
	pool  *sendPool
}

// popped is called (under the tracker's lock) when a record of the batch
// left the tracker; after the last one the buffers are free.
func (b *sendBuffers) popped() {
	if b.left.Add(-1) == 0 {
		b.pool.put(b)
	}
}

// sendPoolSets is how many free sets a runner keeps: a few cover the
// batches in flight at MaxInFlight; more would only keep memory.
const sendPoolSets = 4

// sendPoolFloor is the set size (records) up to which a set is never too
// large to keep: small sets cost little, and dropping them would allocate
// again for batches that merely vary.
const sendPoolFloor = 64

// sendPool keeps the buffers of finished batches for the next ones. What a
// runner holds follows its recent batches, not the largest it ever saw,
// and a batch's set is about the batch's size, not the size of a larger
// one before it:
//   - a new set holds n records rounded up to a power of two (within 2× of
//     the batch, and batches that vary a little share sets);
//   - get takes the smallest free set that fits the batch, and none more
//     than 4 times its size (a source whose worker waits for CPU has many
//     small batches in flight: each in a set of a large one multiplied its
//     memory); put, with every place taken, keeps a set in place of a
//     larger one;
//   - recent is a decaying estimate of the batch size: it rises at once to
//     a larger batch and falls an eighth of the way to each smaller one. A
//     set of more than twice the estimate (and more than the floor) is let
//     go, when it comes back or when get finds it free, so a source that
//     polled a large catch-up batch once and small ones since does not keep
//     sets of that size.
type sendPool struct {
	mu     sync.Mutex // put runs under the tracker's lock (acknowledgements), get on the sender
	free   []*sendBuffers
	recent atomic.Int64 // records; written by the sender, read by put
	// arenaHint sizes a batch's serialisation buffer per record (sender
	// goroutine only).
	arenaHint int
}

func newSendPool() *sendPool {
	return &sendPool{free: make([]*sendBuffers, 0, sendPoolSets), arenaHint: 256}
}

// limit is the most records a kept set may hold.
func (p *sendPool) limit() int {
	return 2 * max(int(p.recent.Load()), sendPoolFloor)
}

// get returns buffers for a batch of n records: the smallest free set that
// fits, or a new one. The records' contexts are set up here, once: kgo may
// still read a context (its Done) after the record's promise ran, so a
// reused context keeps its Context and only its tracker entry changes.
func (p *sendPool) get(ctx context.Context, n int) *sendBuffers {
	recent := int(p.recent.Load())
	if n >= recent {
		recent = n
	} else {
		recent -= (recent - n + 7) / 8
	}
	p.recent.Store(int64(recent))
	limit := p.limit()
	var b *sendBuffers
	p.mu.Lock()
	for i := 0; i < len(p.free); {
		f := p.free[i]
		if cap(f.krs) > limit { // larger than recent batches: let it go
			p.free[i] = p.free[len(p.free)-1]
			p.free[len(p.free)-1] = nil
			p.free = p.free[:len(p.free)-1]
			continue
		}
		if cap(f.krs) >= n && cap(f.krs) <= max(4*n, 16) && (b == nil || cap(f.krs) < cap(b.krs)) {
			b = f
		}
		i++
	}
	if b != nil {
		for i, f := range p.free {
			if f == b {
				p.free[i] = p.free[len(p.free)-1]
				p.free[len(p.free)-1] = nil
				p.free = p.free[:len(p.free)-1]
				break
			}
		}
	}
	p.mu.Unlock()
	if b != nil {
		if cap(b.arena) < p.arenaHint*n || cap(b.arena) > 2*p.arenaHint*cap(b.krs) {
			b.arena = make([]byte, 0, p.arenaHint*cap(b.krs))
		}
		return b
	}
	size := 1
	for size < n {
		size *= 2
	}
	b = &sendBuffers{krs: make([]kgo.Record, 0, size), pend: make([]pendingRecord, 0, size),
		rctxs: make([]recordContext, size), arena: make([]byte, 0, p.arenaHint*size), pool: p}
	for i := range b.rctxs {
		b.rctxs[i].Context = ctx
	}
	return b
}

// put keeps a finished set for a later batch, unless enough are kept or it
// is larger than recent batches need.
func (p *sendPool) put(b *sendBuffers) {
	if cap(b.krs) > p.limit() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < sendPoolSets {
		p.free = append(p.free, b)
		return
	}
	largest := 0
	for i, f := range p.free {
		if cap(f.krs) > cap(p.free[largest].krs) {
			largest = i
		}
	}
	if cap(p.free[largest].krs) > cap(b.krs) {
		p.free[largest] = b
	}
}
