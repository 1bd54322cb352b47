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
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// The producer settings reach the producer: records written with
// compression.type=none arrive uncompressed, by default snappy-compressed,
// with gzip gzip-compressed (the codec is in each record's batch
// attributes).
func TestSourceProducerCompression(t *testing.T) {
	for _, tc := range []struct {
		setting string
		codec   uint8 // Kafka's codec ids: 0 none, 1 gzip, 2 snappy
	}{{"", 2}, {"none", 0}, {"GZIP", 1}} {
		c := cluster(t, map[string]int32{"out": 1})
		var producer map[string]string
		if tc.setting != "" {
			producer = map[string]string{"compression.type": tc.setting, "linger.ms": "5", "batch.size": "65536"}
		}
		src := &counterSource{topic: "out", limit: 300, batch: 100}
		newSource(t, SourceConfig{Common: common(c, newStatuses(), ID{"src", 0}, nil), Task: src, Offsets: newMemOffsets(), Producer: producer})
		testkit.EventuallyTrue(t, 10*time.Second, "every record acknowledged", func() bool { return src.committedCount() >= 300 })
		for _, r := range readAll(t, c, "out", 300) {
			if got := r.Attrs.CompressionType(); got != tc.codec {
				t.Fatalf("compression.type=%q: a record came in a batch of codec %d, want %d", tc.setting, got, tc.codec)
			}
		}
	}
}

// Bad producer settings are refused with the key and the accepted values.
func TestProducerSettingsRefuseBadValues(t *testing.T) {
	c := cluster(t, map[string]int32{"out": 1})
	for _, tc := range []struct{ key, value, want string }{
		{"compression.type", "brotli", "invalid value for producer.compression.type: \"brotli\" is not one of none, gzip, snappy, lz4, zstd"},
		{"linger.ms", "-1", "invalid value for producer.linger.ms: \"-1\" is not a whole number from 0"},
		{"linger.ms", "soon", "producer.linger.ms"},
		{"batch.size", "10", "invalid value for producer.batch.size: \"10\" is not a whole number from 512 to 1073741824"},
		{"buffer.memory", "1024", "producer.buffer.memory: buffer.memory is not a producer property Conveyor supports"},
	} {
		_, err := ProducerSettings(map[string]string{tc.key: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %v, want one containing %q", tc.key, tc.value, err, tc.want)
		}
		_, err = NewSourceRunner(SourceConfig{Common: common(c, newStatuses(), ID{"src", 0}, nil), Task: &counterSource{}, Offsets: newMemOffsets(),
			Producer: map[string]string{tc.key: tc.value}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSourceRunner with %s=%s: error %v, want one containing %q", tc.key, tc.value, err, tc.want)
		}
	}
	if _, err := ProducerSettings(map[string]string{"compression.type": "zstd", "linger.ms": "0", "acks": "all"}); err != nil {
		t.Fatalf("good settings refused: %v", err)
	}
}
