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
	"os"
	"path/filepath"
	"testing"

	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
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
	// pg is the PostgreSQL server of the table source (backlog_test.go), on the machine's
	// loopback; the pods reach it through Cluster.ForwardIn.
	pg *pgtest.Server
)

func TestMain(m *testing.M) {
	os.Exit(localcluster.Main(m, localcluster.Suite{
		Name:    "autoscale",
		Install: true,
		Prepare: func(dir string) (func(), error) {
			sinkDir = filepath.Join(dir, "sink-files")
			if err := os.MkdirAll(sinkDir, 0o777); err != nil {
				return nil, err
			}
			if err := os.Chmod(sinkDir, 0o777); err != nil { // workers run as 65532
				return nil, err
			}
			return localcluster.StartPostgres(&pg)(dir)
		},
		Cluster: func(o *localcluster.Options) {
			o.NetNS, o.KEDA = true, true
			o.SharedEmptyDirs = map[string]string{"files-0": sinkDir}
		},
		Ready: func(c *localcluster.Cluster, v *localcluster.Conveyor) { cluster, cv = c, v },
	}))
}
