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
	"path/filepath"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// cluster is an autoscaling cluster as the API server stores it (defaults applied).
func cluster() *v1alpha1.ConnectCluster {
	return &v1alpha1.ConnectCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "data"},
		Spec: v1alpha1.ConnectClusterSpec{
			Kafka:             v1alpha1.KafkaConnection{BootstrapServers: "kafka-0.kafka:9092,kafka-1.kafka:9092"},
			MaxTasksPerWorker: ptr.To[int32](8),
			Autoscaling: &v1alpha1.AutoscalingSpec{
				Enabled:                true,
				MinReplicas:            ptr.To[int32](1),
				MaxReplicas:            ptr.To[int32](10),
				LagThreshold:           ptr.To[int64](1000),
				ActivationLagThreshold: ptr.To[int64](0),
				PollingInterval:        &metav1.Duration{Duration: 30 * time.Second},
				CooldownPeriod:         &metav1.Duration{Duration: 5 * time.Minute},
			},
		},
	}
}

func connector(name, class string, tasksMax, effective int32, state v1alpha1.ConnectorState, target v1alpha1.ConnectorTargetState, config map[string]string, activeTopics ...string) v1alpha1.KafkaConnector {
	return v1alpha1.KafkaConnector{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "data"},
		Spec: v1alpha1.KafkaConnectorSpec{
			ClusterRef: v1alpha1.ClusterReference{Name: "orders"},
			Class:      class, TasksMax: ptr.To(tasksMax), Config: config, State: target,
		},
		Status: v1alpha1.KafkaConnectorStatus{State: state, TasksMax: tasksMax, EffectiveTasks: effective, Topics: activeTopics},
	}
}

var target = Target{DeploymentName: "orders-connect", ServiceName: "orders-connect", Labels: map[string]string{
	"app.kubernetes.io/instance": "orders", "app.kubernetes.io/managed-by": "conveyor-operator",
}}

type goldenOut struct {
	Decision struct {
		Min, Max, Floor int32
		CapacityRaised  bool
		Reason, Message string
	} `json:"decision"`
	ScaledObject          *kedav1alpha1.ScaledObject          `json:"scaledObject"`
	TriggerAuthentication *kedav1alpha1.TriggerAuthentication `json:"triggerAuthentication"`
}

