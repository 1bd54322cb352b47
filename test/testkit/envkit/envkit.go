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

// Package envkit is the Kubernetes half of the test kit: what every envtest
// suite needs to start its one real API server (the Kubernetes test binaries
// that hack/build-test-binaries.sh builds, the repository's CRDs, KEDA's CRDs
// from the module cache), a manager started and stopped with it, and
// in-process workers. Main is a suite's whole TestMain.
package envkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Assets returns the folder of the Kubernetes test binaries: $KUBEBUILDER_ASSETS
// when set, otherwise the folder hack/build-test-binaries.sh prints (building the
// binaries first when they are missing). It checks that etcd, kube-apiserver and
// the extra binaries named are there, and exports KUBEBUILDER_ASSETS so envtest
// and child processes find them.
func Assets(extra ...string) (string, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		out, err := exec.Command(filepath.Join(RepoRoot(), "hack", "build-test-binaries.sh"), "k8s").Output()
		if err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and hack/build-test-binaries.sh k8s failed: %w", err)
		}
		assets = strings.TrimSpace(string(out))
	}
	for _, b := range append([]string{"etcd", "kube-apiserver"}, extra...) {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s lacks %s (%v): run hack/build-test-binaries.sh all", assets, b, err)
		}
	}
	if err := os.Setenv("KUBEBUILDER_ASSETS", assets); err != nil {
		return "", err
	}
	return assets, nil
}

// Environment is an envtest environment with the repository's CRDs installed,
// running the binaries in assets.
func Environment(assets string, scheme *k8sruntime.Scheme) *envtest.Environment {
	return &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                scheme,
	}
}

// KEDACRDDir is the folder of KEDA's CRD files in the module cache, for suites
// that install them (KEDA's CRDs are optional for the operator).
func KEDACRDDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kedacore/keda/v2")
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the KEDA module (for its CRDs): %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases"), nil
}

// StartManager runs mgr in the background and waits until its cache has
// synced. stop cancels the manager and returns the error it stopped with.
func StartManager(mgr manager.Manager) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("manager stopped with an error: %w", err)
		}
		return nil
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		_ = stop()
		return nil, errors.New("the manager's cache did not sync")
	}
	return stop, nil
}

// WorkerSpec describes an in-process Conveyor worker of a ConnectCluster.
type WorkerSpec struct {
	// Bootstrap is the Kafka (kfake) address.
	Bootstrap string
	// Cluster gives the group id, the internal topics and their partitions
	// and replication (its spec, with the defaults the API server applies).
	Cluster *v1alpha1.ConnectCluster
	// RestToken is the bearer token of the worker's REST API.
	RestToken string
	// Logger is the worker's logger (warnings to stderr when nil).
	Logger *slog.Logger
	// Resolver resolves config placeholders (the worker's default when nil).
	Resolver herder.Resolver
}

// StartWorker starts one real worker in distributed mode: REST on a free
// loopback port with bearer authentication, the cluster's internal topics
// (created when missing, as the operator would), short offset-flush and
// limit-check intervals. stop shuts it down and removes its files.
func StartWorker(spec WorkerSpec) (w *worker.Worker, stop func(), err error) {
	dir, err := os.MkdirTemp("", "conveyor-envtest-worker-")
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	tokenFile := filepath.Join(dir, "rest-token")
	if err := os.WriteFile(tokenFile, []byte(spec.RestToken), 0o600); err != nil {
		return nil, nil, err
	}
	cc := spec.Cluster
	rf := strconv.Itoa(int(cc.StorageReplicationFactor()))
	props := map[string]string{
		workerconfig.KeyBootstrapServers:               spec.Bootstrap,
		workerconfig.KeyGroupID:                        cc.GroupID(),
		workerconfig.KeyConfigStorageTopic:             cc.ConfigTopic(),
		workerconfig.KeyOffsetStorageTopic:             cc.OffsetTopic(),
		workerconfig.KeyStatusStorageTopic:             cc.StatusTopic(),
		workerconfig.KeyInternalTopicsCreate:           "true",
		workerconfig.KeyOffsetStoragePartitions:        strconv.Itoa(int(cc.OffsetPartitions())),
		workerconfig.KeyStatusStoragePartitions:        strconv.Itoa(int(cc.StatusPartitions())),
		workerconfig.KeyConfigStorageReplicationFactor: rf,
		workerconfig.KeyOffsetStorageReplicationFactor: rf,
		workerconfig.KeyStatusStorageReplicationFactor: rf,
		workerconfig.KeyOffsetFlushInterval:            "500",
		workerconfig.KeyRestHostName:                   "127.0.0.1",
		workerconfig.KeyRestPort:                       "0",
		workerconfig.KeyRestAuthTokenFile:              tokenFile,
		workerconfig.KeyTaskLimitsCheckInterval:        "500",
		// File connectors of the tests read and write under the temporary
		// folder (the worker's own token file there stays refused).
		workerconfig.KeyFileConnectorsAllowedPaths: os.TempDir(),
	}
	cfg, err := workerconfig.Parse(props)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("worker config: %w", err)
	}
	log := spec.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err = worker.Start(ctx, worker.Options{Config: cfg, Logger: log, Version: "envtest", Resolver: spec.Resolver})
	if err != nil {
		return nil, nil, err
	}
	if err := w.WaitJoined(ctx); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
		return nil, nil, err
	}
	return w, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the worker: %v\n", err)
		}
		os.RemoveAll(dir)
	}, nil
}
