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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// topicValues reads every record value of a topic, from the start to the
// end offsets it has now.
func topicValues(t *testing.T, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := admin(t).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("listing the end offsets of %s: %v", topic, err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for int64(len(out)) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of the %d records of %s: %v", len(out), total, topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func lines(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("line-%02d", i))
	}
	return out
}

// waitTopic waits until the topic holds exactly want, in order.
func waitTopic(t *testing.T, topic string, want []string) time.Duration {
	t.Helper()
	return testkit.Eventually(t, resync, fmt.Sprintf("%d records in %s", len(want), topic), func() (bool, string) {
		got := topicValues(t, topic)
		return slices.Equal(got, want), fmt.Sprintf("%d records: %v", len(got), got)
	})
}

func waitOffsetsResult(t *testing.T, name, requestID string) *v1alpha1.OffsetsStatus {
	t.Helper()
	testkit.Eventually(t, resync, "status.offsets "+requestID+" Applied", func() (bool, string) {
		kc := getKC(t, name)
		o := kc.Status.Offsets
		return o != nil && o.RequestID == requestID && o.Result == v1alpha1.OffsetsApplied, fmt.Sprintf("%+v %s", o, describe(kc))
	})
	return getKC(t, name).Status.Offsets
}

// TestOffsetsAppliedToFileSource: spec.offsets moves a FileSource back to
// the byte position after line 4, and the next run produces lines 4 to 9
// again; applying the same document again changes nothing; a reset of a
// paused connector leaves it paused, and once resumed it reads the file
// from the start. The topic's records are counted and compared each time.
func TestOffsetsAppliedToFileSource(t *testing.T) {
	sharedCluster(t)
	name := testkit.Unique(t, "offsets-file") // events outlive a run (-count)
	topic := name
	createTopic(t, topic, 1)
	file := filepath.Join(outDir, name+".in")
	if err := os.WriteFile(file, []byte(strings.Join(lines(0, 10), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	source(t, name, file, topic, func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["value.converter"] = "StringConverter" })
	waitReady(t, name)
	took := waitTopic(t, topic, lines(0, 10))
	t.Logf("first run: 10 records %s after Ready", took.Round(time.Millisecond))

	// "line-00\n" is 8 bytes: position 32 is the start of line-04.
	jsonOf := func(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }
	base := writes.get(name + "/offsets")
	start := time.Now()
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) {
		kc.Spec.Offsets = &v1alpha1.OffsetsRequest{RequestID: "from-line-4", Offsets: []v1alpha1.PartitionOffset{{
			Partition: map[string]apiextensionsv1.JSON{"file": jsonOf(strconv.Quote(file))},
			Offset:    map[string]apiextensionsv1.JSON{"position": jsonOf("32")},
		}}}
	})
	o := waitOffsetsResult(t, name, "from-line-4")
	t.Logf("applied %s after the patch: %q", time.Since(start).Round(time.Millisecond), o.Message)
	waitRuntimeState(t, name, "RUNNING")
	waitTopic(t, topic, append(lines(0, 10), lines(4, 10)...))
	t.Logf("second run resumed at line 4: 16 records, %s after the patch", time.Since(start).Round(time.Millisecond))
	if n := writes.get(name+"/offsets") - base; n != 1 {
		t.Fatalf("%d offsets writes for one request, want 1", n)
	}
	if notes := eventNotes(t, name, "OffsetsApplied"); len(notes) != 1 || !strings.Contains(notes[0], "from-line-4") {
		t.Fatalf("OffsetsApplied events %v, want one naming the requestId", notes)
	}

	// The same document again (a re-apply from git, a resync) does nothing.
	reconcilePass(t, name, "offsets-1")
	testkit.Consistently(t, 2*connectorResync, "no second offsets write, still 16 records, RUNNING", func() (bool, string) {
		n := writes.get(name+"/offsets") - base
		got := topicValues(t, topic)
		return n == 1 && len(got) == 16, fmt.Sprintf("%d offsets writes, %d records", n, len(got))
	})

	// A paused connector stays paused through a reset.
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetPaused })
	waitRuntimeState(t, name, "PAUSED")
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) {
		kc.Spec.Offsets = &v1alpha1.OffsetsRequest{RequestID: "reset-1", Reset: true}
	})
	waitOffsetsResult(t, name, "reset-1")
	waitRuntimeState(t, name, "PAUSED")
	testkit.Consistently(t, 2*connectorResync, "paused after the reset, nothing produced", func() (bool, string) {
		st, err := runtimeClient(t).Status(context.Background(), name)
		got := topicValues(t, topic)
		return err == nil && st.Connector.State == "PAUSED" && len(got) == 16, fmt.Sprintf("%s %v, %d records", st.Connector.State, err, len(got))
	})
	if n := writes.get(name+"/offsets") - base; n != 2 {
		t.Fatalf("%d offsets writes after two requests, want 2", n)
	}
	start = time.Now()
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) { kc.Spec.State = v1alpha1.ConnectorTargetRunning })
	waitTopic(t, topic, append(append(lines(0, 10), lines(4, 10)...), lines(0, 10)...))
	t.Logf("resumed after the reset: the file read from the start (26 records) %s after resuming", time.Since(start).Round(time.Millisecond))
}

// TestOffsetsAtCreation: a FileSource created with spec.offsets is created
// STOPPED, gets its offsets, and only then runs: its topic holds lines 4 to
// 9 and nothing before them.
func TestOffsetsAtCreation(t *testing.T) {
	sharedCluster(t)
	name := testkit.Unique(t, "offsets-new") // events outlive a run (-count)
	topic := name
	createTopic(t, topic, 1)
	file := filepath.Join(outDir, name+".in")
	if err := os.WriteFile(file, []byte(strings.Join(lines(0, 10), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	source(t, name, file, topic, func(kc *v1alpha1.KafkaConnector) {
		kc.Spec.Config["value.converter"] = "StringConverter"
		kc.Spec.Offsets = &v1alpha1.OffsetsRequest{RequestID: "start-at-4", Offsets: []v1alpha1.PartitionOffset{{
			Partition: map[string]apiextensionsv1.JSON{"file": {Raw: []byte(strconv.Quote(file))}},
			Offset:    map[string]apiextensionsv1.JSON{"position": {Raw: []byte("32")}},
		}}}
	})
	waitOffsetsResult(t, name, "start-at-4")
	if st := writes.createdState(name); st != "STOPPED" {
		t.Fatalf("created with initial_state %q, want STOPPED (it must not run before its offsets are set)", st)
	}
	waitReady(t, name)
	took := waitTopic(t, topic, lines(4, 10))
	t.Logf("created with offsets: lines 4 to 9 only, %s after Ready", took.Round(time.Millisecond))
	testkit.Consistently(t, connectorResync, "still 6 records", func() (bool, string) {
		got := topicValues(t, topic)
		return len(got) == 6, fmt.Sprint(got)
	})
}
