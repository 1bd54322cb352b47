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
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

func i32(v int32) *int32 { return &v }

func TestEffectiveTasks(t *testing.T) {
	cases := []struct {
		name       string
		requested  int32
		limit      TaskLimit
		want       int32
		wantReason plugin.Reason
	}{
		{"no natural limit", 10, TaskLimit{}, 10, ReasonTasksMax},
		{"sink over 4 partitions", 10, TaskLimit{Natural: i32(4), Reason: ReasonTopicPartitions}, 4, ReasonTopicPartitions},
		{"cdc source tasksMax 10 -> 1", 10, TaskLimit{Natural: i32(1), Reason: ReasonSingleReader}, 1, ReasonSingleReader},
		{"limit equal to request does not bite", 4, TaskLimit{Natural: i32(4), Reason: ReasonTopicPartitions}, 4, ReasonTasksMax},
		{"limit above request", 2, TaskLimit{Natural: i32(6), Reason: ReasonTopicPartitions}, 2, ReasonTasksMax},
		{"zero natural limit", 3, TaskLimit{Natural: i32(0), Reason: ReasonTables}, 0, ReasonTables},
		{"negative natural ignored", 3, TaskLimit{Natural: i32(-1), Reason: ReasonTables}, 3, ReasonTasksMax},
		{"request below 1 counts as 1", 0, TaskLimit{}, 1, ReasonTasksMax},
		{"share-mode sink: tasksMax binds, the share group says why", 8, TaskLimit{Reason: ReasonShareGroup}, 8, ReasonShareGroup},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reason := EffectiveTasks(c.requested, c.limit)
			if got != c.want || reason != c.wantReason {
				t.Fatalf("EffectiveTasks(%d, %+v) = %d, %q; want %d, %q", c.requested, c.limit, got, reason, c.want, c.wantReason)
			}
			if Limited(c.requested, got) != (c.wantReason != ReasonTasksMax && c.wantReason != ReasonShareGroup) {
				t.Fatalf("Limited(%d, %d) disagrees with reason %q", c.requested, got, reason)
			}
		})
	}
}

func TestTaskLimitFromRuntime(t *testing.T) {
	four := 4
	tl := TaskLimitFromRuntime(connectapi.Limits{TasksMax: 10, NaturalLimit: &four, EffectiveTasks: 4, Reason: "TopicPartitions"})
	if tl.Natural == nil || *tl.Natural != 4 || tl.Reason != ReasonTopicPartitions || tl.Source != LimitFromRuntime {
		t.Fatalf("TaskLimitFromRuntime = %+v", tl)
	}
	if n, r := EffectiveTasks(10, tl); n != 4 || r != ReasonTopicPartitions {
		t.Fatalf("effective from the runtime's answer = %d %s", n, r)
	}
	share := TaskLimitFromRuntime(connectapi.Limits{TasksMax: 8, NaturalLimit: nil, EffectiveTasks: 8, Reason: "ShareGroup"})
	if n, r := EffectiveTasks(8, share); n != 8 || r != ReasonShareGroup {
		t.Fatalf("effective from a share-mode sink's answer = %d %s, want 8 ShareGroup", n, r)
	}
	if c := TasksLimitedCondition(8, 8, ReasonShareGroup, 1); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonShareGroup || !strings.Contains(c.Message, "share group") {
		t.Fatalf("TasksLimited of a share-mode sink: %+v", c)
	}
	none := TaskLimitFromRuntime(connectapi.Limits{TasksMax: 3, NaturalLimit: nil, EffectiveTasks: 3, Reason: "TasksMax"})
	if none.Natural != nil {
		t.Fatalf("null natural_limit became %v", *none.Natural)
	}
}

