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

package kafkaconnector

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func TestDecideDrift(t *testing.T) {
	b := Backoff{Initial: 10 * time.Second, Factor: 2, Max: 40 * time.Second, ResetAfter: 5 * time.Minute}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	const h = "hash"
	cases := []struct {
		name string
		in   DriftInput
		want DriftDecision
	}{
		{"in sync", DriftInput{SpecHash: h, AppliedHash: h}, DriftDecision{}},
		{"in sync keeps a recent series", DriftInput{SpecHash: h, AppliedHash: h, Reverts: 3, LastRevert: ago(time.Minute)}, DriftDecision{Reverts: 3}},
		{"in sync resets an old series", DriftInput{SpecHash: h, AppliedHash: h, Reverts: 3, LastRevert: ago(6 * time.Minute)}, DriftDecision{}},
		{"spec changed", DriftInput{Differs: true, SpecHash: h, AppliedHash: "old"}, DriftDecision{Action: DriftWriteSpec}},
		{"nothing recorded yet is a spec change", DriftInput{Differs: true, SpecHash: h}, DriftDecision{Action: DriftWriteSpec}},
		{"spec change under report is written", DriftInput{Policy: v1alpha1.DriftReport, Differs: true, SpecHash: h, AppliedHash: "old"}, DriftDecision{Action: DriftWriteSpec}},
		{"report leaves drift", DriftInput{Policy: v1alpha1.DriftReport, Differs: true, SpecHash: h, AppliedHash: h}, DriftDecision{Action: DriftLeave}},
		{"first revert at once", DriftInput{Policy: v1alpha1.DriftEnforce, Differs: true, SpecHash: h, AppliedHash: h}, DriftDecision{Action: DriftRevert, Reverts: 1}},
		{"empty policy enforces", DriftInput{Differs: true, SpecHash: h, AppliedHash: h}, DriftDecision{Action: DriftRevert, Reverts: 1}},
		{"second revert waits Initial", DriftInput{Differs: true, SpecHash: h, AppliedHash: h, Reverts: 1, LastRevert: ago(4 * time.Second)},
			DriftDecision{Action: DriftWait, Reverts: 1, RequeueAfter: 6 * time.Second}},
		{"second revert after Initial", DriftInput{Differs: true, SpecHash: h, AppliedHash: h, Reverts: 1, LastRevert: ago(10 * time.Second)},
			DriftDecision{Action: DriftRevert, Reverts: 2}},
		{"third revert waits twice Initial", DriftInput{Differs: true, SpecHash: h, AppliedHash: h, Reverts: 2, LastRevert: ago(15 * time.Second)},
			DriftDecision{Action: DriftWait, Reverts: 2, RequeueAfter: 5 * time.Second}},
		{"the wait is bounded by Max", DriftInput{Differs: true, SpecHash: h, AppliedHash: h, Reverts: 9, LastRevert: ago(40 * time.Second)},
			DriftDecision{Action: DriftRevert, Reverts: 10}},
		{"an old series starts over", DriftInput{Differs: true, SpecHash: h, AppliedHash: h, Reverts: 9, LastRevert: ago(5 * time.Minute)},
			DriftDecision{Action: DriftRevert, Reverts: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = now
			if got := DecideDrift(c.in, b); got != c.want {
				t.Fatalf("DecideDrift(%+v) = %+v, want %+v", c.in, got, c.want)
			}
		})
	}
}

// TestDriftRevertsBounded: an edit every second for 10 minutes, with the
// default schedule, is reverted a handful of times, not 600.
func TestDriftRevertsBounded(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	in := DriftInput{Differs: true, SpecHash: "h", AppliedHash: "h"}
	reverts := 0
	for s := 0; s < 600; s++ {
		in.Now = start.Add(time.Duration(s) * time.Second)
		d := DecideDrift(in, DefaultDriftBackoff)
		if d.Action == DriftRevert {
			reverts++
			in.LastRevert = in.Now
		}
		in.Reverts = d.Reverts
	}
	// At 0s, 30s, 1m30s, 3m30s, 7m30s.
	if reverts != 5 {
		t.Fatalf("%d reverts in 10 minutes of edits every second, want 5", reverts)
	}
}

