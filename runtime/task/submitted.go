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
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// submitted tracks the records a source task handed to the producer, per
// source partition in submission order, and tells which offset of each
// source partition is committable: the offset of the latest record that was
// acknowledged together with every record submitted before it in the same
// source partition (Kafka Connect's SubmittedRecords).
//
// Its size is bounded by the caller: the runner stops polling while
// pending() is at the limit.
type submitted struct {
	mu      sync.Mutex
	parts   map[string]*partQueue
	pending int // records submitted and not yet popped as committable
	// acked holds acknowledged records, in acknowledgement order, until the
	// runner hands them to the task's CommitRecord.
	acked   []ackedRecord
	changed chan struct{}
	// skipAcked: the task skips CommitRecord, so acknowledged records are
	// not kept for it (plugin.RecordCommitSkipper).
	skipAcked bool
}

type partQueue struct {
	partition map[string]any
	// queue[head:] are the tracked records in submission order; the
	// popped head is reused (see push) rather than resliced away, which
	// made append copy the whole queue into a new array every few
	// thousand records.
	queue []*submittedRecord
	head  int
	// committable is the latest offset whose record and all earlier ones
	// were acknowledged; nil when none since the last snapshot.
	committable map[string]any
	dirty       bool
}

type submittedRecord struct {
	record *plugin.SourceRecord
	offset map[string]any
	acked  bool
	q      *partQueue
	// bufs, when set, holds the entry; it is told when the entry left the
	// tracker so the memory can serve a later batch.
	bufs *sendBuffers
}

type ackedRecord struct {
	record   *plugin.SourceRecord
	metadata *plugin.RecordMetadata
}

func newSubmitted() *submitted {
	return &submitted{parts: map[string]*partQueue{}, changed: make(chan struct{}, 1)}
}

// submit registers a record of source partition key (with its partition and
// offset maps) in submission order and returns the handle to ack it with.
func (s *submitted) submit(key string, rec *plugin.SourceRecord) *submittedRecord {
	return s.submitBatch([]pendingRecord{{key: key, rec: rec}})[0]
}

// pendingRecord is a record about to be submitted under its partition key.
type pendingRecord struct {
	key string
	rec *plugin.SourceRecord
}

// submitBatch registers records in order under one lock and returns their
// handles (one allocation for the batch).
func (s *submitted) submitBatch(recs []pendingRecord) []*submittedRecord {
	rcs := make([]recordContext, len(recs))
	s.submitInto(rcs, recs, nil)
	out := make([]*submittedRecord, len(recs))
	for i := range rcs {
		out[i] = &rcs[i].sub
	}
	return out
}

// submitInto is submitBatch into the tracker entries of out (len(recs)
// records' contexts; their Context fields are left alone), which tell bufs
// (when not nil) as they leave the tracker.
func (s *submitted) submitInto(out []recordContext, recs []pendingRecord, bufs *sendBuffers) {
	out = out[:len(recs)]
	s.mu.Lock()
	defer s.mu.Unlock()
	var q *partQueue
	lastKey := ""
	for i, p := range recs {
		if q == nil || p.key != lastKey {
			q = s.parts[p.key]
			if q == nil {
				q = &partQueue{partition: p.rec.SourcePartition}
				s.parts[p.key] = q
			}
			lastKey = p.key
		}
		sr := &out[i].sub
		*sr = submittedRecord{offset: p.rec.SourceOffset, q: q, bufs: bufs}
		if !s.skipAcked {
			// Kept for CommitRecord; otherwise the polled records (values,
			// payloads) are garbage as soon as they were converted.
			sr.record = p.rec
		}
		q.push(sr)
	}
	s.pending += len(recs)
}

// push appends a record to the queue, first moving the tracked records to
// the front when the array is full and at least half of it was popped (so
// each record is moved at most once on average; otherwise append grows it).
func (q *partQueue) push(sr *submittedRecord) {
	if len(q.queue) == cap(q.queue) && q.head > 0 && q.head >= len(q.queue)/2 {
		n := copy(q.queue, q.queue[q.head:])
		clear(q.queue[n:])
		q.queue, q.head = q.queue[:n], 0
	}
	q.queue = append(q.queue, sr)
}

// ack marks a record acknowledged by the broker and advances the committable
// offset of its source partition over every acknowledged record at the head.
// kr is the produced record (nil in tests); its metadata is only built
// when the record is kept for CommitRecord.
func (s *submitted) ack(r *submittedRecord, kr *kgo.Record) {
	var meta *plugin.RecordMetadata
	if !s.skipAcked && kr != nil {
		meta = &plugin.RecordMetadata{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Timestamp: kr.Timestamp}
	}
	s.mu.Lock()
	r.acked = true
	if !s.skipAcked {
		s.acked = append(s.acked, ackedRecord{record: r.record, metadata: meta})
	}
	q := r.q
	n := 0
	for q.head+n < len(q.queue) && q.queue[q.head+n].acked {
		sr := q.queue[q.head+n]
		q.committable = sr.offset
		q.dirty = true
		n++
		if sr.bufs != nil {
			// Last use of sr: its batch's buffers may be reused once this
			// lock is released.
			sr.bufs.popped()
		}
	}
	if n > 0 {
		clear(q.queue[q.head : q.head+n])
		q.head += n
		if q.head == len(q.queue) {
			q.queue, q.head = q.queue[:0], 0
		}
		s.pending -= n
	}
	s.mu.Unlock()
	// Wake the runner only when something it waits for changed: records
	// left the tracker, or one more waits for CommitRecord. An ack behind
	// an unacknowledged record (common: Kafka partitions acknowledge out of
	// the source's order) changes neither.
	if n > 0 || !s.skipAcked {
		s.signalChanged()
	}
}

// inFlight returns how many records were submitted and are not yet
// committable or not yet handed to CommitRecord.
func (s *submitted) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.pending, len(s.acked))
}

// drainAcked returns the acknowledged records not yet handed to the task.
func (s *submitted) drainAcked(buf []ackedRecord) []ackedRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf = append(buf[:0], s.acked...)
	clear(s.acked)
	s.acked = s.acked[:0]
	return buf
}

// committableOffsets returns the committable offsets that changed since the
// last call, keyed like submit. The returned entries are marked clean; call
// restore with them when writing them failed.
func (s *submitted) committableOffsets() map[string]SourceOffset {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]SourceOffset{}
	for k, q := range s.parts {
		if q.dirty {
			out[k] = SourceOffset{Partition: q.partition, Offset: q.committable}
			q.dirty = false
		}
		if q.head == len(q.queue) && !q.dirty {
			delete(s.parts, k) // nothing left to track; keep the map small
		}
	}
	return out
}

// restore marks offsets dirty again after writing them failed, unless a
// newer committable offset replaced them meanwhile.
func (s *submitted) restore(offsets map[string]SourceOffset) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range offsets {
		q := s.parts[k]
		if q == nil {
			q = &partQueue{partition: o.Partition, committable: o.Offset}
			s.parts[k] = q
		}
		if !q.dirty {
			q.committable = o.Offset
			q.dirty = true
		}
	}
}

// signalChanged wakes a runner waiting for acknowledgements.
func (s *submitted) signalChanged() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}
