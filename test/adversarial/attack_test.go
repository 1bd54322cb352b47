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
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// nsSeq numbers the namespaces the tests make.
var nsSeq atomic.Int32

// kubectl runs kubectl against the local cluster, failing the test on error.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := cluster.RunKubectl(t.Context(), stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// tenant is a namespace with a ConnectCluster in it: the owner's (grants
// a directory to file connectors) or an attacker's own (grants nothing).
type tenant struct{ ns, cluster string }

// newTenant makes a namespace and a one-worker ConnectCluster in it with
// the given connectorAccess and networkPolicy YAML (indented under spec),
// and waits for it to be Ready.
func newTenant(t *testing.T, base, extraSpec string) tenant {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", base, nsSeq.Add(1))
	kubectl(t, "", "create", "namespace", ns)
	tn := tenant{ns: ns, cluster: "cc"}
	kubectl(t, fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: cc
spec:
  replicas: 1
  kafka:
    bootstrapServers: %s
  storage:
    replicationFactor: 1
    offsetPartitions: 1
    statusPartitions: 1
%s`, cluster.KafkaAddr, extraSpec), "apply", "-n", ns, "-f", "-")
	testkit.EventuallyNoError(t, 4*time.Minute, "ConnectCluster "+ns+"/cc Ready", func() error {
		out, err := cluster.RunKubectl(context.Background(), "", "get", "connectcluster", "cc", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || strings.TrimSpace(out) != "True" {
			return fmt.Errorf("Ready=%q (%v)", out, err)
		}
		return nil
	})
	return tn
}

// object is the KafkaConnector name of attack name in this tenant: the
// namespace goes into it, because a sink's consumer group is
// connect-<connector name> and two sinks of one name on the same Kafka
// are refused as a group collision (a class of attack of its own, see
// groupidentity_test.go) before their other keys are judged.
func (tn tenant) object(name string) string { return tn.ns + "-" + name }

// attack applies a KafkaConnector with the given class and config to the
// tenant's cluster.
func (tn tenant) attack(t *testing.T, name, class string, config map[string]string) {
	t.Helper()
	name = tn.object(name)
	var b strings.Builder
	for k, v := range config {
		fmt.Fprintf(&b, "    %q: %q\n", k, v)
	}
	kubectl(t, fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: %s
spec:
  clusterRef: {name: %s}
  class: %s
  tasksMax: 1
  config:
%s`, name, tn.cluster, class, b.String()), "apply", "-n", tn.ns, "-f", "-")
}

// refused waits until the connector is Ready=False with a message naming
// key (quoted or followed by ':'), and returns the message. A connector
// that the worker accepted and whose task failed on the attack counts too:
// the message then carries the task's trace.
func (tn tenant) refused(t *testing.T, name, key string) string {
	t.Helper()
	name = tn.object(name)
	var msg string
	testkit.Eventually(t, 2*time.Minute, fmt.Sprintf("%s/%s Ready=False naming %s", tn.ns, name, key), func() (bool, string) {
		out, err := cluster.RunKubectl(context.Background(), "", "get", "kafkaconnector", name, "-n", tn.ns, "-o",
			`jsonpath={.status.conditions[?(@.type=="Ready")].status}|{.status.conditions[?(@.type=="Ready")].message}`)
		if err != nil {
			return false, err.Error()
		}
		status, m, _ := strings.Cut(out, "|")
		msg = m
		return status == "False" && (strings.Contains(m, key+":") || strings.Contains(m, `"`+key+`"`) || strings.Contains(m, key+" ")), out
	})
	t.Logf("%s/%s refused: %s", tn.ns, name, msg)
	return msg
}

// attackCase is one KafkaConnector an attacker writes and the config key
// its refusal must name.
type attackCase struct {
	name, class, key string
	cfg              map[string]string
}

// refusesAll applies every case to the tenant's cluster, then waits for
// each to be refused naming its key.
func (tn tenant) refusesAll(t *testing.T, cases []attackCase) {
	t.Helper()
	for _, c := range cases {
		tn.attack(t, c.name, c.class, c.cfg)
	}
	for _, c := range cases {
		tn.refused(t, c.name, c.key)
	}
}
