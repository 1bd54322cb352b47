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

package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Extra is what a tier adds to the local cluster of RunWithConveyor.
type Extra struct {
	// WorkerTags are build tags of the image's conveyor-worker (conveyor_attack: the
	// connectors of test/attackconnector).
	WorkerTags []string
	// Cluster changes the cluster's Options before it starts (SecureKafka, for instance).
	Cluster func(*Options)
}

// RunWithConveyor is the TestMain body of a tier that runs in a local cluster with
// Conveyor installed by its Helm chart (the chaos and adversarial tiers). It needs root
// (the pods' mount namespaces): as another user it says so and returns 0. It builds the
// Conveyor image, starts the cluster in a temporary folder, installs Conveyor, hands both
// to ready, runs m, and stops the cluster, keeping the folder for its logs when a test
// failed or the set-up did. name prefixes its messages and the folder; extra adds a
// tier's own parts (see Extra).
func RunWithConveyor(m *testing.M, name string, ready func(*Cluster, *Conveyor), extra ...Extra) int {
	if os.Geteuid() != 0 {
		fmt.Printf("%s: the local cluster needs root (mount namespaces); skipping\n", name)
		return 0
	}
	// Building the image is most of it (cached builds take seconds).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "conveyor-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keep := false
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "%s: kept %s for its logs\n", name, dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	root, err := ModuleRoot(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tools, err := ToolsDir(ctx, root, "tools", os.Stderr)
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
	var workerTags []string
	for _, e := range extra {
		workerTags = append(workerTags, e.WorkerTags...)
	}
	if err := BuildConveyorImage(ctx, imageDir, workerTags...); err != nil {
		fmt.Fprintf(os.Stderr, "%s: building the image: %v\n", name, err)
		return 1
	}
	var log io.Writer
	if testing.Verbose() {
		log = os.Stderr
	}
	opts := Options{
		Dir:            filepath.Join(dir, "cluster"),
		Images:         map[string]string{DefaultConveyorImage: imageDir},
		RestartBackoff: time.Second,
		Log:            log,
	}
	for _, e := range extra {
		if e.Cluster != nil {
			e.Cluster(&opts)
		}
	}
	cluster, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: starting the local cluster: %v\n", name, err)
		if cluster != nil {
			_ = cluster.Stop()
		}
		keep = true
		return 1
	}
	cv, err := NewConveyor(cluster, root, filepath.Join(tools, "helm"))
	if err == nil {
		_, err = cv.HelmInstall(ctx)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: installing Conveyor: %v\n", name, err)
		_ = cluster.Stop()
		keep = true
		return 1
	}
	fmt.Printf("%s: local cluster up and Conveyor installed in %s\n", name, time.Since(start).Round(time.Millisecond))
	ready(cluster, cv)
	code := m.Run()
	keep = code != 0
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: stopping the local cluster: %v\n", name, err)
		code = 1
	}
	return code
}
