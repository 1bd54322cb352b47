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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// These tests use FileSources: a sink would add a trigger to the cluster's
// ScaledObject, which TestScaledObjectFollowsConnectors checks exactly.
// Each deletes its connectors when it ends.

const (
	sourceClass = "dev.conveyor.connect.file.FileSourceConnector"
	// driftBackoff is the first wait between two reverts here.
	driftBackoff = 2 * time.Second
	// driftValue is what the tests write through REST behind the
	// operator's back; no event or condition may show it.
	driftValue = "4321"
)

// source creates a FileSource KafkaConnector reading file into topic;
// mutate (may be nil) adjusts the spec before the create.
func source(t *testing.T, name, file, topic string, mutate func(*v1alpha1.KafkaConnector)) {
	t.Helper()
	kc := &v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.KafkaConnectorSpec{
			ClusterRef: v1alpha1.ClusterReference{Name: clusterName},
			Class:      sourceClass,
			Config:     map[string]string{"file": file, "topic": topic, "poll.interval.ms": "100"},
		},
	}
	if mutate != nil {
		mutate(kc)
	}
	if err := k8s.Create(context.Background(), kc); err != nil {
		t.Fatalf("creating KafkaConnector %s: %v", name, err)
	}
	t.Cleanup(func() { deleteConnector(t, name) })
}

// emptyFile creates an empty file in outDir for a FileSource.
func emptyFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(outDir, name+".in")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// deleteConnector deletes a KafkaConnector and waits until it and its
// connector are gone.
func deleteConnector(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	kc := &v1alpha1.KafkaConnector{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := k8s.Delete(ctx, kc); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting KafkaConnector %s: %v", name, err)
		return
	}
	testkit.Eventually(t, settle, "KafkaConnector "+name+" gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &v1alpha1.KafkaConnector{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func workerConfig(t *testing.T, name string) map[string]string {
	t.Helper()
	cfg, err := runtimeClient(t).ConnectorConfig(context.Background(), name)
	if err != nil {
		t.Fatalf("reading the config of %s from the worker: %v", name, err)
	}
	return cfg
}

// editBehindTheOperator writes the config through the worker's REST API,
// as a person with curl would: poll.interval.ms changed, batch.size added.
func editBehindTheOperator(t *testing.T, name string, spec map[string]string) {
	t.Helper()
	edited := maps.Clone(spec)
	edited["poll.interval.ms"] = driftValue
	edited["batch.size"] = driftValue
	if _, _, err := runtimeClient(t).PutConnectorConfig(context.Background(), name, edited); err != nil {
		t.Fatalf("editing %s through REST: %v", name, err)
	}
}

func edited(cfg map[string]string) bool { return cfg["poll.interval.ms"] == driftValue }

// eventNotes are the notes of the Events regarding object name with reason.
func eventNotes(t *testing.T, name, reason string) []string {
	t.Helper()
	var evs eventsv1.EventList
	if err := k8s.List(context.Background(), &evs, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e.Type+": "+e.Note)
		}
	}
	return out
}

