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

package apitest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// TestKubectlExplain runs the built kubectl against the API server: kubectl explain prints the
// field documentation written on the Go types, and kubectl get prints the printer columns.
func TestKubectlExplain(t *testing.T) {
	cases := []struct {
		path string
		want []string
	}{
		{"connectcluster.spec.autoscaling", []string{
			"lets KEDA scale the workers on the consumer lag",
			"minReplicas", "maxReplicas", "lagThreshold", "cooldownPeriod",
			"ceil(total effective tasks / maxTasksPerWorker)",
		}},
		{"connectcluster.spec.groupId", []string{"cannot be added, removed or changed after creation", "<namespace>.<name>"}},
		{"connectcluster.spec.config", []string{"Keys the operator owns are refused"}},
		{"connectcluster.spec.rebalance.lostWorkerDelay", []string{"Kafka Connect's default is five minutes"}},
		{"kafkaconnector.spec.tasksMax", []string{"tasks.max", "status.effectiveTasks"}},
		{"kafkaconnector.spec.state", []string{"running", "paused", "stopped"}},
		{"cc.status.conditions", []string{"Ready", "GroupConflict", "CapacityRaised"}},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			// The API server publishes a new CRD's OpenAPI a moment after it is established:
			// retry until the deadline.
			var out string
			testkit.Eventually(t, 30*time.Second, "kubectl explain "+tc.path, func() (bool, string) {
				var err error
				out, err = runKubectl(t, "explain", tc.path)
				return err == nil, fmt.Sprintf("%v\n%s", err, out)
			})
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("kubectl explain %s does not mention %q:\n%s", tc.path, w, out)
				}
			}
		})
	}

	t.Run("printer columns and category", func(t *testing.T) {
		ns := newNamespace(t)
		if err := k8sClient.Create(ctx(t), validCluster(ns, "columns")); err != nil {
			t.Fatal(err)
		}
		if err := k8sClient.Create(ctx(t), validConnector(ns, "columns")); err != nil {
			t.Fatal(err)
		}
		out, err := runKubectl(t, "get", "conveyor", "-n", ns)
		if err != nil {
			t.Fatalf("kubectl get conveyor: %v\n%s", err, out)
		}
		for _, w := range []string{"connectcluster.connect.conveyor.dev/columns", "kafkaconnector.connect.conveyor.dev/columns", "READY", "CONNECTORS", "CLASS", "TASKS MAX", "FileSink"} {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl get conveyor does not show %q:\n%s", w, out)
			}
		}
		out, err = runKubectl(t, "get", "cc,kctr", "-n", ns, "-o", "wide")
		if err != nil {
			t.Fatalf("kubectl get cc,kctr: %v\n%s", err, out)
		}
		for _, w := range []string{"GROUP", "LIMIT", "LAG"} {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl get -o wide does not show %q:\n%s", w, out)
			}
		}
	})
}

func runKubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, kubectl, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	return buf.String(), err
}
