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

// Package kedaabsent runs the operator as controllers.Setup wires it (the
// real KEDA checker and converger) on an API server without KEDA's CRDs:
// nothing breaks, autoscaling says KEDANotInstalled, and KEDA installed
// later is picked up without restarting the manager.
package kedaabsent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/twmb/franz-go/pkg/kfake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/test/envtest/envtestutil"
)

var (
	k8s       client.Client
	cfg       *rest.Config
	scheme    = runtime.NewScheme()
	bootstrap string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) (code int) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(kedav1alpha1.AddToScheme(scheme))
	assets, err := envtestutil.Assets()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := envtestutil.Environment(assets, scheme)
	cfg, err = env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	kafka, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kfake: %v\n", err)
		return 1
	}
	defer kafka.Close()
	bootstrap = kafka.ListenAddrs()[0]

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating the manager: %v\n", err)
		return 1
	}
	if err := controllers.Setup(mgr, controllers.Options{
		WorkerImage:       "ghcr.io/conveyor-dev/conveyor:test",
		OperatorNamespace: "conveyor-system",
		ConnectCluster: connectcluster.Options{
			KafkaTimeout: 2 * time.Second,
			// Long: KEDA installed later must be noticed through the
			// checker waking the cluster, not the periodic re-check.
			TopicRecheckInterval: 10 * time.Minute,
			RetryBase:            200 * time.Millisecond,
			RetryMax:             time.Second,
		},
		KEDACheckInterval: 500 * time.Millisecond,
		// No worker listens here: connectors wait with ClusterNotReady.
		WorkerResolver: workerclient.StaticResolver{"http://127.0.0.1:1"},
		WorkerClient:   workerclient.Options{RequestTimeout: time.Second},
	}); err != nil {
		fmt.Fprintf(os.Stderr, "setting up reconcilers: %v\n", err)
		return 1
	}
	stopManager, err := envtestutil.StartManager(mgr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := stopManager(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "creating a client: %v\n", err)
		return 1
	}
	return m.Run()
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for {
		ok, seen := cond()
		if ok {
			return time.Since(start)
		}
		last = seen
		if time.Since(start) > timeout {
			t.Fatalf("after %s: %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

func TestKEDAAbsentThenInstalled(t *testing.T) {
	ctx := context.Background()
	ns := "keda-absent"
	cc := &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka:       v1alpha1.KafkaConnection{BootstrapServers: bootstrap},
			Storage:     v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1)},
			Autoscaling: &v1alpha1.AutoscalingSpec{Enabled: true},
		},
	}
	kc := &v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: "archive", Namespace: ns},
		Spec: v1alpha1.KafkaConnectorSpec{ClusterRef: v1alpha1.ClusterReference{Name: "orders"},
			Class: "dev.conveyor.connect.file.FileSinkConnector", Config: map[string]string{"topics": "orders", "file": "/tmp/x"}},
	}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, cc, kc} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	autoscalingCond := func() (bool, string, *metav1.Condition) {
		var got v1alpha1.ConnectCluster
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cc), &got); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConnectClusterAutoscaling)
		if c == nil {
			return false, fmt.Sprint(got.Status.Conditions), nil
		}
		return true, fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message), c
	}
	took := eventually(t, 30*time.Second, "Autoscaling=False/KEDANotInstalled", func() (bool, string) {
		ok, seen, c := autoscalingCond()
		return ok && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonKEDANotInstalled, seen
	})
	t.Logf("Autoscaling=False/KEDANotInstalled after %s", took.Round(time.Millisecond))
	eventually(t, 30*time.Second, "the connector reconciled (ClusterNotReady: no worker)", func() (bool, string) {
		var got v1alpha1.KafkaConnector
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(kc), &got); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.KafkaConnectorReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonClusterNotReady, fmt.Sprint(got.Status.Conditions)
	})

	crds, err := envtestutil.KEDACRDDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(crds, "keda.sh_scaledobjects.yaml"), filepath.Join(crds, "keda.sh_triggerauthentications.yaml"),
	}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing KEDA's CRDs: %v", err)
	}
	took = eventually(t, 30*time.Second, "the Autoscaling condition leaves KEDANotInstalled once KEDA is installed", func() (bool, string) {
		ok, seen, c := autoscalingCond()
		return ok && c.Reason != v1alpha1.ReasonKEDANotInstalled, seen
	})
	_, seen, _ := autoscalingCond()
	t.Logf("KEDA installed later picked up without a restart after %s: Autoscaling %s", took.Round(time.Millisecond), seen)
}