// TestDriftEnforcedWithBackoff: under driftPolicy enforce (the default) a
// config edit through REST is written back, with ConfigDrift naming the keys
// and a Warning event listing them, never the values; someone who keeps
// editing is reverted with exponential backoff (2s, 4s, 8s here), not at
// every resync (2s here).
func TestDriftEnforcedWithBackoff(t *testing.T) {
	sharedCluster(t)
	name := testkit.Unique(t, "drift-enforce") // events outlive a run (-count)
	topic := name
	createTopic(t, topic, 1)
	source(t, name, emptyFile(t, name), topic, nil)
	waitReady(t, name)
	spec := workerConfig(t, name)

	base := writes.get(name + "/config")
	editBehindTheOperator(t, name, spec)
	took := testkit.Eventually(t, settle, "the edit reverted on the worker", func() (bool, string) {
		cfg := workerConfig(t, name)
		return !edited(cfg) && cfg["batch.size"] == "", fmt.Sprint(cfg)
	})
	t.Logf("first edit reverted %s after it was made", took.Round(time.Millisecond))
	testkit.Eventually(t, settle, "ConfigDrift=False/Reverted naming both keys", func() (bool, string) {
		c := condition(getKC(t, name), v1alpha1.KafkaConnectorConfigDrift)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonDriftReverted &&
			strings.Contains(c.Message, "added on the workers: batch.size") && strings.Contains(c.Message, "changed: poll.interval.ms"), fmt.Sprintf("%+v", c)
	})
	c := condition(getKC(t, name), v1alpha1.KafkaConnectorConfigDrift)
	t.Logf("ConfigDrift: %s/%s %q", c.Status, c.Reason, c.Message)
	testkit.Eventually(t, settle, "a Warning ConfigDrift event listing the keys", func() (bool, string) {
		notes := eventNotes(t, name, v1alpha1.KafkaConnectorConfigDrift)
		for _, n := range notes {
			if strings.HasPrefix(n, "Warning: ") && strings.Contains(n, "batch.size") && strings.Contains(n, "poll.interval.ms") {
				return true, n
			}
		}
		return false, fmt.Sprint(notes)
	})
	if n := writes.get(name+"/config") - base; n != 1 {
		t.Fatalf("%d config writes for one edit, want 1", n)
	}

	// An edit war: the edit is made again whenever the spec's value shows.
	const window = 16 * time.Second
	base = writes.get(name + "/config")
	edits, backedOff := 0, ""
	tick := time.NewTicker(200 * time.Millisecond)
	for start := time.Now(); time.Since(start) < window; <-tick.C {
		if !edited(workerConfig(t, name)) {
			editBehindTheOperator(t, name, spec)
			edits++
		}
		if c := condition(getKC(t, name), v1alpha1.KafkaConnectorConfigDrift); c != nil && c.Reason == v1alpha1.ReasonRevertBackedOff && backedOff == "" {
			backedOff = c.Message
		}
	}
	tick.Stop()
	reverts := writes.get(name+"/config") - base
	t.Logf("edit war of %s: %d edits, %d reverts (every resync would be about %d)", window, edits, reverts, int(window/connectorResync))
	// Reverts fall 2s, 6s and 14s after the first: 3 in the window; one more
	// for timing slack. Reverting at every 2s resync would give about 8.
	if reverts < 2 || reverts > 4 {
		t.Fatalf("%d reverts in %s of continuous edits, want 2 to 4 (backed off, yet still enforced)", reverts, window)
	}
	if backedOff == "" {
		t.Fatal("ConfigDrift never showed RevertBackedOff during the edit war")
	}
	t.Logf("while backed off: %q", backedOff)
	for _, n := range eventNotes(t, name, v1alpha1.KafkaConnectorConfigDrift) {
		if strings.Contains(n, driftValue) {
			t.Fatalf("a ConfigDrift event shows a value: %q", n)
		}
	}
	if c := condition(getKC(t, name), v1alpha1.KafkaConnectorConfigDrift); strings.Contains(c.Message, driftValue) {
		t.Fatalf("ConfigDrift shows a value: %q", c.Message)
	}
	// Once the edits stop, the last one is reverted after its backoff.
	took = testkit.Eventually(t, 4*driftBackoff+resync, "the last edit reverted", func() (bool, string) {
		cfg := workerConfig(t, name)
		return !edited(cfg), fmt.Sprint(cfg)
	})
	t.Logf("last edit reverted %s after the war ended", took.Round(time.Millisecond))
}

