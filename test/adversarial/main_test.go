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
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/conveyor-dev/conveyor/test/localcluster"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

var (
	cluster *localcluster.Cluster
	cv      *localcluster.Conveyor
	pg      *pgtest.Server
	// saslCanary is the SASL password of the local cluster's secure Kafka (TLS with
	// client certificates, SASL/SCRAM-SHA-512), a marker the canary test looks for
	// after the tier has run: the broker needs it before any test starts.
	saslCanary = "canary-sasl-" + randomHex()
)

func randomHex() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func TestMain(m *testing.M) {
	os.Exit(localcluster.Main(m, localcluster.Suite{
		Name:       "adversarial",
		Install:    true,
		WorkerTags: []string{"conveyor_attack"}, // CrashSource (crashhold_test.go)
		Prepare:    localcluster.StartPostgres(&pg),
		Cluster: func(o *localcluster.Options) {
			o.SecureKafka = &localcluster.SecureKafkaOptions{User: "canary-user", Password: saslCanary}
		},
		Ready: func(c *localcluster.Cluster, v *localcluster.Conveyor) { cluster, cv = c, v },
	}))
}
