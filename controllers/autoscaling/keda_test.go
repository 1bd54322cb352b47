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

package autoscaling

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubetesting "k8s.io/client-go/testing"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// The discovery tests use client-go's fake discovery, which answers from a
// list of resources the test controls (NotFound for absent groups, as the API
// server does); the envtest suite checks the same against a real API server
// with and without KEDA's CRDs.
func kedaResources(names ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: "keda.sh/v1alpha1"}
	for _, n := range names {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: n, Namespaced: true})
	}
	return l
}

func TestScaledObjectServed(t *testing.T) {
	fake := &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}
	fake.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods"}}}}
	if ok, err := ScaledObjectServed(fake); ok || err != nil {
		t.Fatalf("without KEDA: %v, %v; want false, nil", ok, err)
	}
	fake.Resources = append(fake.Resources, kedaResources("scaledjobs"))
	if IsScaledObjectServed(fake) {
		t.Fatal("KEDA group without scaledobjects counted as served")
	}
	fake.Resources[1] = kedaResources("scaledobjects", "scaledjobs", "triggerauthentications")
	if ok, err := ScaledObjectServed(fake); !ok || err != nil {
		t.Fatalf("with KEDA: %v, %v; want true, nil", ok, err)
	}

	broken := &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}
	broken.AddReactor("get", "resource", func(kubetesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if ok, err := ScaledObjectServed(broken); ok || err == nil {
		t.Fatalf("a failing API server: %v, %v; want false and an error, not a silent \"not installed\"", ok, err)
	}
}

func TestKEDACheckerNoticesInstallWithoutRestart(t *testing.T) {
	// KEDA's resources are listed, but discovery answers NotFound until the
	// test "installs" KEDA (flipping installed), as an API server would.
	var installed atomic.Bool
	fake := &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}
	fake.Resources = []*metav1.APIResourceList{kedaResources("scaledobjects", "triggerauthentications")}
	fake.AddReactor("get", "resource", func(kubetesting.Action) (bool, runtime.Object, error) {
		if installed.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "keda.sh"}, "v1alpha1")
	})
	var changes []bool
	var calls atomic.Int32
	k := &KEDAChecker{Discovery: fake, Interval: 5 * time.Millisecond, OnChange: func(served bool) {
		calls.Add(1)
		changes = append(changes, served)
	}}
	if ok, err := k.Check(); ok || err != nil || k.Served() {
		t.Fatalf("first check: %v %v", ok, err)
	}
	if ok, _ := k.Check(); ok || calls.Load() != 1 {
		t.Fatalf("an unchanged answer called OnChange again (%d calls)", calls.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Start(ctx) }()
	// Install KEDA while the checker runs: it must notice on its own.
	installed.Store(true)
	testkit.EventuallyTrue(t, 5*time.Second, "the checker to notice KEDA", k.Served)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(changes) < 2 || changes[0] != false || changes[len(changes)-1] != true {
		t.Fatalf("OnChange saw %v, want [false ... true]", changes)
	}
}

func TestAutoscalingCondition(t *testing.T) {
	ready := &metav1.Condition{Status: metav1.ConditionTrue}
	notReady := &metav1.Condition{Status: metav1.ConditionFalse, Message: "triggers failing"}
	cases := []struct {
		in         ConditionInput
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{ConditionInput{Enabled: false, KEDAServed: true, Triggers: 2, ScaledObjectReady: ready}, metav1.ConditionFalse, v1alpha1.ReasonAutoscalingDisabled},
		{ConditionInput{Enabled: true, KEDAServed: false, Triggers: 2}, metav1.ConditionFalse, v1alpha1.ReasonKEDANotInstalled},
		{ConditionInput{Enabled: true, KEDAServed: true, Triggers: 0}, metav1.ConditionFalse, v1alpha1.ReasonNoSinkConnectors},
		{ConditionInput{Enabled: true, KEDAServed: true, Triggers: 1}, metav1.ConditionFalse, v1alpha1.ReasonScaledObjectNotReady},
		{ConditionInput{Enabled: true, KEDAServed: true, Triggers: 1, ScaledObjectReady: notReady}, metav1.ConditionFalse, v1alpha1.ReasonScaledObjectNotReady},
		{ConditionInput{Enabled: true, KEDAServed: true, Triggers: 3, ScaledObjectReady: ready}, metav1.ConditionTrue, v1alpha1.ReasonScaledObjectReady},
		{ConditionInput{Enabled: true, KEDAServed: true, Triggers: 3, ScaledObjectReady: ready, WithoutScalingModifiers: true}, metav1.ConditionTrue, v1alpha1.ReasonKEDAWithoutScalingModifiers},
		{ConditionInput{Enabled: true, KEDAServed: true, Triggers: 3, ScaledObjectReady: notReady, WithoutScalingModifiers: true}, metav1.ConditionFalse, v1alpha1.ReasonScaledObjectNotReady},
	}
	for _, c := range cases {
		got := AutoscalingCondition(c.in, 3)
		if got.Type != v1alpha1.ConnectClusterAutoscaling || got.Status != c.wantStatus || got.Reason != c.wantReason || got.ObservedGeneration != 3 || got.Message == "" {
			t.Errorf("AutoscalingCondition(%+v) = %+v; want %s/%s", c.in, got, c.wantStatus, c.wantReason)
		}
	}

	so := &kedav1alpha1.ScaledObject{}
	if ScaledObjectReadyCondition(so) != nil || ScaledObjectReadyCondition(nil) != nil {
		t.Error("no KEDA report must give nil")
	}
	so.Status.Conditions = *kedav1alpha1.GetInitializedConditions()
	if ScaledObjectReadyCondition(so) != nil {
		t.Error("KEDA's initial Unknown must give nil")
	}
	so.Status.Conditions.SetReadyCondition(metav1.ConditionTrue, "ScaledObjectReady", "ready")
	if c := ScaledObjectReadyCondition(so); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready=True not read: %+v", c)
	}
}
