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

// TestViewsStretchWhileTheWorkersStayUnchanged: a read that finds the
// workers as the one before lives twice as long, up to quietMax; a change
// brings it back to one resync.
func TestViewsStretchWhileTheWorkersStayUnchanged(t *testing.T) {
	var v clusterViews
	age := viewAge{resync: 30 * time.Second, quietMax: 2 * time.Minute}
	w := &fakeWorkers{connectors: map[string]string{"a": "RUNNING"}, managed: map[string]bool{"a": true}}
	now := time.Unix(1000, 0)
	// pass looks at the view as a resync pass of "a" does (not a quick retry).
	pass := func(after time.Duration) {
		t.Helper()
		now = now.Add(after)
		v.passed.Delete("ns/a")
		if _, ok := v.entry(context.Background(), viewCluster, w.read, "ns/a", "a", age, now); !ok {
			t.Fatal("no entry for a")
		}
	}
	for i, step := range []struct {
		after time.Duration
		reads int
	}{
		{0, 1},                 // first read
		{29 * time.Second, 1},  // within the resync
		{2 * time.Second, 2},   // 31s: read again, unchanged: lives 60s
		{59 * time.Second, 2},  // served
		{2 * time.Second, 3},   // 61s: read again, unchanged twice: lives 120s
		{119 * time.Second, 3}, // served
		{2 * time.Second, 4},   // 121s: read again: still 120s (quietMax)
		{119 * time.Second, 4},
	} {
		pass(step.after)
		if w.reads != step.reads {
			t.Fatalf("step %d: %d reads, want %d", i, w.reads, step.reads)
		}
	}
	// A task fails: the read at 121s finds a change and lives one resync.
	w.connectors["a"] = "FAILED"
	pass(2 * time.Second)
	pass(29 * time.Second)
	if w.reads != 5 {
		t.Fatalf("%d reads, want 5", w.reads)
	}
	pass(2 * time.Second)
	if w.reads != 6 {
		t.Fatalf("%d reads after the change, want 6: a changed read lives one resync", w.reads)
	}
	// quietMax at the resync turns stretching off.
	off := viewAge{resync: 30 * time.Second, quietMax: 30 * time.Second}
	now = now.Add(31 * time.Second)
	v.passed.Delete("ns/a")
	v.entry(context.Background(), viewCluster, w.read, "ns/a", "a", off, now) // read 7, unchanged
	now = now.Add(31 * time.Second)
	v.passed.Delete("ns/a")
	v.entry(context.Background(), viewCluster, w.read, "ns/a", "a", off, now)
	if w.reads != 8 {
		t.Fatalf("%d reads, want 8 with quietMax = resync", w.reads)
	}
}
