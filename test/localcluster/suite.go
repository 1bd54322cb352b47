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
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/test/testkit/servers/mariadbtest"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// Suite is what a tier asks of the local cluster that Main runs its tests in.
type Suite struct {
	// Name prefixes Main's messages and the suite's temporary folder.
	Name string
	// Install installs Conveyor by its Helm chart once the cluster is up. The
	// Conveyor image (DefaultConveyorImage) is built in any case.
	Install bool
	// HelmArgs are more helm flags for that install ("--set", "key=value"...).
	HelmArgs []string
	// WorkerTags are build tags of the image's conveyor-worker (conveyor_attack: the
	// connectors of test/attackconnector).
	WorkerTags []string
	// Images are the tier's own pod images: each function fills the folder it is
	// given (the image's files), while the cluster starts.
	Images map[string]func(ctx context.Context, dir string) error
	// Prepare runs first, with the suite's temporary folder: host folders that pods
	// mount, servers the tier needs beside the cluster. The function it returns, when
	// not nil, runs after the cluster stopped.
	Prepare func(dir string) (cleanup func(), err error)
	// Cluster changes the cluster's Options before it starts (NetNS, KEDA,
	// SecureKafka, SharedEmptyDirs...).
	Cluster func(*Options)
	// Ready gets the cluster, and Conveyor when Install is set, before the tests run.
	Ready func(*Cluster, *Conveyor)
	// NoLeftovers fails the run when a pod process, or any process whose command
	// line names the suite's folder, outlives the cluster's Stop.
	NoLeftovers bool
}

// Main is the TestMain body of every tier that runs in a local cluster, as
// envkit.Main is for envtest: os.Exit(localcluster.Main(m, suite)). It needs root
// (the pods' mount and network namespaces): as another user it says so and returns 0.
// It makes a temporary folder, runs s.Prepare, builds the images while the cluster
// starts, installs Conveyor when asked, hands the cluster to s.Ready, runs m, and stops
// the cluster, keeping the folder for its logs when a test or the set-up failed.
func Main(m *testing.M, s Suite) (code int) {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard()) // tests read resources with controller-runtime's client
	if os.Geteuid() != 0 {
		fmt.Printf("%s: the local cluster needs root (mount and network namespaces); skipping\n", s.Name)
		return 0
	}
	// Building the images and installing the chart is most of it (cached builds take seconds).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "conveyor-"+s.Name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keep := false
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "%s: kept %s for its logs\n", s.Name, dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %s: %v\n", s.Name, what, err)
		keep = true
		return 1
	}
	if s.Prepare != nil {
		cleanup, err := s.Prepare(dir)
		if err != nil {
			return fail("preparing", err)
		}
		if cleanup != nil {
			defer cleanup()
		}
	}
	builds := map[string]func(ctx context.Context, dir string) error{
		DefaultConveyorImage: func(ctx context.Context, dir string) error {
			return BuildConveyorImage(ctx, dir, s.WorkerTags...)
		},
	}
	for name, build := range s.Images {
		builds[name] = build
	}
	images := map[string]string{}
	for name := range builds {
		images[name] = filepath.Join(dir, "images", path.Base(name))
		if err := os.MkdirAll(images[name], 0o755); err != nil {
			return fail("making the image folders", err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var buildErrs []error
	for name, build := range builds {
		wg.Go(func() {
			if err := build(ctx, images[name]); err != nil {
				mu.Lock()
				buildErrs = append(buildErrs, fmt.Errorf("building the image %s: %w", name, err))
				mu.Unlock()
			}
		})
	}
	var log io.Writer
	if testing.Verbose() {
		log = os.Stderr
	}
	opts := Options{Dir: filepath.Join(dir, "cluster"), Images: images, RestartBackoff: time.Second, Log: log}
	if s.Cluster != nil {
		s.Cluster(&opts)
	}
	start := time.Now()
	cluster, err := Start(ctx, opts)
	wg.Wait()
	if err == nil {
		err = errors.Join(buildErrs...)
	}
	if err != nil {
		if cluster != nil {
			_ = cluster.Stop()
		}
		return fail("starting the local cluster", err)
	}
	fmt.Printf("%s: local cluster up in %s (kubeconfig %s, kafka %s)\n", s.Name, time.Since(start).Round(time.Millisecond), cluster.Kubeconfig, cluster.KafkaAddr)
	var cv *Conveyor
	if s.Install {
		if cv, err = install(ctx, cluster, s.HelmArgs...); err != nil {
			_ = cluster.Stop()
			return fail("installing Conveyor", err)
		}
		fmt.Printf("%s: Conveyor installed %s after the start\n", s.Name, time.Since(start).Round(time.Millisecond))
	}
	if s.Ready != nil {
		s.Ready(cluster, cv)
	}
	code = m.Run()
	keep = code != 0
	pids := cluster.PodProcesses()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: stopping the local cluster: %v\n", s.Name, err)
		code = 1
	}
	if s.NoLeftovers {
		if left := leftovers(dir, pids); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "%s: processes left after Stop: %v\n", s.Name, left)
			code = 1
		}
	}
	return code
}

// install installs Conveyor by its Helm chart; extra are more helm flags.
func install(ctx context.Context, cluster *Cluster, extra ...string) (*Conveyor, error) {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := ToolsDir(ctx, root, "tools", os.Stderr)
	if err != nil {
		return nil, err
	}
	cv, err := NewConveyor(cluster, root, filepath.Join(tools, "helm"))
	if err != nil {
		return nil, err
	}
	if _, err := cv.HelmInstall(ctx, extra...); err != nil {
		return nil, err
	}
	return cv, nil
}

// leftovers lists live processes among pids or whose command line mentions dir.
func leftovers(dir string, pids []int) []string {
	var out []string
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			out = append(out, fmt.Sprintf("pod process %d", pid))
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); bytes.Contains(stat, []byte(") Z ")) {
			continue // a zombie waiting for its parent is not running
		}
		if bytes.Contains(cmdline, []byte(dir)) {
			out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// StartPostgres is a Suite.Prepare that starts a PostgreSQL server of the suite's own
// (pgtest) into *pg, and stops it after the cluster.
func StartPostgres(pg **pgtest.Server) func(dir string) (func(), error) {
	return func(string) (func(), error) {
		s, err := pgtest.Start(pgtest.Options{})
		if err != nil {
			return nil, fmt.Errorf("starting PostgreSQL: %w", err)
		}
		*pg = s
		return func() { _ = s.Stop() }, nil
	}
}

// StartMariaDB is a Suite.Prepare that starts a MariaDB server of the suite's own
// (mariadbtest) into *db, and stops it after the cluster.
func StartMariaDB(db **mariadbtest.Server) func(dir string) (func(), error) {
	return func(string) (func(), error) {
		s, err := mariadbtest.Start(mariadbtest.Options{})
		if err != nil {
			return nil, fmt.Errorf("starting MariaDB: %w", err)
		}
		*db = s
		return func() { _ = s.Stop() }, nil
	}
}

// PrepareAll is a Suite.Prepare that runs each step in turn; its cleanup undoes
// them in reverse order (and so does a failure part way).
func PrepareAll(steps ...func(dir string) (func(), error)) func(dir string) (func(), error) {
	return func(dir string) (func(), error) {
		var undo []func()
		cleanup := func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
		for _, step := range steps {
			u, err := step(dir)
			if err != nil {
				cleanup()
				return nil, err
			}
			undo = append(undo, u)
		}
		return cleanup, nil
	}
}
