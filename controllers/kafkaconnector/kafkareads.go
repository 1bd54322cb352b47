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

package kafkaconnector

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// KafkaReads is the production Partitions and Lag hooks of the Reconciler:
// a short-lived kadm client per call, connected like the ConnectCluster
// reconciler connects (TLS and SASL from the cluster's Secrets).
type KafkaReads struct {
	// Reader reads the cluster's Secrets; it should bypass the cache
	// (the manager's GetAPIReader).
	Reader client.Reader
	// Timeout bounds one read (default 10s).
	Timeout time.Duration
}

func (k KafkaReads) admin(ctx context.Context, cc *v1alpha1.ConnectCluster) (*kadm.Client, context.Context, func(), error) {
	conn, _, prob := clusterkit.KafkaConnectionFor(ctx, k.Reader, cc)
	if prob != nil {
		return nil, nil, nil, fmt.Errorf("connecting to the Kafka of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, prob)
	}
	cl, err := kgo.NewClient(clusterkit.KgoOptions(conn)...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating a Kafka client for ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	return kadm.NewClient(cl), rctx, func() { cancel(); cl.Close() }, nil
}

// Partitions reads the partition counts of topics (see PartitionCounts).
func (k KafkaReads) Partitions(ctx context.Context, cc *v1alpha1.ConnectCluster, topics []string) (map[string]int32, error) {
	adm, rctx, done, err := k.admin(ctx, cc)
	if err != nil {
		return nil, err
	}
	defer done()
	return PartitionCounts(rctx, adm, topics)
}

// ListTopics lists the names of the topics on the cluster's Kafka (internal
// topics left out, as a topics.regex consumer leaves them out).
func (k KafkaReads) ListTopics(ctx context.Context, cc *v1alpha1.ConnectCluster) ([]string, error) {
	adm, rctx, done, err := k.admin(ctx, cc)
	if err != nil {
		return nil, err
	}
	defer done()
	details, err := adm.ListTopics(rctx)
	if err != nil {
		return nil, fmt.Errorf("listing the topics of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	return details.Names(), nil
}

// Lag reads a sink's consumer group lag (see SinkLag).
func (k KafkaReads) Lag(ctx context.Context, cc *v1alpha1.ConnectCluster, group string) (*int64, error) {
	adm, rctx, done, err := k.admin(ctx, cc)
	if err != nil {
		return nil, err
	}
	defer done()
	return SinkLag(rctx, adm, group)
}
