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

// Package connectcluster tests the ConnectCluster reconciler against a real
// kube-apiserver (envtest), a real kube-controller-manager for garbage
// collection, and the in-process Kafka broker kfake for the internal topics.
package connectcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

const (
	operatorNamespace = "conveyor-system"
	workerImage       = "ghcr.io/conveyor-dev/conveyor:test"
	// topicRecheck is short so that a Kafka outage shows within seconds.
	topicRecheck = 2 * time.Second
)

var (
	k8s     client.Client
	restCfg *rest.Config
	// kafka is the shared 3-broker Kafka most tests use.
	kafka *kfake.Cluster
	// mgrCache is the operator's cache, limited to watchedNamespaces.
	mgrCache cache.Cache
	// namespaces are the namespaces the operator watches, as with
	// conveyor operator --watch-namespaces=...: every test works in one of
	// its own (one per run with -count), and TestWatchNamespaces checks that
	// the rest is left alone.
	namespaces *envkit.Namespaces
)

// watchedNamespaces are the base names of the watched namespaces.
var watchedNamespaces = []string{
	"create", "rollout", "delete", "team-a", "team-b", "outage", "unaffected",
	"badtopic", "scale", "capacity", "scoped", "foreign", "sasl", "autoscaled", "handoff",
}

func TestMain(m *testing.M) {
	namespaces = envkit.NewNamespaces(watchedNamespaces...)
	os.Exit(envkit.Main(m, envkit.Options{Binaries: []string{"kube-controller-manager"}}, func(e *envkit.Env) error {
		k8s, restCfg = e.Client, e.Config
		var err error
		if kafka, err = kfake.NewCluster(kfake.NumBrokers(3)); err != nil {
			return fmt.Errorf("starting kfake: %w", err)
		}
		e.DeferFunc(kafka.Close)
		stopKCM, err := startControllerManager(e.Env, e.Assets)
		if err != nil {
			return fmt.Errorf("starting kube-controller-manager: %w", err)
		}
		e.DeferFunc(stopKCM)
		mgr, err := e.StartManager(nil, ctrl.Options{Cache: controllers.CacheOptions(namespaces.All())}, func(mgr ctrl.Manager) error {
			opts := envkit.OperatorOptions()
			opts.WorkerImage, opts.OperatorNamespace = workerImage, operatorNamespace
			opts.ConnectCluster.TopicRecheckInterval = topicRecheck
			opts.ConnectCluster.Autoscaler = &hpaStandIn{}
			return controllers.Setup(mgr, opts)
		})
		if err != nil {
			return err
		}
		mgrCache = mgr.GetCache()
		return nil
	}))
}

// startControllerManager runs a real kube-controller-manager with only the
// garbage collector, so that owner references really delete children. The
// deployment controller stays off: tests write Deployment status themselves,
// as there is no kubelet.
func startControllerManager(env *envtest.Environment, assets string) (func(), error) {
	user, err := env.AddUser(envtest.User{Name: "kcm", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding the kcm user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("kcm kubeconfig: %w", err)
	}
	dir, err := os.MkdirTemp("", "conveyor-kcm-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+path,
		"--controllers=garbage-collector-controller",
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--secure-port=0",
		"--v=0",
	)
	logFile, err := os.Create(filepath.Join(dir, "kcm.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	kcm, err := proc.Start(cmd, func() { _ = logFile.Close() })
	if err != nil {
		return nil, err
	}
	return func() {
		kcm.Kill()
		if os.Getenv("CONVEYOR_KEEP_KCM_LOG") == "" {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "kube-controller-manager log: %s\n", logFile.Name())
		}
	}, nil
}

func ptr[T any](v T) *T { return &v }

// hpaStandIn plays the part the KafkaConnector reconciler's autoscaler will
// play: for clusters with autoscaling.enabled it reports that a ScaledObject
// owns the worker count, so the ConnectCluster reconciler must leave the
// Deployment's replicas to the HPA.
type hpaStandIn struct{}

func (hpaStandIn) ReconcileAutoscaling(_ context.Context, c *v1alpha1.ConnectCluster, totals clusterkit.Totals, deployment string) (clusterkit.AutoscalingResult, error) {
	if !c.AutoscalingEnabled() {
		return clusterkit.AutoscalingResult{Autoscaling: clusterkit.ConditionValue{Reason: v1alpha1.ReasonAutoscalingDisabled, Message: "off"}}, nil
	}
	return clusterkit.AutoscalingResult{
		Active:         true,
		Autoscaling:    clusterkit.ConditionValue{Status: true, Reason: v1alpha1.ReasonScaledObjectReady, Message: fmt.Sprintf("stand-in ScaledObject targets %s (%d tasks)", deployment, totals.Tasks)},
		CapacityRaised: clusterkit.ConditionValue{Reason: v1alpha1.ReasonWithinRequested, Message: "within bounds"},
	}, nil
}
