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
	"testing"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestImmutableFields updates stored objects in ways the CEL transition rules forbid, and in
// ways they allow, against the API server.
func TestImmutableFields(t *testing.T) {
	ns := newNamespace(t)

	clusterUpdate := func(t *testing.T, name string, initial, change func(*v1.ConnectCluster)) error {
		t.Helper()
		cc := validCluster(ns, name)
		initial(cc)
		if err := k8sClient.Create(ctx(t), cc); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		change(cc)
		return k8sClient.Update(ctx(t), cc)
	}
	none := func(*v1.ConnectCluster) {}
	withGroup := func(g string) func(*v1.ConnectCluster) {
		return func(c *v1.ConnectCluster) { c.Spec.GroupID = ptr(g) }
	}

	refused := []struct {
		name            string
		initial, change func(*v1.ConnectCluster)
		want            []string
	}{
		{"groupId added", none, withGroup("payments"), []string{"spec.groupId", "cannot be added, removed or changed after creation"}},
		{"groupId changed", withGroup("payments"), withGroup("payments-v2"), []string{"spec.groupId", "cannot be added, removed or changed"}},
		{"groupId removed", withGroup("payments"), func(c *v1.ConnectCluster) { c.Spec.GroupID = nil }, []string{"spec.groupId", "cannot be added, removed or changed"}},
		{"configTopic changed", func(c *v1.ConnectCluster) { c.Spec.Storage.ConfigTopic = ptr("a-configs") },
			func(c *v1.ConnectCluster) { c.Spec.Storage.ConfigTopic = ptr("b-configs") }, []string{"spec.storage.configTopic", "cannot be added, removed or changed"}},
		{"offsetTopic added", none, func(c *v1.ConnectCluster) { c.Spec.Storage.OffsetTopic = ptr("new-offsets") },
			[]string{"spec.storage.offsetTopic", "cannot be added, removed or changed"}},
		{"statusTopic removed", func(c *v1.ConnectCluster) { c.Spec.Storage.StatusTopic = ptr("a-status") },
			func(c *v1.ConnectCluster) { c.Spec.Storage.StatusTopic = nil }, []string{"spec.storage.statusTopic", "cannot be added, removed or changed"}},
	}
	for i, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			err := clusterUpdate(t, "immutable-"+string(rune('a'+i)), tc.initial, tc.change)
			requireRefused(t, err, tc.want...)
		})
	}

	t.Run("mutable fields change while groupId and topics stay", func(t *testing.T) {
		err := clusterUpdate(t, "mutable", func(c *v1.ConnectCluster) {
			c.Spec.GroupID = ptr("orders")
			c.Spec.Storage.OffsetTopic = ptr("orders-offsets")
		}, func(c *v1.ConnectCluster) {
			c.Spec.Replicas = ptr(int32(4))
			c.Spec.Config = map[string]string{"offset.flush.interval.ms": "2000"}
			c.Spec.Autoscaling = &v1.AutoscalingSpec{Enabled: true, MaxReplicas: ptr(int32(8))}
		})
		if err != nil {
			t.Fatalf("updating mutable fields was refused: %v", err)
		}
	})

	t.Run("clusterRef changed", func(t *testing.T) {
		kc := validConnector(ns, "moving")
		if err := k8sClient.Create(ctx(t), kc); err != nil {
			t.Fatal(err)
		}
		kc.Spec.ClusterRef.Name = "other"
		requireRefused(t, k8sClient.Update(ctx(t), kc), "spec.clusterRef", "clusterRef is immutable")
	})

	t.Run("connector fields other than clusterRef change", func(t *testing.T) {
		kc := validConnector(ns, "staying")
		if err := k8sClient.Create(ctx(t), kc); err != nil {
			t.Fatal(err)
		}
		kc.Spec.TasksMax = ptr(int32(6))
		kc.Spec.State = v1.ConnectorTargetPaused
		kc.Spec.Config["file"] = "/tmp/other.jsonl"
		if err := k8sClient.Update(ctx(t), kc); err != nil {
			t.Fatalf("updating tasksMax, state and config was refused: %v", err)
		}
	})
}
