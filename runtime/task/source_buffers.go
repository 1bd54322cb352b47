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
// again for batches that merely vary. New sets are sized to the recent
// batches, however small.
const sendPoolFloor = 64

// sendPool keeps the buffers of finished batches for the next ones, sized
// to recent batches rather than to the largest ever seen: a source that
// polled a large catch-up batch once (its worker short of CPU, say) and
// small ones since does not keep sendPoolSets sets of that size per task.
// recent is a decaying estimate of the batch size: it rises at once to a
// larger batch and falls an eighth of the way to each smaller one, so
// after a handful of small batches a set of more than twice the estimate
// is let go (when it comes back, or when it is taken) instead of kept.
type sendPool struct {
	free   chan *sendBuffers
	recent atomic.Int64 // records; written by the sender, read by put
	// arenaHint sizes a batch's serialisation buffer per record (sender
	// goroutine only).
	arenaHint int
}

func newSendPool() *sendPool {
	return &sendPool{free: make(chan *sendBuffers, sendPoolSets), arenaHint: 256}
}

// limit is the most records a kept set may hold.
func (p *sendPool) limit() int {
	return 2 * max(int(p.recent.Load()), sendPoolFloor)
}

// get returns buffers for a batch of n records: a free set that fits and
// is not oversized, or a new one sized to the recent estimate. The
// records' contexts are set up here, once: kgo may still read a context
// (its Done) after the record's promise ran, so a reused context keeps its
// Context and only its tracker entry changes.
func (p *sendPool) get(ctx context.Context, n int) *sendBuffers {
	recent := int(p.recent.Load())
	if n >= recent {
		recent = n
	} else {
		recent -= (recent - n + 7) / 8
	}
	p.recent.Store(int64(recent))
	arena := p.arenaHint * n
	select {
	case b := <-p.free:
		if cap(b.krs) >= n && cap(b.krs) <= p.limit() {
			if cap(b.arena) < arena || cap(b.arena) > 2*p.arenaHint*p.limit() {
				b.arena = make([]byte, 0, p.arenaHint*recent)
			}
			return b
		}
		// Too small for this batch or too large for recent ones: let it go.
	default:
	}
	b := &sendBuffers{krs: make([]kgo.Record, 0, recent), pend: make([]pendingRecord, 0, recent),
		rctxs: make([]recordContext, recent), arena: make([]byte, 0, p.arenaHint*recent), pool: p}
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
	select {
	case p.free <- b:
	default: // enough spare buffers; let this set go
	}
}
