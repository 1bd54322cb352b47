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

package workerclient

import (
	"context"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func pod(name, ns, ip string, ready bool, lbl map[string]string) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbl},
		Status:     corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func TestPodResolver(t *testing.T) {
	sel := map[string]string{"app.kubernetes.io/instance": "c1", "app.kubernetes.io/component": "worker"}
	other := map[string]string{"app.kubernetes.io/instance": "c2", "app.kubernetes.io/component": "worker"}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pod("w-b", "ns", "10.0.0.2", true, sel),
		pod("w-a", "ns", "10.0.0.1", true, sel),
		pod("w-v6", "ns", "fd00::5", true, sel),
		pod("w-notready", "ns", "10.0.0.3", false, sel),
		pod("w-noip", "ns", "", true, sel),
		pod("other-cluster", "ns", "10.0.0.9", true, other),
		pod("other-ns", "elsewhere", "10.0.0.8", true, sel),
	).Build()
	cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"}}
	cc.Status.Selector = "app.kubernetes.io/component=worker,app.kubernetes.io/instance=c1"

	urls, err := PodResolver{Reader: reader}.Resolve(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://10.0.0.1:8083", "http://10.0.0.2:8083", "http://[fd00::5]:8083"}
	if !reflect.DeepEqual(urls, want) {
		t.Fatalf("Resolve = %v, want %v", urls, want)
	}

	cc.Status.Selector = "app.kubernetes.io/instance=nobody"
	if _, err := (PodResolver{Reader: reader}).Resolve(context.Background(), cc); !errors.Is(err, ErrNoWorkers) {
		t.Fatalf("no matching pods: %v, want ErrNoWorkers", err)
	}
	cc.Status.Selector = ""
	if _, err := (PodResolver{Reader: reader}).Resolve(context.Background(), cc); !errors.Is(err, ErrNoWorkers) {
		t.Fatalf("no selector: %v, want ErrNoWorkers", err)
	}
	cc.Status.Selector = "a in (b"
	if _, err := (PodResolver{Reader: reader}).Resolve(context.Background(), cc); err == nil || errors.Is(err, ErrNoWorkers) {
		t.Fatalf("bad selector: %v, want a parse error", err)
	}
}

func TestStaticResolverAndConnect(t *testing.T) {
	if _, err := Connect(context.Background(), StaticResolver(nil), &v1alpha1.ConnectCluster{}, Options{}); !errors.Is(err, ErrNoWorkers) {
		t.Fatalf("Connect with no workers = %v", err)
	}
	c, err := Connect(context.Background(), StaticResolver{"http://127.0.0.1:1/"}, &v1alpha1.ConnectCluster{}, Options{})
	if err != nil || c.endpoints[0] != "http://127.0.0.1:1" {
		t.Fatalf("Connect = %+v, %v", c, err)
	}
}
