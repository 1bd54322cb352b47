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
	"math/rand/v2"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
)

// murmur2 matches the values of Kafka's Utils.murmur2 (as Java ints).
func TestMurmur2KafkaValues(t *testing.T) {
	for key, want := range map[string]int32{
		"1": -1993445489, "12": 126087238, "123": -267702483, "1234": -1614185708, "12345": -1188365604,
	} {
		if got := int32(murmur2([]byte(key))); got != want {
			t.Errorf("murmur2(%q) = %d, Kafka gives %d", key, got, want)
		}
	}
}

// The source partitioner puts every keyed record where kgo's default
// (Kafka's murmur2) partitioner puts it: random keys of every length from
// 0 to 300, at unaligned offsets, over partition counts up to 2^31-1
// (which shows all 31 bits of the hash).
func TestSourcePartitionerMatchesKafka(t *testing.T) {
	ours := newSourcePartitioner().ForTopic("t")
	kafka := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 310)
	counts := []int{1, 2, 3, 7, 12, 64, 1000, 1 << 30, 0x7fffffff}
	for length := 0; length <= 300; length++ {
		for range 40 {
			off := rng.IntN(8)
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			key := buf[off : off+length : off+length]
			for _, n := range counts {
				r := &kgo.Record{Partition: -1, Key: key}
				want := kafka.Partition(&kgo.Record{Partition: -1, Key: key}, n)
				if got := ours.Partition(r, n); got != want {
					t.Fatalf("key %x over %d partitions: partition %d, kgo's partitioner gives %d", key, n, got, want)
				}
			}
		}
	}
}

// Records without a key stay on one partition until a new batch, as with
// kgo's sticky partitioner, and are spread over batches.
func TestSourcePartitionerNilKeySticky(t *testing.T) {
	tp := newSourcePartitioner().ForTopic("t")
	seen := map[int]bool{}
	for range 200 {
		first := tp.Partition(&kgo.Record{Partition: -1}, 8)
		for range 5 {
			if p := tp.Partition(&kgo.Record{Partition: -1}, 8); p != first {
				t.Fatalf("record without a key went to %d, batch's partition is %d", p, first)
			}
		}
		seen[first] = true
		tp.(kgo.TopicPartitionerOnNewBatch).OnNewBatch()
	}
	if len(seen) < 2 {
		t.Fatalf("200 batches without keys all went to partitions %v", seen)
	}
}

// A record whose context carries its key's hash (taken by sendBatch) is
// partitioned by that hash; without one, by hashing its key.
func TestSourcePartitionerUsesRecordHash(t *testing.T) {
	tp := newSourcePartitioner().ForTopic("t")
	key := []byte("user-42")
	rc := &recordContext{Context: context.Background(), keyHash: 0x80000003, hashed: true}
	if p := tp.Partition(&kgo.Record{Partition: -1, Key: key, Context: rc}, 8); p != 3 {
		t.Fatalf("record with hash 0x80000003 over 8 partitions: %d, want 3", p)
	}
	want := kgo.StickyKeyPartitioner(nil).ForTopic("t").Partition(&kgo.Record{Partition: -1, Key: key}, 1000)
	rc.hashed = false
	if p := tp.Partition(&kgo.Record{Partition: -1, Key: key, Context: rc}, 1000); p != want {
		t.Fatalf("record without a hash: partition %d, kgo's partitioner gives %d", p, want)
	}
}

// End to end: the source runner puts every record on the partition kgo's
// default partitioner picks for its (converted) key.
func TestSourceRecordsOnKafkaKeyPartitions(t *testing.T) {
	const parts = 7
	c := cluster(t, map[string]int32{"out": parts})
	src := &counterSource{topic: "out", limit: 300, batch: 40}
	newSource(t, SourceConfig{Common: common(c, newStatuses(), ID{"src", 0}, nil), Task: src, Offsets: newMemOffsets()})
	testkit.EventuallyTrue(t, 10*time.Second, "every record acknowledged", func() bool { return src.committedCount() >= 300 })
	kafka := kgo.StickyKeyPartitioner(nil).ForTopic("out")
	used := map[int32]bool{}
	for _, r := range readAll(t, c, "out", 300) {
		if r.Key == nil {
			t.Fatalf("record %s without a key", r.Value)
		}
		if want := kafka.Partition(&kgo.Record{Key: r.Key}, parts); int(r.Partition) != want {
			t.Fatalf("record with key %s on partition %d, kgo's partitioner picks %d", r.Key, r.Partition, want)
		}
		used[r.Partition] = true
	}
	if len(used) < 2 {
		t.Fatalf("300 keys all on partitions %v", used)
	}
}
