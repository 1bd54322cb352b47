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

package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStalled(t *testing.T) {
	m := New()
	src, sink := m.Task("src", 0), m.Task("sink", 1)
	src.SetState(StateRunning)
	sink.SetState(StateRunning)
	t0 := time.Now()
	timeout := 3 * time.Second
	check := func(at time.Duration, want ...string) {
		t.Helper()
		var got []string
		for _, st := range m.Stalled(timeout, t0.Add(at)) {
			got = append(got, st.Connector)
		}
		if len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
			t.Errorf("at %s: stalled %v, want %v", at, got, want)
		}
		for _, c := range []struct{ name, task string }{{"src", "0"}, {"sink", "1"}} {
			v := testutil.ToFloat64(m.stalls.gauge.WithLabelValues(c.name, c.task))
			stalled := len(want) > 0 && want[0] == c.name
			if (v == 1) != stalled {
				t.Errorf("at %s: kafka_connect_task_stalled{connector=%q} = %v", at, c.name, v)
			}
		}
	}
	src.SetSourceActive(500) // records in flight
	sink.SetSinkLag(0, 0)    // caught up: idle, never stalled
	check(0)
	check(4*time.Second, "src")
	src.SourceWritten(200) // acknowledged: progress
	check(5 * time.Second)
	check(7 * time.Second)
	check(9*time.Second, "src")
	src.SetSourceActive(0) // nothing in flight: idle
	check(20 * time.Second)
	src.SetSourceActive(10)
	check(22 * time.Second)
	src.SetState(StatePaused) // not RUNNING: not stalled, whatever its work
	check(30 * time.Second)
	check(100 * time.Second)
	if got := m.Stalled(0, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("timeout 0 (off) found %v", got)
	}
}
