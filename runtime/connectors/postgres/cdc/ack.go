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

import "github.com/conveyor-dev/conveyor/runtime/plugin"

// compactAt is how many popped entries the queue of an ackedPrefix keeps
// in front before it moves the rest down.
const compactAt = 1024

// ackedPrefix follows records handed out in order and acknowledged in any
// order (Kafka acknowledges each partition on its own) and knows the
// source offset of the last record acknowledged together with every record
// handed out before it: the offset the runner stores for the connector's
// one source partition. It holds the records in flight, which the runner
// bounds.
type ackedPrefix struct {
	queue []*plugin.SourceRecord // handed out and not yet in the prefix, from head on
	head  int
	// early holds records acknowledged before an earlier one.
	early map[*plugin.SourceRecord]struct{}
	// last is the source offset of the prefix's last record; nil before
	// the first.
	last map[string]any
}

func (a *ackedPrefix) handedOut(recs []*plugin.SourceRecord) {
	a.queue = append(a.queue, recs...)
}

// acked notes an acknowledged record (one that was handed out).
func (a *ackedPrefix) acked(rec *plugin.SourceRecord) {
	if a.head >= len(a.queue) || a.queue[a.head] != rec {
		if a.early == nil {
			a.early = map[*plugin.SourceRecord]struct{}{}
		}
		a.early[rec] = struct{}{}
		return
	}
	a.pop()
	for a.head < len(a.queue) {
		next := a.queue[a.head]
		if _, ok := a.early[next]; !ok {
			break
		}
		delete(a.early, next)
		a.pop()
	}
	switch {
	case a.head == len(a.queue):
		a.queue, a.head = a.queue[:0], 0
	case a.head >= compactAt && 2*a.head >= len(a.queue):
		n := copy(a.queue, a.queue[a.head:])
		clear(a.queue[n:])
		a.queue, a.head = a.queue[:n], 0
	}
}

// pop moves the head record into the prefix, letting go of the record.
func (a *ackedPrefix) pop() {
	a.last = a.queue[a.head].SourceOffset
	a.queue[a.head] = nil
	a.head++
}
