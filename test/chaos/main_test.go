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

// Package chaos is the chaos tier: Conveyor installed in the local cluster
// (real kube-apiserver, controller-manager, process kubelet, kfake process)
// streams records from a RangeSource through Kafka into a PostgresSink on a
// real PostgreSQL server (and, in the mariadb scenario, from a MySqlTableSource
// into a MySqlSink on a real MariaDB server) while one kind of fault at a time
// hits it. Each
// scenario prints its figures as `conveyor-chaos: NAME=VALUE` lines.
//
// Found by it and fixed: a restarted worker's sink tasks joined their consumer
// group as new members while the killed process's members held their
// partitions until the consumer session expired (and kfake restarts that
// group's rebalance deadline on every join): a third of the records were
// still missing 90s after the kills. A static worker's sink consumers are now
// static members too.
//
// Found by the heavy storm and fixed (issue 32): restarted workers re-sent
// their first JoinGroup every rebalance timeout plus 5s, and each re-send
// restarted kfake's rebalance deadline, which kfake's miscount of a member
// replaced while it waited in SyncGroup had made the only way out: no worker
// Ready 35s after the faults. A sink task's static member left under the
// name of a killed worker that no longer runs the task held the sink group
// the same way. See the group package's join.go and static.go, and the task
// package's sink_group.go.
package chaos

import (
	"os"
	"testing"

	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/mariadbtest"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

var (
	cluster *localcluster.Cluster
	cv      *localcluster.Conveyor
	pg      *pgtest.Server
	my      *mariadbtest.Server
)

func TestMain(m *testing.M) {
	os.Exit(localcluster.Main(m, localcluster.Suite{
		Name:    "chaos",
		Install: true,
		// client-go's Lease timings instead of the operator's 60s/40s/15s
		// (controllers/leader.go): a SIGKILLed operator (operator-sigkill) or
		// one that gave up leading while kube-apiserver was down
		// (apiserver-restart) has its successor lead within 17s instead of
		// 75s, and every scenario after those needs a leader to create its
		// connectors. The faults and the counts are the same.
		HelmArgs: []string{"--set", "leaderElection.leaseDuration=15s", "--set", "leaderElection.renewDeadline=10s",
			"--set", "leaderElection.retryPeriod=2s"},
		Prepare: localcluster.PrepareAll(localcluster.StartPostgres(&pg), localcluster.StartMariaDB(&my)),
		Ready:   func(c *localcluster.Cluster, v *localcluster.Conveyor) { cluster, cv = c, v },
	}))
}
