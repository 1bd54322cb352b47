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
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

var (
	k8s       client.Client
	cfg       *rest.Config
	bootstrap string
)

func TestMain(m *testing.M) {
	os.Exit(envkit.Main(m, envkit.Options{KEDATypes: true}, func(e *envkit.Env) error {
		k8s, cfg = e.Client, e.Config
		kafka, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return fmt.Errorf("starting kfake: %w", err)
		}
		e.DeferFunc(kafka.Close)
		bootstrap = kafka.ListenAddrs()[0]
		_, err = e.StartManager(nil, ctrl.Options{}, func(mgr ctrl.Manager) error {
			opts := envkit.OperatorOptions()
			// The topic re-check stays long: KEDA installed later must be
			// noticed through the checker waking the cluster.
			opts.ConnectCluster.RetryMax = time.Second
			opts.KEDACheckInterval = 500 * time.Millisecond
			// No worker listens here: connectors wait with ClusterNotReady.
			opts.WorkerResolver = workerclient.StaticResolver{"http://127.0.0.1:1"}
			opts.WorkerClient = workerclient.Options{RequestTimeout: time.Second}
			return controllers.Setup(mgr, opts)
		})
		return err
	}))
}

func ptr[T any](v T) *T { return &v }

func TestKEDAAbsentThenInstalled(t *testing.T) {
	envkit.RemoveKEDA(t, cfg) // installed by a first run (-count)
	ctx := context.Background()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "keda-absent-"}}
	if err := k8s.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
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
	for _, o := range []client.Object{cc, kc} {
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
	took := testkit.Eventually(t, 30*time.Second, "Autoscaling=False/KEDANotInstalled", func() (bool, string) {
		ok, seen, c := autoscalingCond()
		return ok && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonKEDANotInstalled, seen
	})
	t.Logf("Autoscaling=False/KEDANotInstalled after %s", took.Round(time.Millisecond))
	testkit.Eventually(t, 30*time.Second, "the connector reconciled (ClusterNotReady: no worker)", func() (bool, string) {
		var got v1alpha1.KafkaConnector
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(kc), &got); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.KafkaConnectorReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonClusterNotReady, fmt.Sprint(got.Status.Conditions)
	})

	envkit.InstallKEDA(t, cfg)
	took = testkit.Eventually(t, 30*time.Second, "the Autoscaling condition leaves KEDANotInstalled once KEDA is installed", func() (bool, string) {
		ok, seen, c := autoscalingCond()
		return ok && c.Reason != v1alpha1.ReasonKEDANotInstalled, seen
	})
	_, seen, _ := autoscalingCond()
	t.Logf("KEDA installed later picked up without a restart after %s: Autoscaling %s", took.Round(time.Millisecond), seen)
}