// TestDriftReported: under driftPolicy report a REST edit stays, the
// ConfigDrift condition and status.drift show the key-level difference
// (never the values), and a later spec change is still written.
func TestDriftReported(t *testing.T) {
	sharedCluster(t)
	name := testkit.Unique(t, "drift-report") // events outlive a run (-count)
	topic := name
	createTopic(t, topic, 1)
	source(t, name, emptyFile(t, name), topic, func(kc *v1alpha1.KafkaConnector) { kc.Spec.DriftPolicy = v1alpha1.DriftReport })
	waitReady(t, name)
	spec := workerConfig(t, name)

	base := writes.get(name + "/config")
	editBehindTheOperator(t, name, spec)
	took := testkit.Eventually(t, resync, "ConfigDrift=True/DriftReported with the diff", func() (bool, string) {
		kc := getKC(t, name)
		c := condition(kc, v1alpha1.KafkaConnectorConfigDrift)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonDriftReported &&
			strings.Contains(c.Message, "added on the workers: batch.size; changed: poll.interval.ms") &&
			kc.Status.Drift != nil && slices.Equal(kc.Status.Drift.Added, []string{"batch.size"}) &&
			slices.Equal(kc.Status.Drift.Changed, []string{"poll.interval.ms"}), fmt.Sprintf("%+v drift=%+v", c, kc.Status.Drift)
	})
	c := condition(getKC(t, name), v1alpha1.KafkaConnectorConfigDrift)
	t.Logf("reported %s after the edit: %q", took.Round(time.Millisecond), c.Message)
	if strings.Contains(c.Message, driftValue) {
		t.Fatalf("ConfigDrift shows a value: %q", c.Message)
	}
	testkit.Consistently(t, 3*connectorResync, "the edit left in place, no config write", func() (bool, string) {
		cfg := workerConfig(t, name)
		n := writes.get(name+"/config") - base
		return edited(cfg) && n == 0, fmt.Sprintf("%d writes, config %v", n, cfg)
	})
	testkit.Eventually(t, settle, "one Warning ConfigDrift event with the keys", func() (bool, string) {
		notes := eventNotes(t, name, v1alpha1.KafkaConnectorConfigDrift)
		return len(notes) == 1 && strings.Contains(notes[0], "batch.size") && strings.Contains(notes[0], "poll.interval.ms") &&
			!strings.Contains(notes[0], driftValue), fmt.Sprint(notes)
	})

	// A change of the spec wins over the REST edit.
	patchKC(t, name, func(kc *v1alpha1.KafkaConnector) { kc.Spec.Config["poll.interval.ms"] = "150" })
	testkit.Eventually(t, settle, "the spec change written, ConfigDrift=False/InSync", func() (bool, string) {
		cfg := workerConfig(t, name)
		c := condition(getKC(t, name), v1alpha1.KafkaConnectorConfigDrift)
		return cfg["poll.interval.ms"] == "150" && cfg["batch.size"] == "" && c != nil && c.Status == metav1.ConditionFalse &&
			c.Reason == v1alpha1.ReasonInSync, fmt.Sprintf("%v %+v", cfg, c)
	})
}

// TestUnmanagedConnectorsReported: a connector made through REST, which no
// KafkaConnector declares, is listed in the ConnectCluster's
// status.unmanagedConnectors with a Warning event, and is not deleted.
func TestUnmanagedConnectorsReported(t *testing.T) {
	sharedCluster(t)
	ctx := context.Background()
	name := testkit.Unique(t, "made-by-hand") // events outlive a run (-count)
	topic := name
	createTopic(t, topic, 1)
	// A managed one beside it must not be listed.
	declared := testkit.Unique(t, "declared")
	source(t, declared, emptyFile(t, declared), topic, nil)
	waitReady(t, declared)
	rc := runtimeClient(t)
	if _, err := rc.CreateConnector(ctx, name, map[string]string{"name": name, "connector.class": sourceClass,
		"file": emptyFile(t, name), "topic": topic}, "RUNNING"); err != nil {
		t.Fatalf("creating %s through REST: %v", name, err)
	}
	t.Cleanup(func() {
		if err := rc.DeleteConnector(ctx, name); err != nil {
			t.Errorf("deleting %s: %v", name, err)
		}
		testkit.Eventually(t, settle, "status.unmanagedConnectors empty again", func() (bool, string) {
			cc := cluster(t)
			return len(cc.Status.UnmanagedConnectors) == 0, fmt.Sprint(cc.Status.UnmanagedConnectors)
		})
	})
	took := testkit.Eventually(t, resync, "status.unmanagedConnectors = ["+name+"]", func() (bool, string) {
		cc := cluster(t)
		return slices.Equal(cc.Status.UnmanagedConnectors, []string{name}), fmt.Sprint(cc.Status.UnmanagedConnectors)
	})
	t.Logf("reported in the ConnectCluster's status %s after its creation", took.Round(time.Millisecond))
	testkit.Eventually(t, settle, "a Warning UnmanagedConnectors event naming it", func() (bool, string) {
		notes := eventNotes(t, clusterName, "UnmanagedConnectors")
		return slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, "Warning: ") && strings.Contains(n, name) }), fmt.Sprint(notes)
	})
	testkit.Consistently(t, 3*connectorResync, name+" still on the worker", func() (bool, string) {
		names, err := rc.ListConnectors(ctx)
		return err == nil && slices.Contains(names, name), fmt.Sprint(names, err)
	})
}

func cluster(t *testing.T) *v1alpha1.ConnectCluster {
	t.Helper()
	cc := &v1alpha1.ConnectCluster{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: clusterName}, cc); err != nil {
		t.Fatal(err)
	}
	return cc
}