func TestConfigHashAndSummary(t *testing.T) {
	a := map[string]string{"a": "b=c", "x": "1"}
	if ConfigHash(a) != ConfigHash(map[string]string{"x": "1", "a": "b=c"}) {
		t.Fatal("ConfigHash depends on key order")
	}
	if ConfigHash(a) == ConfigHash(map[string]string{"a=b": "c", "x": "1"}) {
		t.Fatal("ConfigHash confuses a key/value boundary")
	}
	d := DiffConfig(map[string]string{"keep": "1", "gone": "x", "topics": "t"}, map[string]string{"keep": "1", "topics": "u", "extra": "secret-value"})
	got := DriftSummary(d)
	want := "added on the workers: extra; changed: topics; removed on the workers: gone"
	if got != want {
		t.Fatalf("DriftSummary = %q, want %q", got, want)
	}
}

func TestOffsetsBodyKeepsDigits(t *testing.T) {
	req := &v1alpha1.OffsetsRequest{RequestID: "r1", Offsets: []v1alpha1.PartitionOffset{
		{Partition: map[string]apiextensionsv1.JSON{"kafka_topic": {Raw: []byte(`"orders"`)}, "kafka_partition": {Raw: []byte(`0`)}},
			Offset: map[string]apiextensionsv1.JSON{"kafka_offset": {Raw: []byte(`9007199254740993`)}}},
		{Partition: map[string]apiextensionsv1.JSON{"kafka_topic": {Raw: []byte(`"orders"`)}, "kafka_partition": {Raw: []byte(`1`)}}},
	}}
	body, err := OffsetsBody(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"orders"},"offset":{"kafka_offset":9007199254740993}},{"partition":{"kafka_partition":1,"kafka_topic":"orders"},"offset":null}]}`
	if string(out) != want {
		t.Fatalf("body %s\nwant %s", out, want)
	}
}

func TestCheckSinkOffsets(t *testing.T) {
	entry := func(partition, offset string) v1alpha1.PartitionOffset {
		p := v1alpha1.PartitionOffset{Partition: map[string]apiextensionsv1.JSON{"kafka_topic": {Raw: []byte(`"orders"`)}}}
		if partition != "" {
			p.Partition["kafka_partition"] = apiextensionsv1.JSON{Raw: []byte(partition)}
		}
		if offset != "" {
			p.Offset = map[string]apiextensionsv1.JSON{"kafka_offset": {Raw: []byte(offset)}}
		}
		return p
	}
	cases := []struct {
		name    string
		entries []v1alpha1.PartitionOffset
		want    string // "" accepted
	}{
		{"good", []v1alpha1.PartitionOffset{entry("0", "5"), entry("1", "")}, ""},
		{"no partition number", []v1alpha1.PartitionOffset{entry("0", "5"), entry("", "5")}, "spec.offsets.offsets[1].partition.kafka_partition"},
		{"partition as a string", []v1alpha1.PartitionOffset{entry(`"0"`, "5")}, "spec.offsets.offsets[0].partition.kafka_partition"},
		{"negative offset", []v1alpha1.PartitionOffset{entry("0", "-1")}, "spec.offsets.offsets[0].offset.kafka_offset"},
		{"fractional offset", []v1alpha1.PartitionOffset{entry("0", "1.5")}, "spec.offsets.offsets[0].offset.kafka_offset"},
		{"no topic", []v1alpha1.PartitionOffset{{Partition: map[string]apiextensionsv1.JSON{"kafka_partition": {Raw: []byte("0")}}}}, "spec.offsets.offsets[0].partition.kafka_topic"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, err := OffsetsBody(&v1alpha1.OffsetsRequest{RequestID: "r", Offsets: c.entries})
			if err == nil {
				err = CheckSinkOffsets(body)
			}
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused a good document: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one naming %s", err, c.want)
			}
		})
	}
}
