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

package apitest

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func rawJSON(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }

// sinkOffset is one sink partition entry: kafka_partition and kafka_offset
// given as raw JSON ("" leaves the key out; offset "" leaves offset out).
func sinkOffset(partition, offset string) v1.PartitionOffset {
	p := v1.PartitionOffset{Partition: map[string]apiextensionsv1.JSON{"kafka_topic": rawJSON(`"orders"`)}}
	if partition != "" {
		p.Partition["kafka_partition"] = rawJSON(partition)
	}
	if offset != "" {
		p.Offset = map[string]apiextensionsv1.JSON{"kafka_offset": rawJSON(offset)}
	}
	return p
}

// TestOffsetsRequestValidated: spec.offsets documents of the wrong shape are
// refused at admission, naming the field and the fix; good ones (a sink's,
// a FileSource's, a reset) are accepted. The values inside partition and
// offset are the connector's own JSON, which CEL cannot see into: the
// operator checks a sink's (kafkaconnector.CheckSinkOffsets).
func TestOffsetsRequestValidated(t *testing.T) {
	ns := newNamespace(t)
	with := func(req *v1.OffsetsRequest) *v1.KafkaConnector {
		kc := validConnector(ns, "")
		kc.GenerateName = "offsets-"
		kc.Spec.Offsets = req
		return kc
	}
	refused := []struct {
		name string
		req  *v1.OffsetsRequest
		want []string
	}{
		{"neither reset nor offsets", &v1.OffsetsRequest{RequestID: "r1"},
			[]string{"spec.offsets", "exactly one of reset: true", "non-empty offsets list"}},
		{"reset and offsets", &v1.OffsetsRequest{RequestID: "r1", Reset: true, Offsets: []v1.PartitionOffset{sinkOffset("0", "5")}},
			[]string{"spec.offsets", "exactly one of reset: true"}},
		{"no requestId", &v1.OffsetsRequest{Reset: true}, []string{"spec.offsets.requestId"}},
		{"requestId with a space", &v1.OffsetsRequest{RequestID: "my request", Reset: true}, []string{"spec.offsets.requestId", "should match"}},
		{"empty partition", &v1.OffsetsRequest{RequestID: "r1", Offsets: []v1.PartitionOffset{{Partition: map[string]apiextensionsv1.JSON{}}}},
			[]string{"spec.offsets.offsets[0].partition"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, k8sClient.Create(ctx(t), with(tc.req)), tc.want...)
		})
	}
	accepted := []struct {
		name string
		req  *v1.OffsetsRequest
	}{
		{"sink offsets, one partition reset", &v1.OffsetsRequest{RequestID: "2026-12-01.a", Offsets: []v1.PartitionOffset{sinkOffset("0", "9007199254740993"), sinkOffset("1", "")}}},
		{"file source position", &v1.OffsetsRequest{RequestID: "r2", Offsets: []v1.PartitionOffset{{
			Partition: map[string]apiextensionsv1.JSON{"file": rawJSON(`"/data/in.txt"`)},
			Offset:    map[string]apiextensionsv1.JSON{"position": rawJSON(`1024`)}}}}},
		{"reset", &v1.OffsetsRequest{RequestID: "r3", Reset: true}},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			if err := k8sClient.Create(ctx(t), with(tc.req)); err != nil {
				t.Fatalf("refused a good spec.offsets: %v", err)
			}
		})
	}
}

// TestDriftPolicyValidated: driftPolicy takes enforce or report only (there
// is no adopt: the operator never writes a spec).
func TestDriftPolicyValidated(t *testing.T) {
	ns := newNamespace(t)
	kc := validConnector(ns, "")
	kc.GenerateName = "drift-"
	kc.Spec.DriftPolicy = "adopt"
	requireRefused(t, k8sClient.Create(ctx(t), kc), "spec.driftPolicy", `"enforce"`, `"report"`)
	cc := validCluster(ns, "")
	cc.GenerateName = "drift-"
	cc.Spec.DriftPolicy = "ignore"
	requireRefused(t, k8sClient.Create(ctx(t), cc), "spec.driftPolicy")
}