func TestGoldenScaledObjects(t *testing.T) {
	const running, paused, stopped = v1alpha1.ConnectorTargetRunning, v1alpha1.ConnectorTargetPaused, v1alpha1.ConnectorTargetStopped
	const RUNNING, PAUSED, STOPPED = v1alpha1.ConnectorStateRunning, v1alpha1.ConnectorStatePaused, v1alpha1.ConnectorStateStopped
	cases := []struct {
		name       string
		cluster    func() *v1alpha1.ConnectCluster
		connectors []v1alpha1.KafkaConnector
		// brokerTopics, when set, resolve topics.regex sinks.
		brokerTopics []string
		// noModifiers: a KEDA whose CRD lacks scalingModifiers.
		noModifiers bool
		wantNil     bool
	}{
		{name: "sink-over-partitions", cluster: cluster, connectors: []v1alpha1.KafkaConnector{
			connector("orders-sink", "PostgresSink", 10, 4, RUNNING, running, map[string]string{"topics": "orders"}),
		}},
		{name: "cdc-source-only", cluster: cluster, wantNil: true, connectors: []v1alpha1.KafkaConnector{
			connector("orders-cdc", "PostgresCDCSource", 10, 1, RUNNING, running, map[string]string{"slot.name": "conveyor"}),
		}},
		{name: "several-connectors", cluster: cluster, connectors: []v1alpha1.KafkaConnector{
			connector("orders-cdc", "PostgresCDCSource", 10, 1, RUNNING, running, map[string]string{"slot.name": "conveyor"}),
			connector("archive", "FileSink", 6, 6, RUNNING, running, map[string]string{"topics": "refunds, orders", "file": "/data/a"}),
			connector("audit", "FileSink", 2, 2, RUNNING, running, map[string]string{"topics.regex": "audit\\..*", "file": "/data/b"}, "audit.logins"),
			connector("paused-sink", "FileSink", 3, 3, PAUSED, paused, map[string]string{"topics": "orders", "file": "/data/c"}),
			connector("stopped-sink", "FileSink", 5, 5, STOPPED, stopped, map[string]string{"topics": "orders", "file": "/data/d"}),
			connector("tables", "PostgresTableSource", 4, 3, RUNNING, running, map[string]string{"tables": "a,b,c"}),
		}},
		{name: "regex-from-broker", cluster: cluster, brokerTopics: []string{"audit.logins", "audit.payments", "audit", "orders", "xaudit.y"}, connectors: []v1alpha1.KafkaConnector{
			connector("audit", "FileSink", 4, 4, RUNNING, running, map[string]string{"topics.regex": "audit\\..*", "file": "/data/b"}, "audit.logins"),
		}},
		{name: "regex-unresolved", cluster: cluster, wantNil: true, connectors: []v1alpha1.KafkaConnector{
			connector("audit", "FileSink", 4, 4, RUNNING, running, map[string]string{"topics.regex": "audit\\..*", "file": "/data/b"}),
		}},
		{name: "without-scaling-modifiers", cluster: cluster, noModifiers: true, connectors: []v1alpha1.KafkaConnector{
			connector("archive", "FileSink", 6, 6, RUNNING, running, map[string]string{"topics": "refunds, orders", "file": "/data/a"}),
			connector("orders-sink", "PostgresSink", 10, 4, RUNNING, running, map[string]string{"topics": "orders"}),
		}},
		{name: "cap-min-replicas", cluster: func() *v1alpha1.ConnectCluster {
			cc := cluster()
			cc.Spec.Autoscaling.MinReplicas = ptr.To[int32](3)
			return cc
		}, connectors: []v1alpha1.KafkaConnector{
			connector("orders-sink", "PostgresSink", 10, 2, RUNNING, running, map[string]string{"topics": "orders"}),
		}},
		{name: "cap-max-replicas-overridden", cluster: func() *v1alpha1.ConnectCluster {
			cc := cluster()
			cc.Spec.MaxTasksPerWorker = ptr.To[int32](2)
			cc.Spec.Autoscaling.MaxReplicas = ptr.To[int32](3)
			return cc
		}, connectors: []v1alpha1.KafkaConnector{
			connector("orders-sink", "PostgresSink", 10, 10, RUNNING, running, map[string]string{"topics": "orders"}),
		}},
		// KEDA's pause annotations on the ConnectCluster go to the
		// ScaledObject; its other annotations, and a key KEDA does not
		// read, do not.
		{name: "paused-by-annotations", cluster: func() *v1alpha1.ConnectCluster {
			cc := cluster()
			cc.Annotations = map[string]string{
				"autoscaling.keda.sh/paused-replicas":  "2",
				"autoscaling.keda.sh/paused-scale-out": "true",
				"autoscaling.keda.sh/pause":            "true",
				"argocd.argoproj.io/tracking-id":       "orders:connect.conveyor.dev/ConnectCluster:data/orders",
			}
			return cc
		}, connectors: []v1alpha1.KafkaConnector{
			connector("orders-sink", "PostgresSink", 10, 4, RUNNING, running, map[string]string{"topics": "orders"}),
		}},
		{name: "tls-sasl", cluster: func() *v1alpha1.ConnectCluster {
			cc := cluster()
			cc.Spec.Kafka = v1alpha1.KafkaConnection{
				BootstrapServers: "broker-0.kafka.svc:9093",
				TLS: &v1alpha1.KafkaTLS{
					CA:          &v1alpha1.SecretKeyRef{Name: "kafka-ca", Key: "ca.crt"},
					Certificate: &v1alpha1.SecretKeyRef{Name: "orders-client", Key: "tls.crt"},
					Key:         &v1alpha1.SecretKeyRef{Name: "orders-client", Key: "tls.key"},
				},
				SASL: &v1alpha1.KafkaSASL{
					Mechanism: v1alpha1.SASLMechanismScramSHA512,
					Username:  v1alpha1.SecretKeyRef{Name: "orders-sasl", Key: "user"},
					Password:  v1alpha1.SecretKeyRef{Name: "orders-sasl", Key: "password"},
				},
			}
			cc.Spec.Autoscaling.PollingInterval = &metav1.Duration{Duration: 15 * time.Second}
			cc.Spec.Autoscaling.CooldownPeriod = &metav1.Duration{Duration: 90 * time.Second}
			cc.Spec.Autoscaling.LagThreshold = ptr.To[int64](500)
			cc.Spec.Autoscaling.ActivationLagThreshold = ptr.To[int64](10)
			return cc
		}, connectors: []v1alpha1.KafkaConnector{
			connector("orders-sink", "PostgresSink", 4, 4, RUNNING, running, map[string]string{"topics": "orders"}),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := c.cluster()
			conns := ConnectorsFrom(c.connectors)
			if c.brokerTopics != nil {
				conns = ResolveRegexTopics(conns, c.brokerTopics)
			}
			so, d := BuildScaledObjectFor(cc, conns, Totals{EffectiveTasks: TotalEffectiveTasks(conns)}, target, Features{ScalingModifiers: !c.noModifiers, ScalingModifiersFallback: !c.noModifiers})
			if (so == nil) != c.wantNil {
				t.Fatalf("ScaledObject nil = %v, want %v", so == nil, c.wantNil)
			}
			if so != nil {
				if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
					t.Fatalf("KEDA refuses the triggers: %v", err)
				}
				if *so.Spec.MinReplicaCount != d.Min || *so.Spec.MaxReplicaCount != d.Max {
					t.Fatalf("bounds %d..%d differ from the decision %+v", *so.Spec.MinReplicaCount, *so.Spec.MaxReplicaCount, d)
				}
				for _, tr := range so.Spec.Triggers {
					if tr.Metadata["topic"] == "" {
						t.Fatalf("trigger %s has no topic", tr.Name)
					}
				}
				if (so.Spec.Advanced.ScalingModifiers.Formula != "") == c.noModifiers {
					t.Fatalf("scalingModifiers = %+v with noModifiers %v", so.Spec.Advanced.ScalingModifiers, c.noModifiers)
				}
				// The cooldown is the HPA's scale-down stabilization window (KEDA's own
				// cooldownPeriod only delays a scale to zero).
				if w := so.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds; *w != min(*so.Spec.CooldownPeriod, 3600) {
					t.Fatalf("scale-down stabilization window %d, want the cooldown %d", *w, *so.Spec.CooldownPeriod)
				}
				if !c.noModifiers {
					// KEDA's own admission check: every name in the formula is a
					// trigger, and the formula compiles and runs.
					if _, err := kedav1alpha1.ValidateAndCompileScalingModifiers(so.DeepCopy()); err != nil {
						t.Fatalf("KEDA refuses the formula %q: %v", so.Spec.Advanced.ScalingModifiers.Formula, err)
					}
				}
			}
			var out goldenOut
			out.Decision.Min, out.Decision.Max, out.Decision.Floor = d.Min, d.Max, d.Floor
			out.Decision.CapacityRaised, out.Decision.Reason, out.Decision.Message = d.CapacityRaised, d.Reason, d.Message
			out.ScaledObject = so
			out.TriggerAuthentication = BuildTriggerAuthentication(cc, target)
			got, err := yaml.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, filepath.Join("testdata", c.name+".golden.yaml"), got)
		})
	}
}
