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
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// fakeWorkers answers whole-cluster reads from a list of connectors that a
// test edits, counting the reads; managed is what the cache would hold
// when each read is sent.
type fakeWorkers struct {
	connectors map[string]string // name -> connector state
	managed    map[string]bool
	reads      int
}

func (f *fakeWorkers) read(context.Context) (map[string]connectapi.ConnectorExpansion, map[string]bool, error) {
	f.reads++
	entries := map[string]connectapi.ConnectorExpansion{}
	for n, state := range f.connectors {
		entries[n] = connectapi.ConnectorExpansion{Status: &connectapi.ConnectorStateInfo{Name: n, Connector: connectapi.ConnectorState{State: state}}}
	}
	managed := map[string]bool{}
	for n := range f.managed {
		managed[n] = true
	}
	return entries, managed, nil
}

func managedKC(name string) v1alpha1.KafkaConnector {
	return v1alpha1.KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{Finalizer}}}
}

var viewCluster = &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cc", UID: "u1", Generation: 1}}

// TestUnmanagedScanSharesTheReadAndSkipsDeletedConnectors: the scan uses
// the read the connectors' passes made, and a connector deleted by its
// KafkaConnector after that read was sent, still in the read but no longer
// in the cache, is not reported as unmanaged; one made through REST is.
func TestUnmanagedScanSharesTheReadAndSkipsDeletedConnectors(t *testing.T) {
	var v clusterViews
	age := viewAge{resync: 30 * time.Second, quietMax: 2 * time.Minute}
	t0 := time.Unix(1000, 0)
	w := &fakeWorkers{
		connectors: map[string]string{"kept": "RUNNING", "gone": "RUNNING", "by-hand": "RUNNING"},
		managed:    map[string]bool{"kept": true, "gone": true},
	}
	if _, ok := v.entry(context.Background(), viewCluster, w.read, "ns/kept", "kept", age, t0); !ok {
		t.Fatal("no entry for kept")
	}
	// "gone" is deleted from the workers and its KafkaConnector goes.
	delete(w.connectors, "gone")
	delete(w.managed, "gone")
	got, err := v.unmanaged(context.Background(), viewCluster, w.read, age, t0.Add(10*time.Second), []v1alpha1.KafkaConnector{managedKC("kept")})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"by-hand"}) {
		t.Errorf("unmanaged = %v, want [by-hand] (gone was deleted after the read was sent)", got)
	}
	if w.reads != 1 {
		t.Errorf("%d reads, want 1: the scan shares the passes' read", w.reads)
	}
	// A KafkaConnector created while a read was on its way (not yet in the
	// cache when it was sent) is managed now.
	w.connectors["fresh"] = "RUNNING"
	got, err = v.unmanaged(context.Background(), viewCluster, w.read, age, t0.Add(time.Minute), []v1alpha1.KafkaConnector{managedKC("kept"), managedKC("fresh")})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"by-hand"}) || w.reads != 2 {
		t.Errorf("unmanaged = %v after %d reads, want [by-hand] after 2", got, w.reads)
	}
}

// TestViewsStretchWhileTheWorkersStayUnchanged: a read lives as long as the
// workers had stayed unchanged when it was made, from one resync up to
// quietMax; a burst of reads does not stretch it, and a change brings it
// back to one resync.
func TestViewsStretchWhileTheWorkersStayUnchanged(t *testing.T) {
	var v clusterViews
	age := viewAge{resync: 30 * time.Second, quietMax: 2 * time.Minute}
	w := &fakeWorkers{connectors: map[string]string{"a": "RUNNING"}, managed: map[string]bool{"a": true}}
	now := time.Unix(1000, 0)
	// pass looks at the view as a resync pass of "a" does (not a quick retry).
	pass := func(after time.Duration, age viewAge) {
		t.Helper()
		now = now.Add(after)
		v.passed.Delete("ns/a")
		if _, ok := v.entry(context.Background(), viewCluster, w.read, "ns/a", "a", age, now); !ok {
			t.Fatal("no entry for a")
		}
	}
	steps := func(name string, steps []struct {
		after time.Duration
		reads int
	}) {
		t.Helper()
		for i, step := range steps {
			pass(step.after, age)
			if w.reads != step.reads {
				t.Fatalf("%s, step %d: %d reads, want %d", name, i, w.reads, step.reads)
			}
		}
	}
	type step = struct {
		after time.Duration
		reads int
	}
	steps("unchanged", []step{
		{0, 1},                 // t=0: unchanged since 0, lives 30s
		{29 * time.Second, 1},  // served
		{2 * time.Second, 2},   // t=31: unchanged for 31s, lives 31s
		{30 * time.Second, 2},  // served
		{2 * time.Second, 3},   // t=63: lives 63s
		{62 * time.Second, 3},  // served
		{2 * time.Second, 4},   // t=127: lives 120s (quietMax)
		{119 * time.Second, 4}, // served
		{2 * time.Second, 5},
	})
	// A task fails: the next read finds a change and lives one resync.
	w.connectors["a"] = "FAILED"
	steps("changed", []step{
		{2 * time.Minute, 6},  // the change is read after at most quietMax
		{29 * time.Second, 6}, // served
		{2 * time.Second, 7},  // lives one resync: read again
	})
	// A burst of reads (actions force them) does not stretch the view.
	w.connectors["a"] = "RUNNING"
	for range 4 {
		now = now.Add(time.Second)
		v.markActed("ns/a")
		pass(0, age)
	}
	steps("burst", []step{{31 * time.Second, 12}})
	// quietMax at the resync turns stretching off.
	off := viewAge{resync: 30 * time.Second, quietMax: 30 * time.Second}
	for i := range 3 {
		pass(31*time.Second, off)
		if w.reads != 13+i {
			t.Fatalf("%d reads, want %d with quietMax = resync", w.reads, 13+i)
		}
	}
}