func TestEstimateTaskLimit(t *testing.T) {
	cases := []struct {
		name       string
		in         EstimateInput
		want       *int32
		wantReason plugin.Reason
	}{
		{"sink sums partitions of its topics",
			EstimateInput{Class: ClassPostgresSink, Config: map[string]string{"topics": "a, b,a"}, PartitionCounts: map[string]int32{"a": 4, "b": 2}},
			i32(6), ReasonTopicPartitions},
		{"sink with an unread topic is unknown",
			EstimateInput{Class: ClassPostgresSink, Config: map[string]string{"topics": "a,b"}, PartitionCounts: map[string]int32{"a": 4}},
			nil, ""},
		{"regex sink is unknown",
			EstimateInput{Class: ClassPostgresSink, Config: map[string]string{"topics.regex": "a.*"}, PartitionCounts: map[string]int32{"a": 4}},
			nil, ""},
		{"unlisted class with topics is a sink",
			EstimateInput{Class: "SomeOtherSink", Config: map[string]string{"topics": "t"}, PartitionCounts: map[string]int32{"t": 3}},
			i32(3), ReasonTopicPartitions},
		{"the Redis sink's limit is its partitions",
			EstimateInput{Class: "RedisSink", Config: map[string]string{"topics": "orders", "redis.url": "redis://r:6379"}, PartitionCounts: map[string]int32{"orders": 12}},
			i32(12), ReasonTopicPartitions},
		{"the S3 sink's limit is its partitions",
			EstimateInput{Class: "S3Sink", Config: map[string]string{"topics": "a,b", "s3.bucket.name": "lake"}, PartitionCounts: map[string]int32{"a": 4, "b": 8}},
			i32(12), ReasonTopicPartitions},
		{"a share-mode sink has no partition limit",
			EstimateInput{Class: ClassPostgresSink, Config: map[string]string{"topics": "a", "consumer.group.type": "share"}, PartitionCounts: map[string]int32{"a": 2}},
			nil, ReasonShareGroup},
		{"cdc source is a single reader",
			EstimateInput{Class: ClassPostgresCDCSource, Config: map[string]string{"tasks.max": "10"}},
			i32(1), ReasonSingleReader},
		{"table source counts listed tables",
			EstimateInput{Class: ClassPostgresTableSource, Config: map[string]string{"tables": "public.a,public.b,public.c"}},
			i32(3), ReasonTables},
		{"table source with a pattern is unknown",
			EstimateInput{Class: ClassPostgresTableSource, Config: map[string]string{"table.pattern": "public.*"}},
			nil, ""},
		{"unknown source",
			EstimateInput{Class: "Generator", Config: map[string]string{}},
			nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := EstimateTaskLimit(c.in)
			if got.Source != LimitFromEstimate {
				t.Errorf("source = %q, want %q", got.Source, LimitFromEstimate)
			}
			if (got.Natural == nil) != (c.want == nil) || (got.Natural != nil && *got.Natural != *c.want) || got.Reason != c.wantReason {
				t.Fatalf("EstimateTaskLimit = %v %q; want %v %q", deref(got.Natural), got.Reason, deref(c.want), c.wantReason)
			}
		})
	}
}

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestDesiredConfigAndDiff(t *testing.T) {
	spec := map[string]string{"topics": "orders", "connection.password": "${secret:db:password}", "tasks.max": "99"}
	desired := DesiredConfig("orders-sink", "PostgresSink", 10, spec)
	if desired[KeyTasksMax] != "10" || desired[KeyClass] != "PostgresSink" || desired[KeyName] != "orders-sink" {
		t.Fatalf("desired config does not take name/class/tasks.max from the resource: %v", desired)
	}
	if spec["tasks.max"] != "99" {
		t.Fatal("DesiredConfig modified its input")
	}

	stored := map[string]string{}
	for k, v := range desired {
		stored[k] = v
	}
	if d := DiffConfig(desired, stored); !d.Empty() {
		t.Fatalf("identical configs differ: %+v", d)
	}

	cases := []struct {
		name   string
		mutate func(m map[string]string)
		want   ConfigDiff
	}{
		{"runtime-added name is ignored", func(m map[string]string) { delete(desired, KeyName) }, ConfigDiff{}},
		{"value change", func(m map[string]string) { m["topics"] = "other" }, ConfigDiff{Changed: []string{"topics"}}},
		{"tasks.max change", func(m map[string]string) { m[KeyTasksMax] = "4" }, ConfigDiff{Changed: []string{KeyTasksMax}}},
		{"removed from spec", func(m map[string]string) { m["batch.size"] = "5" }, ConfigDiff{Removed: []string{"batch.size"}}},
		{"added to spec", func(m map[string]string) { delete(m, "topics") }, ConfigDiff{Added: []string{"topics"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			desired = DesiredConfig("orders-sink", "PostgresSink", 10, spec)
			st := map[string]string{}
			for k, v := range desired {
				st[k] = v
			}
			c.mutate(st)
			got := DiffConfig(desired, st)
			if !reflect.DeepEqual(got.Keys(), c.want.Keys()) || got.Empty() != c.want.Empty() {
				t.Fatalf("DiffConfig = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestDecideStateAction(t *testing.T) {
	cases := []struct {
		target   TargetState
		observed string
		last     StateAction
		want     StateAction
	}{
		{TargetRunning, "RUNNING", "", StateNone},
		{TargetRunning, "PAUSED", "", StateResume},
		{TargetRunning, "STOPPED", "", StateResume},
		{TargetRunning, "FAILED", "", StateNone},
		{TargetRunning, "FAILED", StateStop, StateResume},
		{TargetRunning, "FAILED", StateResume, StateNone},
		{TargetRunning, "UNASSIGNED", "", StateNone},
		{TargetPaused, "RUNNING", "", StatePause},
		{TargetPaused, "PAUSED", StatePause, StateNone},
		{TargetPaused, "STOPPED", "", StatePause},
		{TargetPaused, "FAILED", "", StatePause},
		{TargetPaused, "FAILED", StatePause, StateNone},
		{TargetStopped, "RUNNING", "", StateStop},
		{TargetStopped, "PAUSED", "", StateStop},
		{TargetStopped, "FAILED", "", StateStop},
		{TargetStopped, "FAILED", StateStop, StateNone},
		{TargetStopped, "STOPPED", StateStop, StateNone},
		{TargetStopped, "stopped", "", StateNone},
	}
	for _, c := range cases {
		if got := DecideStateAction(c.target, c.observed, c.last); got != c.want {
			t.Errorf("DecideStateAction(%s, %s, last=%q) = %q, want %q", c.target, c.observed, c.last, got, c.want)
		}
	}
	if InitialState(TargetStopped) != "STOPPED" || InitialState(TargetPaused) != "PAUSED" || InitialState("") != "RUNNING" {
		t.Error("InitialState does not map targets to Kafka Connect's initial_state")
	}
}

// testBackoff keeps the autoRestart table independent of the API defaults.
var testBackoff = Backoff{Initial: 10 * time.Second, Factor: 2, Max: 10 * time.Minute, ResetAfter: 10 * time.Minute}

func TestBackoffDelay(t *testing.T) {
	b := testBackoff
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 320 * time.Second, 10 * time.Minute, 10 * time.Minute}
	for n, w := range want {
		if got := b.Delay(int32(n)); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
	if got := b.Delay(1000); got != b.Max {
		t.Errorf("Delay(1000) = %v, want the cap %v", got, b.Max)
	}
	// The API documents 2s doubling up to 5m.
	d := DefaultBackoff
	if d.Delay(0) != 2*time.Second || d.Delay(1) != 4*time.Second || d.Delay(8) != 5*time.Minute || d.Delay(7) != 256*time.Second {
		t.Errorf("DefaultBackoff delays %v %v %v %v do not match the API's 2s..5m", d.Delay(0), d.Delay(1), d.Delay(7), d.Delay(8))
	}
}

func TestDecideAutoRestart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	on := AutoRestartPolicy{Enabled: true}
	cases := []struct {
		name string
		in   AutoRestartInput
		want AutoRestartDecision
	}{
		{"healthy, nothing to do", AutoRestartInput{Policy: on, Now: t0}, AutoRestartDecision{}},
		{"disabled leaves a failure alone", AutoRestartInput{Policy: AutoRestartPolicy{}, Failed: true, Now: t0}, AutoRestartDecision{}},
		{"first failure restarts at once", AutoRestartInput{Policy: on, Failed: true, Now: t0}, AutoRestartDecision{Restart: true, Count: 1}},
		{"second restart waits 10s", AutoRestartInput{Policy: on, Failed: true, Count: 1, LastRestart: t0, Now: t0.Add(4 * time.Second)},
			AutoRestartDecision{Count: 1, RequeueAfter: 6 * time.Second}},
		{"second restart after 10s", AutoRestartInput{Policy: on, Failed: true, Count: 1, LastRestart: t0, Now: t0.Add(10 * time.Second)},
			AutoRestartDecision{Restart: true, Count: 2}},
		{"third waits 20s", AutoRestartInput{Policy: on, Failed: true, Count: 2, LastRestart: t0, Now: t0.Add(15 * time.Second)},
			AutoRestartDecision{Count: 2, RequeueAfter: 5 * time.Second}},
		{"held FAILED for a crash: never restarted automatically", AutoRestartInput{Policy: on, Failed: true, HeldByCrash: true, Count: 2, LastRestart: t0, Now: t0.Add(time.Hour)},
			AutoRestartDecision{Count: 2}},
		{"max restarts exhausted", AutoRestartInput{Policy: AutoRestartPolicy{Enabled: true, MaxRestarts: i32(3)}, Failed: true, Count: 3, LastRestart: t0, Now: t0.Add(time.Hour)},
			AutoRestartDecision{Count: 3, GaveUp: true}},
		{"healthy for ResetAfter resets the count", AutoRestartInput{Policy: on, Count: 4, LastRestart: t0, Now: t0.Add(10 * time.Minute)},
			AutoRestartDecision{}},
		{"healthy but not long enough keeps the count", AutoRestartInput{Policy: on, Count: 4, LastRestart: t0, Now: t0.Add(time.Minute)},
			AutoRestartDecision{Count: 4, RequeueAfter: 9 * time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DecideAutoRestart(c.in, testBackoff); got != c.want {
				t.Fatalf("DecideAutoRestart = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestPendingRestarts(t *testing.T) {
	cases := []struct {
		name        string
		ann         map[string]string
		handled     HandledRestarts
		justCreated bool
		want        *RestartRequest
		wantHandled HandledRestarts
	}{
		{"no annotation", nil, HandledRestarts{}, false, nil, HandledRestarts{}},
		{"new restart value", map[string]string{AnnotationRestart: "1"}, HandledRestarts{}, false,
			&RestartRequest{IncludeTasks: true, Annotation: AnnotationRestart, Value: "1"}, HandledRestarts{Restart: "1"}},
		{"same value again is handled", map[string]string{AnnotationRestart: "1"}, HandledRestarts{Restart: "1"}, false,
			nil, HandledRestarts{Restart: "1"}},
		{"changed value restarts once more", map[string]string{AnnotationRestart: "2"}, HandledRestarts{Restart: "1"}, false,
			&RestartRequest{IncludeTasks: true, Annotation: AnnotationRestart, Value: "2"}, HandledRestarts{Restart: "2"}},
		{"failed tasks restart", map[string]string{AnnotationRestartTasks: "x"}, HandledRestarts{}, false,
			&RestartRequest{IncludeTasks: true, OnlyFailed: true, Annotation: AnnotationRestartTasks, Value: "x"}, HandledRestarts{RestartTasks: "x"}},
		{"both changed: restarting everything covers both", map[string]string{AnnotationRestart: "a", AnnotationRestartTasks: "b"}, HandledRestarts{}, false,
			&RestartRequest{IncludeTasks: true, Annotation: AnnotationRestart, Value: "a"}, HandledRestarts{Restart: "a", RestartTasks: "b"}},
		{"removed annotation asks nothing and keeps history", map[string]string{}, HandledRestarts{Restart: "1"}, false, nil, HandledRestarts{Restart: "1"}},
		{"present at creation is recorded, not acted on", map[string]string{AnnotationRestart: "1"}, HandledRestarts{}, true,
			nil, HandledRestarts{Restart: "1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, h := PendingRestarts(c.ann, c.handled, c.justCreated)
			if !reflect.DeepEqual(got, c.want) || h != c.wantHandled {
				t.Fatalf("PendingRestarts = %+v, %+v; want %+v, %+v", got, h, c.want, c.wantHandled)
			}
		})
	}
}

func TestSecretsHash(t *testing.T) {
	refs := []clusterkit.SecretRef{{Name: "db", Key: "password"}}
	base := map[string]map[string][]byte{
		"db":    {"password": []byte("s3cret"), "unused": []byte("a")},
		"other": {"k": []byte("v")},
	}
	h0 := SecretsHash(refs, base)
	if h0 == "" || strings.Contains(h0, "s3cret") {
		t.Fatalf("hash %q", h0)
	}
	if SecretsHash(nil, base) != "" {
		t.Fatal("no references must hash to the empty string")
	}
	mutate := func(f func(m map[string]map[string][]byte)) string {
		m := map[string]map[string][]byte{}
		for n, d := range base {
			m[n] = map[string][]byte{}
			for k, v := range d {
				m[n][k] = v
			}
		}
		f(m)
		return SecretsHash(refs, m)
	}
	if h := mutate(func(m map[string]map[string][]byte) { m["db"]["unused"] = []byte("b") }); h != h0 {
		t.Error("an unreferenced key of the same Secret changed the hash")
	}
	if h := mutate(func(m map[string]map[string][]byte) { m["other"]["k"] = []byte("w") }); h != h0 {
		t.Error("another Secret changed the hash")
	}
	rotated := mutate(func(m map[string]map[string][]byte) { m["db"]["password"] = []byte("n3w") })
	if rotated == h0 {
		t.Error("rotating the referenced value did not change the hash")
	}
	missing := mutate(func(m map[string]map[string][]byte) { delete(m, "db") })
	empty := mutate(func(m map[string]map[string][]byte) { m["db"]["password"] = nil })
	if missing == h0 || missing == empty {
		t.Error("a missing Secret must hash differently from a present (even empty) value")
	}
	if !SecretRotated(h0, rotated) || SecretRotated("", h0) || SecretRotated(h0, h0) || SecretRotated(h0, "") {
		t.Error("SecretRotated: only a recorded, different, non-empty hash is a rotation")
	}
}

// spec.exactlyOnce sets exactly.once.support and a read_committed sink
// consumer; an exactly-once sink config (exactly.once=true) gets
// read_committed too; keys in spec.config win.
func TestWithExactlyOnce(t *testing.T) {
	cases := []struct {
		req       string
		config    map[string]string
		support   string
		isolation string
	}{
		{"", map[string]string{"topics": "t"}, "", ""},
		{"Required", map[string]string{"topic": "t"}, "required", "read_committed"},
		{"Requested", map[string]string{"exactly.once.support": "required"}, "required", "read_committed"},
		{"", map[string]string{"exactly.once": "true"}, "", "read_committed"},
		{"", map[string]string{"exactly.once": "true", "consumer.override.isolation.level": "read_uncommitted"}, "", "read_uncommitted"},
	}
	for _, c := range cases {
		got := WithExactlyOnce(DesiredConfig("c", "Cls", 1, c.config), c.req)
		if got[KeyExactlyOnceSupport] != c.support || got[KeyConsumerIsolationOverride] != c.isolation {
			t.Errorf("%q %v: exactly.once.support=%q isolation=%q, want %q %q", c.req, c.config, got[KeyExactlyOnceSupport], got[KeyConsumerIsolationOverride], c.support, c.isolation)
		}
	}
}
