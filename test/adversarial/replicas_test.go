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

// TestReplicaCeilingHolds: tenants ask, through tasksMax, for far more
// workers than the cluster's owner allows (3 connectors x 50 tasks at one
// task per worker: a floor of 150 workers). With autoscaling.maxReplicas 2
// made hard, the Deployment never goes above 2 (this local cluster runs no
// KEDA, so the operator keeps the count itself) and CapacityRaised says how
// many tasks wait, naming hardMaxReplicas. On 31d73a5 the floor raised the
// Deployment to 150 workers. The one cap of 1000 for every floor (with
// and without autoscaling, the ScaledObject's minReplicaCount) is checked
// in controllers/autoscaling and controllers/connectcluster: asking the
// local cluster for 1000 worker processes would only measure the machine.
func TestReplicaCeilingHolds(t *testing.T) {
	tn := newTenant(t, "adv-replicas", "  maxTasksPerWorker: 1\n  autoscaling: {enabled: true, minReplicas: 1, maxReplicas: 2, hardMaxReplicas: true}\n")
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
  tasksMax: 1000
  config:
    topic: adv-wide
    count: "100000"
    ranges: "50"
    rate: "1"
`, i)
	}
	kubectl(t, cfg.String(), "apply", "-n", tn.ns, "-f", "-")
	var deployments string
	testkit.Eventually(t, 3*time.Minute, "CapacityRaised to say which tasks wait", func() (bool, string) {
		out, err := cluster.RunKubectl(t.Context(), "", "get", "connectcluster", "cc", "-n", tn.ns, "-o",
			`jsonpath={.status.conditions[?(@.type=="CapacityRaised")].reason}|{.status.conditions[?(@.type=="CapacityRaised")].message}`)
		deployments = kubectl(t, "", "get", "deployment", "-n", tn.ns, "-o", "jsonpath={.items[*].spec.replicas}")
		for _, f := range strings.Fields(deployments) {
			if n, _ := strconv.Atoi(f); n > 2 {
				t.Fatalf("the Deployment asks for %d workers, above the hard maxReplicas 2 (condition: %s)", n, out)
			}
		}
		return err == nil && strings.HasPrefix(out, v1alpha1.ReasonTasksWaitForMaxReplicas+"|") && strings.Contains(out, "148 of 150 tasks wait"), out
	})
	t.Logf("Deployment replicas: %s", deployments)
	kubectl(t, "", "delete", "kafkaconnector", "--all", "-n", tn.ns, "--wait=false")
}
