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

// Package adversarial is the adversarial tier: Conveyor installed in the local
// cluster (real kube-apiserver, controller-manager, process kubelet, kfake
// process, a real PostgreSQL server), and KafkaConnectors written as a tenant
// who wants more than its namespace was granted would write them: one test
// file per class of attack in issue 25 (the worker's own files, the cluster's
// internal topics, group identity across namespaces, the scrubber, one
// connector crashing the workers, replica counts, cloud identity and egress).
// Each test asserts that the attack is refused or contained, naming the key.
package adversarial

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

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgtest"
	"github.com/conveyor-dev/conveyor/test/localcluster"
)

var (
	cluster *localcluster.Cluster
	cv      *localcluster.Conveyor
	pg      *pgtest.Server
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if os.Geteuid() != 0 {
		fmt.Println("adversarial: the local cluster needs root (mount namespaces); skipping")
		return 0
	}
	// Building the image is most of it (cached builds take seconds).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var err error
	if pg, err = pgtest.Start(pgtest.Options{}); err != nil {
		fmt.Fprintf(os.Stderr, "adversarial: starting PostgreSQL: %v\n", err)
		return 1
	}
	defer pg.Stop()
	dir, err := os.MkdirTemp("", "conveyor-adversarial-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keep := false
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "adversarial: kept %s for its logs\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
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
	imageDir := filepath.Join(dir, "images", "conveyor")
	if err := os.MkdirAll(imageDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	if err := localcluster.BuildConveyorImage(ctx, imageDir); err != nil {
		fmt.Fprintf(os.Stderr, "adversarial: building the image: %v\n", err)
		return 1
	}
	var log io.Writer
	if testing.Verbose() {
		log = os.Stderr
	}
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		Dir:            filepath.Join(dir, "cluster"),
		Images:         map[string]string{localcluster.DefaultConveyorImage: imageDir},
		RestartBackoff: time.Second,
		Log:            log,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "adversarial: starting the local cluster: %v\n", err)
		if cluster != nil {
			_ = cluster.Stop()
		}
		keep = true
		return 1
	}
	if cv, err = localcluster.NewConveyor(cluster, root, filepath.Join(tools, "helm")); err == nil {
		_, err = cv.HelmInstall(ctx)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "adversarial: installing Conveyor: %v\n", err)
		_ = cluster.Stop()
		keep = true
		return 1
	}
	fmt.Printf("adversarial: local cluster up and Conveyor installed in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	keep = code != 0
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "adversarial: stopping the local cluster: %v\n", err)
		code = 1
	}
	return code
}
