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

package adversarial

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestReplicaFloorCapped: a tenant asks, through tasksMax, for far more
// workers than the cluster allows. The Deployment never goes above the one
// cap (v1alpha1.MaxWorkers), and the CapacityRaised condition says tasks
// wait. (The autoscaling side, a ScaledObject whose minReplicaCount followed
// an uncapped floor on 31d73a5, is covered by controllers/autoscaling's
// decision test: the local cluster of this tier runs without KEDA.)
func TestReplicaFloorCapped(t *testing.T) {
	tn := newTenant(t, "adv-replicas", "  maxTasksPerWorker: 1\n")
	var cfg strings.Builder
	for i := range 3 {
		fmt.Fprintf(&cfg, `---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: wide-%d
spec:
  clusterRef: {name: cc}
  class: RangeSource
  tasksMax: 100000
  config:
    topic: adv-wide
    ranges: "%d"
`, i, 2000)
	}
	kubectl(t, cfg.String(), "apply", "-n", tn.ns, "-f", "-")
	testkit.Eventually(t, 3*time.Minute, "the capacity condition to name the cap", func() (bool, string) {
		out, err := cluster.RunKubectl(t.Context(), "", "get", "connectcluster", "cc", "-n", tn.ns, "-o",
			`jsonpath={.status.conditions[?(@.type=="CapacityRaised")].message}`)
		return err == nil && strings.Contains(out, "capped at "+strconv.Itoa(v1alpha1.MaxWorkers)), out
	})
	out := kubectl(t, "", "get", "deployment", "-n", tn.ns, "-o", "jsonpath={.items[*].spec.replicas}")
	for _, f := range strings.Fields(out) {
		if n, _ := strconv.Atoi(f); n > v1alpha1.MaxWorkers {
			t.Fatalf("Deployment asks for %d workers, above the cap %d", n, v1alpha1.MaxWorkers)
		}
	}
	// Scale back down so the local cluster does not start a thousand pods
	// for the tests after this one.
	kubectl(t, "", "delete", "kafkaconnector", "--all", "-n", tn.ns, "--wait=false")
}
