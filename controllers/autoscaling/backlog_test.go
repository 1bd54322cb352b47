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

package autoscaling

import (
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// A table source that reports rows and a share-mode sink get one
// metrics-api trigger each, capped by effectiveTasks and by tasks.max
// (not the 2 partitions the share sink's status limits it to); the share
// sink gets no kafka trigger, the classic sink keeps its own.
func TestBacklogTriggersCapSourcesByTasksAndShareSinksByTasksMax(t *testing.T) {
	const RUNNING, running = v1alpha1.ConnectorStateRunning, v1alpha1.ConnectorTargetRunning
	src := connector("orders-db", "PostgresTableSource", 8, 3, RUNNING, running, map[string]string{"table.whitelist": "a,b,c"})
	src.Status.BacklogUnit = "rows"
	bulk := connector("bulk-db", "PostgresTableSource", 8, 3, RUNNING, running, map[string]string{"mode": "bulk"}) // no unit: no figure
	share := connector("audit.share", "ElasticsearchSink", 6, 2, RUNNING, running, map[string]string{"topics": "audit", "consumer.group.type": "share"})
	classic := connector("archive", "FileSink", 2, 2, RUNNING, running, map[string]string{"topics": "orders"})
	cc := cluster()
	so, _ := BuildScaledObject(cc, ConnectorsFrom([]v1alpha1.KafkaConnector{src, bulk, share, classic}), Totals{EffectiveTasks: 10}, target)
	var types, names []string
	for _, tr := range so.Spec.Triggers {
		types, names = append(types, tr.Type), append(names, tr.Name)
	}
	if strings.Join(names, ",") != "lag_archive__orders,backlog_audit_share,backlog_orders_db" || strings.Join(types, ",") != "kafka,metrics-api,metrics-api" {
		t.Fatalf("triggers %v of types %v", names, types)
	}
	want := "min((lag_archive__orders ?? 0), 2000) + min((backlog_audit_share ?? 0), 6000) + min((backlog_orders_db ?? 0), 3000)"
	if f := so.Spec.Advanced.ScalingModifiers.Formula; f != want {
		t.Fatalf("formula %q, want %q", f, want)
	}
	md := so.Spec.Triggers[1].Metadata
	if md["url"] != "http://orders-connect.data.svc:9404/backlog/audit.share" || md["valueLocation"] != "backlog" || md["targetValue"] != "1000" ||
		md["aggregateFromKubeServiceEndpoints"] != "true" || md["aggregationType"] != "max" || md["authModes"] != "bearer" {
		t.Fatalf("metadata %v", md)
	}
	if ref := so.Spec.Triggers[1].AuthenticationRef; ref == nil || ref.Name != "orders-connect-backlog" {
		t.Fatalf("authenticationRef %+v", ref)
	}
	ta := BuildBacklogTriggerAuthentication(cc, so, target)
	if ta == nil || len(ta.Spec.SecretTargetRef) != 1 || ta.Spec.SecretTargetRef[0] != (kedav1alpha1.AuthSecretTargetRef{Parameter: "token", Name: "orders-metrics-token", Key: "token"}) {
		t.Fatalf("backlog TriggerAuthentication %+v", ta)
	}

	// Metrics off: nowhere to read the figure, so no backlog trigger.
	off := cluster()
	off.Spec.Metrics.Enabled = ptr.To(false)
	so, _ = BuildScaledObject(off, ConnectorsFrom([]v1alpha1.KafkaConnector{src, share}), Totals{EffectiveTasks: 5}, target)
	if so != nil {
		t.Fatalf("metrics off: %d triggers, want no ScaledObject", len(so.Spec.Triggers))
	}
	// Metrics without a token: the trigger sends none, no TriggerAuthentication.
	open := cluster()
	open.Spec.Metrics.Authentication.Enabled = ptr.To(false)
	so, _ = BuildScaledObject(open, ConnectorsFrom([]v1alpha1.KafkaConnector{src}), Totals{EffectiveTasks: 3}, target)
	if so.Spec.Triggers[0].AuthenticationRef != nil || so.Spec.Triggers[0].Metadata["authModes"] != "" || BuildBacklogTriggerAuthentication(open, so, target) != nil {
		t.Fatalf("no metrics token: trigger %+v", so.Spec.Triggers[0])
	}

	// KEDA's health names a backlog trigger by its connector.
	so, _ = BuildScaledObject(cc, ConnectorsFrom([]v1alpha1.KafkaConnector{share}), Totals{EffectiveTasks: 2}, target)
	so.Status.Health = map[string]kedav1alpha1.HealthStatus{"s0-metric-api-backlog": {NumberOfFailures: ptr.To[int32](4), Status: kedav1alpha1.HealthStatusFailing}}
	if got := UnreadableTriggers(so); len(got) != 1 || got[0].String() != "backlog_audit_share (connector audit.share, backlog: 4 failed reads)" {
		t.Fatalf("unreadable %v", got)
	}
}

// A bytes figure (a CDC slot's lag) is targeted at lagThreshold as it is,
// and its term is capped at its one task's worth, as docs/autoscaling.md
// says.
func TestBacklogTriggerInBytesCappedAtItsTasks(t *testing.T) {
	const RUNNING, running = v1alpha1.ConnectorStateRunning, v1alpha1.ConnectorTargetRunning
	cdc := connector("orders-cdc", "PostgresCDCSource", 4, 1, RUNNING, running, map[string]string{"slot.name": "orders"})
	cdc.Status.BacklogUnit = "bytes"
	so, _ := BuildScaledObject(cluster(), ConnectorsFrom([]v1alpha1.KafkaConnector{cdc}), Totals{EffectiveTasks: 1}, target)
	if so == nil || len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != BacklogTriggerType {
		t.Fatalf("want one metrics-api trigger, got %+v", so)
	}
	if got := so.Spec.Triggers[0].Metadata["targetValue"]; got != "1000" {
		t.Fatalf("targetValue %q, want lagThreshold as it is (1000)", got)
	}
	if f, want := so.Spec.Advanced.ScalingModifiers.Formula, "min((backlog_orders_cdc ?? 0), 1000)"; f != want {
		t.Fatalf("formula %q, want %q", f, want)
	}
}
