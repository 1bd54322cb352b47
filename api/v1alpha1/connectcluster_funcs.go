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

package v1alpha1

import (
	"strings"
	"time"
)

// GroupID is the Kafka Connect group of the cluster: spec.groupId when set, else the value the
// operator recorded in status.groupId, else DefaultGroupID of the cluster's namespace and name.
func (c *ConnectCluster) GroupID() string {
	if c.Spec.GroupID != nil && *c.Spec.GroupID != "" {
		return *c.Spec.GroupID
	}
	if c.Status.GroupID != "" {
		return c.Status.GroupID
	}
	return DefaultGroupID(c.Namespace, c.Name)
}

// ConfigTopic is the name of the config topic: storage.configTopic or "<groupId>-configs".
func (c *ConnectCluster) ConfigTopic() string {
	return stringOr(c.Spec.Storage.ConfigTopic, c.GroupID()+ConfigTopicSuffix)
}

// OffsetTopic is the name of the offset topic: storage.offsetTopic or "<groupId>-offsets".
func (c *ConnectCluster) OffsetTopic() string {
	return stringOr(c.Spec.Storage.OffsetTopic, c.GroupID()+OffsetTopicSuffix)
}

// StatusTopic is the name of the status topic: storage.statusTopic or "<groupId>-status".
func (c *ConnectCluster) StatusTopic() string {
	return stringOr(c.Spec.Storage.StatusTopic, c.GroupID()+StatusTopicSuffix)
}

// StorageReplicationFactor is storage.replicationFactor or its default.
func (c *ConnectCluster) StorageReplicationFactor() int32 {
	return int32Or(c.Spec.Storage.ReplicationFactor, DefaultStorageReplication)
}

// OffsetPartitions is storage.offsetPartitions or its default.
func (c *ConnectCluster) OffsetPartitions() int32 {
	return int32Or(c.Spec.Storage.OffsetPartitions, DefaultOffsetPartitions)
}

// StatusPartitions is storage.statusPartitions or its default.
func (c *ConnectCluster) StatusPartitions() int32 {
	return int32Or(c.Spec.Storage.StatusPartitions, DefaultStatusPartitions)
}

// RequestedReplicas is spec.replicas or its default.
func (c *ConnectCluster) RequestedReplicas() int32 {
	return int32Or(c.Spec.Replicas, DefaultReplicas)
}

// MaxTasksPerWorker is spec.maxTasksPerWorker or its default.
func (c *ConnectCluster) MaxTasksPerWorker() int32 {
	return int32Or(c.Spec.MaxTasksPerWorker, DefaultMaxTasksPerWorker)
}

// LostWorkerDelay is rebalance.lostWorkerDelay or its default.
func (c *ConnectCluster) LostWorkerDelay() time.Duration {
	if d := c.Spec.Rebalance.LostWorkerDelay; d != nil {
		return d.Duration
	}
	return DefaultLostWorkerDelay
}

// AutoscalingEnabled reports whether autoscaling.enabled is true.
func (c *ConnectCluster) AutoscalingEnabled() bool {
	return c.Spec.Autoscaling != nil && c.Spec.Autoscaling.Enabled
}

// MinReplicasOrDefault is autoscaling.minReplicas or its default.
func (a *AutoscalingSpec) MinReplicasOrDefault() int32 {
	if a == nil {
		return DefaultMinReplicas
	}
	return int32Or(a.MinReplicas, DefaultMinReplicas)
}

// MaxReplicasOrDefault is autoscaling.maxReplicas or its default.
func (a *AutoscalingSpec) MaxReplicasOrDefault() int32 {
	if a == nil {
		return DefaultMaxReplicas
	}
	return int32Or(a.MaxReplicas, DefaultMaxReplicas)
}

// RestAuthenticationEnabled reports whether the REST API requires authentication (default true).
func (c *ConnectCluster) RestAuthenticationEnabled() bool {
	return boolOr(c.Spec.RestAPI.Authentication.Enabled, true)
}

// RestTokenSecret is the Secret key holding the REST API bearer token:
// restApi.authentication.tokenSecret, or key "token" of the generated "<cluster>-rest-token".
func (c *ConnectCluster) RestTokenSecret() SecretKeyRef {
	if s := c.Spec.RestAPI.Authentication.TokenSecret; s != nil && s.Name != "" {
		return *s
	}
	return SecretKeyRef{Name: c.Name + RestTokenSecretSuffix, Key: RestTokenSecretKey}
}

// NetworkPolicyEnabled reports whether the operator keeps a NetworkPolicy (default true).
func (c *ConnectCluster) NetworkPolicyEnabled() bool {
	return boolOr(c.Spec.NetworkPolicy.Enabled, true)
}

// MetricsEnabled reports whether workers serve metrics (default true).
func (c *ConnectCluster) MetricsEnabled() bool {
	return boolOr(c.Spec.Metrics.Enabled, true)
}

// MetricsPort is metrics.port or its default.
func (c *ConnectCluster) MetricsPort() int32 {
	return int32Or(c.Spec.Metrics.Port, DefaultMetricsPort)
}

func stringOr(p *string, def string) string {
	if p != nil && *p != "" {
		return *p
	}
	return def
}

func int32Or(p *int32, def int32) int32 {
	if p != nil {
		return *p
	}
	return def
}

func boolOr(p *bool, def bool) bool {
	if p != nil {
		return *p
	}
	return def
}

// ExactlyOnceSourceSupport is the worker's exactly.once.source.support:
// "enabled" with spec.exactlyOnce=true, else config's value, else "disabled".
func (cc *ConnectCluster) ExactlyOnceSourceSupport() string {
	if cc.Spec.ExactlyOnce != nil {
		if *cc.Spec.ExactlyOnce {
			return "enabled"
		}
		return "disabled"
	}
	if v, ok := cc.Spec.Config["exactly.once.source.support"]; ok {
		return strings.ToLower(strings.TrimSpace(v))
	}
	return "disabled"
}

// MaxWorkers caps every replica count the operator derives (the capacity
// floor with and without autoscaling, the ScaledObject's minReplicaCount
// and maxReplicaCount), as the API caps spec.replicas and the autoscaling
// bounds: a burst of connectors with large tasksMax (a probe derived
// 125000) must never ask for a thousand-fold Deployment. Beyond it, tasks
// wait unassigned and a condition says why.
const MaxWorkers = 1000
