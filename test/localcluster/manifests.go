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

package localcluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// StreamCluster is the ConnectCluster of the tiers that stream records through the
// local cluster while faults hit it (chaos, the adversarial blast radius): quick
// failure detection (6 s sessions, 1 s heartbeats, 20 s rebalances) and a short
// lostWorkerDelay, so a scenario converges in seconds.
type StreamCluster struct {
	Name            string
	Replicas        int
	Kafka           string // bootstrap servers
	FlushInterval   time.Duration
	LostWorkerDelay time.Duration
}

// Manifest is the ConnectCluster as YAML for kubectl apply.
func (c StreamCluster) Manifest() string {
	return fmt.Sprintf(`apiVersion: connect.conveyor.dev/v1alpha1
kind: ConnectCluster
metadata:
  name: %s
spec:
  replicas: %d
  kafka:
    bootstrapServers: %s
  storage:
    replicationFactor: 1
    offsetPartitions: 3
    statusPartitions: 1
  config:
    offset.flush.interval.ms: "%d"
    session.timeout.ms: "6000"
    heartbeat.interval.ms: "1000"
    rebalance.timeout.ms: "20000"
  maxTasksPerWorker: 8
  rebalance:
    lostWorkerDelay: %s
`, c.Name, c.Replicas, c.Kafka, c.FlushInterval.Milliseconds(), c.LostWorkerDelay)
}

// Pipeline is a RangeSource → Kafka → PostgresSink pair on a StreamCluster: the
// KafkaConnectors src-<Name> (3 tasks, Records records at Rate per second, 16 bytes
// each) and sink-<Name> (SinkTasks tasks, plain inserts into Table, created on first use).
type Pipeline struct {
	Name, Cluster, Topic string
	Records, Rate        int
	SinkTasks            int
	DatabaseURL, Table   string
}

// Manifest is the two KafkaConnectors as YAML for kubectl apply.
func (p Pipeline) Manifest() string {
	return connectorYAML("src-"+p.Name, p.Cluster, "RangeSource", 3,
		"topic", p.Topic, "count", strconv.Itoa(p.Records), "rate", strconv.Itoa(p.Rate), "record.size", "16", "batch.size", "500") +
		"---\n" + connectorYAML("sink-"+p.Name, p.Cluster, "PostgresSink", p.SinkTasks,
		"topics", p.Topic, "connection.url", p.DatabaseURL, "table.name.format", p.Table,
		"auto.create", "true", "insert.mode", "insert", "pk.mode", "none", "batch.size", "2000")
}

// connectorYAML is a KafkaConnector as YAML; config is key, value, key,
// value... in the order written.
func connectorYAML(name, cluster, class string, tasks int, config ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: connect.conveyor.dev/v1alpha1\nkind: KafkaConnector\nmetadata:\n  name: %s\nspec:\n  clusterRef: {name: %s}\n  class: %s\n  tasksMax: %d\n  config:\n",
		name, cluster, class, tasks)
	for i := 0; i+1 < len(config); i += 2 {
		fmt.Fprintf(&b, "    %s: %q\n", config[i], config[i+1])
	}
	return b.String()
}

// MySqlPipeline is a MySqlTableSource → Kafka → MySqlSink pair on a StreamCluster:
// the KafkaConnectors src-<Name> (table Table of the source URL in incrementing mode
// on its id column, to topic TopicPrefix+Table) and sink-<Name> (SinkTasks tasks,
// plain inserts into SinkTable of the sink URL, created on first use).
type MySqlPipeline struct {
	Name, Cluster      string
	SourceURL, Table   string
	TopicPrefix        string
	SinkTasks          int
	SinkURL, SinkTable string
}

// Manifest is the two KafkaConnectors as YAML for kubectl apply.
func (p MySqlPipeline) Manifest() string {
	return connectorYAML("src-"+p.Name, p.Cluster, "MySqlTableSource", 1,
		"connection.url", p.SourceURL, "table.whitelist", p.Table, "mode", "incrementing", "incrementing.column.name", "id",
		"topic.prefix", p.TopicPrefix, "poll.interval.ms", "100", "batch.max.rows", "2000") +
		"---\n" + connectorYAML("sink-"+p.Name, p.Cluster, "MySqlSink", p.SinkTasks,
		"topics", p.TopicPrefix+p.Table, "connection.url", p.SinkURL, "table.name.format", p.SinkTable,
		"auto.create", "true", "insert.mode", "insert", "pk.mode", "none", "batch.size", "2000")
}
