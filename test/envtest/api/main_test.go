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

package apitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	connectv1alpha1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

// One API server for the whole package (started in TestMain).
var (
	testEnv    *envtest.Environment
	cfg        *rest.Config
	k8sClient  client.Client
	repoRoot   string
	kubeconfig string // a kubeconfig file for the built kubectl
	kubectl    string // path of the built kubectl
)

func TestMain(m *testing.M) {
	os.Exit(envkit.Main(m, envkit.Options{Binaries: []string{"kubectl"}}, func(e *envkit.Env) error {
		testEnv, cfg, k8sClient, repoRoot = e.Env, e.Config, e.Client, envkit.RepoRoot()
		user, err := testEnv.AddUser(envtest.User{Name: "explainer", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return fmt.Errorf("adding a kubectl user: %w", err)
		}
		kc, err := user.KubeConfig()
		if err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
		dir, err := e.TempDir("apitest-")
		if err != nil {
			return err
		}
		kubeconfig = filepath.Join(dir, "kubeconfig")
		kubectl = filepath.Join(e.Assets, "kubectl")
		return os.WriteFile(kubeconfig, kc, 0o600)
	}))
}

// newNamespace creates a namespace of its own for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "apitest-"}}
	if err := k8sClient.Create(ctx(t), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// ctx is a context bounded by a deadline, cancelled when the test ends.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

func ptr[T any](v T) *T { return &v }

// validCluster is a minimal valid ConnectCluster that tests mutate into invalid ones.
func validCluster(ns, name string) *connectv1alpha1.ConnectCluster {
	return &connectv1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: connectv1alpha1.ConnectClusterSpec{
			Kafka: connectv1alpha1.KafkaConnection{BootstrapServers: "kafka-0.kafka:9092,kafka-1.kafka:9092"},
		},
	}
}

// validConnector is a minimal valid KafkaConnector that tests mutate into invalid ones.
func validConnector(ns, name string) *connectv1alpha1.KafkaConnector {
	return &connectv1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: connectv1alpha1.KafkaConnectorSpec{
			ClusterRef: connectv1alpha1.ClusterReference{Name: "demo"},
			Class:      "FileSink",
			Config:     map[string]string{"topics": "orders", "file": "/tmp/orders.jsonl"},
		},
	}
}

// requireRefused fails unless err is an Invalid error whose message contains every want.
func requireRefused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted the object; want a refusal naming %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("refusal is %v, want an Invalid (422) error", err)
	}
	msg := err.Error()
	t.Logf("refused: %s", msg)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not contain %q", msg, w)
		}
	}
}
