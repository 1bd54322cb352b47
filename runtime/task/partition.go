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
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kgo"
)

// newSourcePartitioner returns the source producer's partitioner: a
// record's explicit partition, else Kafka's default partitioner (murmur2
// of the key; records without a key go to kgo's sticky partitioner).
func newSourcePartitioner() kgo.Partitioner {
	return explicitPartitioner{kgo.StickyKeyPartitioner(kafkaKeyHasher)}
}

// kafkaKeyHasher is Kafka's default partitioner for a keyed record:
// Utils.toPositive(Utils.murmur2(key)) % n, as kgo.KafkaHasher computes it.
func kafkaKeyHasher(key []byte, n int) int {
	return partitionOf(murmur2(key), n)
}

// partitionOf is the partition of n that Kafka's default partitioner picks
// for a key of murmur2 hash h.
func partitionOf(h uint32, n int) int {
	return int(h&0x7fffffff) % n
}

// murmur2 is Kafka's Utils.murmur2 (MurmurHash2, seed 0x9747b28c, the
// tail bytes taken little-endian). It gives kgo's hash for every input but
// loads two 4-byte words at once: keys with schemas are long (a table
// row's JSON key is about 140 bytes) and the producer hashes every one.
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 8 { // two words per load
		x := binary.LittleEndian.Uint64(b)
		b = b[8:]
		k := uint32(x) * m
		k ^= k >> r
		h = h*m ^ k*m
		k = uint32(x>>32) * m
		k ^= k >> r
		h = h*m ^ k*m
	}
	if len(b) >= 4 {
		k := binary.LittleEndian.Uint32(b)
		b = b[4:]
		k *= m
		k ^= k >> r
		h = h*m ^ k*m
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2])<<16 | uint32(b[1])<<8 | uint32(b[0])
		h *= m
	case 2:
		h ^= uint32(b[1])<<8 | uint32(b[0])
		h *= m
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// explicitPartitioner sends a record with a non-negative Partition there
// and delegates the others (Partition -1) to the key partitioner.
type explicitPartitioner struct{ next kgo.Partitioner }

func (p explicitPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	return explicitTopicPartitioner{p.next.ForTopic(t)}
}

type explicitTopicPartitioner struct{ next kgo.TopicPartitioner }

func (p explicitTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.next.RequiresConsistency(r)
}

func (p explicitTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition) // kgo fails the record when out of range
	}
	if rc, ok := r.Context.(*recordContext); ok && rc.hashed {
		return partitionOf(rc.keyHash, n) // the key's hash, taken by sendBatch
	}
	return p.next.Partition(r, n)
}

func (p explicitTopicPartitioner) OnNewBatch() {
	if nb, ok := p.next.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}
