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

// Package autoscale runs Conveyor with real KEDA (its operator and metrics API server,
// KEDAVersion) and the real HPA controller of kube-controller-manager in a local cluster
// that lives in a network namespace of its own (localcluster Options.NetNS), and checks that
// the workers follow the composite lag metric up and back down. Needs root.
package autoscale

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/test/localcluster"
)

var (
	cluster *localcluster.Cluster
	cv      *localcluster.Conveyor
	// sinkDir is the host folder behind every worker's /data, the directory the ConnectClusters
	// grant to file connectors (spec.connectorAccess.fileConnectors, volume files-0): the local
	// cluster makes that emptyDir one shared folder (Options.SharedEmptyDirs, a stand-in for a
	// ReadWriteMany volume), so what the sinks wrote outlives the worker pods that the
	// scale-down removes.
	sinkDir string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if os.Geteuid() != 0 {
		fmt.Println("e2e/autoscale: the local cluster needs root (network and mount namespaces); skipping")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "conveyor-autoscale-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keep := false
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "e2e/autoscale: kept %s for its logs\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	sinkDir = filepath.Join(dir, "sink-files")
	if err := os.MkdirAll(sinkDir, 0o777); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.Chmod(sinkDir, 0o777); err != nil { // workers run as 65532
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root, err := localcluster.ModuleRoot(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tools, err := localcluster.ToolsDir(ctx, root, "tools", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	conveyorDir := filepath.Join(dir, "images", "conveyor")
	if err := localcluster.BuildConveyorImage(ctx, conveyorDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var log io.Writer
	if testing.Verbose() {
		log = os.Stderr
	}
	start := time.Now()
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		Dir:             filepath.Join(dir, "cluster"),
		Images:          map[string]string{localcluster.DefaultConveyorImage: conveyorDir},
		NetNS:           true,
		KEDA:            true,
		RestartBackoff:  time.Second,
		SharedEmptyDirs: map[string]string{"files-0": sinkDir},
		Log:             log,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e/autoscale: starting the local cluster: %v\n", err)
		keep = true
		return 1
	}
	fmt.Printf("e2e/autoscale: local cluster with KEDA up in %s (kubeconfig %s, kafka %s)\n", time.Since(start).Round(time.Millisecond), cluster.Kubeconfig, cluster.KafkaAddr)
	cv, err = localcluster.NewConveyor(cluster, root, filepath.Join(tools, "helm"))
	if err == nil {
		_, err = cv.HelmInstall(ctx)
	}
	code := 1
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e/autoscale: installing Conveyor: %v\n", err)
	} else {
		code = m.Run()
	}
	keep = code != 0
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e/autoscale: stopping the local cluster: %v\n", err)
		code = 1
	}
	return code
}
