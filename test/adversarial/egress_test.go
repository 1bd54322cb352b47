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
	"strings"
	"testing"
)

// TestCloudIdentityAndEgress: a tenant writes an S3Sink without keys to
// borrow the workers' cloud role. Without the owner's
// connectorAccess.ambientCloudCredentials it is refused naming
// aws.access.key.id (on 31d73a5 it fell back to the ambient chain). The
// owner's networkPolicy.egress is rendered into the workers'
// NetworkPolicy: Egress is listed, with Kafka and DNS kept reachable and
// only the listed destination besides.
func TestCloudIdentityAndEgress(t *testing.T) {
	owner := newTenant(t, "adv-egress", `  networkPolicy:
    egress:
    - to: [{ipBlock: {cidr: 10.20.30.40/32}}]
      ports: [{port: 5432, protocol: TCP}]
`)
	own := newTenant(t, "adv-egress-other", "")
	for _, tn := range []tenant{owner, own} {
		tn.attack(t, "borrow-role", "S3Sink", map[string]string{"topics": "adv-s3", "s3.bucket.name": "loot", "store.url": "http://127.0.0.1:9"})
		tn.refused(t, "borrow-role", "aws.access.key.id")
	}
	np := kubectl(t, "", "get", "networkpolicy", "-n", owner.ns, "-o", "jsonpath={.items[0].spec.policyTypes} {.items[0].spec.egress}")
	_, kafkaPort, _ := strings.Cut(cluster.KafkaAddr, ":")
	for _, want := range []string{"Egress", "10.20.30.40/32", `"port":53`, `"port":` + kafkaPort} {
		if !strings.Contains(np, want) {
			t.Errorf("worker NetworkPolicy lacks %s: %s", want, np)
		}
	}
	if np := kubectl(t, "", "get", "networkpolicy", "-n", own.ns, "-o", "jsonpath={.items[0].spec.policyTypes}"); strings.Contains(np, "Egress") {
		t.Errorf("a cluster without networkPolicy.egress got an egress policy: %s", np)
	}
}
