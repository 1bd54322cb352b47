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

package connectcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// TopicAdmin is the little of Kafka's admin API that the reconciler needs.
// The default implementation is kadm's client; tests point it at kfake.
type TopicAdmin interface {
	// DescribeTopics reports every named topic; topics that do not exist are
	// returned with Exists false. An error means Kafka could not answer.
	DescribeTopics(ctx context.Context, names ...string) (map[string]ObservedTopic, error)
	// CreateTopic creates an internal topic (compacted).
	CreateTopic(ctx context.Context, t TopicSpec) error
	// ClusterID is the cluster id from Kafka's Metadata answer: what
	// identifies a Kafka cluster, whichever broker address reached it.
	ClusterID(ctx context.Context) (string, error)
	// Close releases the connections.
	Close()
}

// AdminFactory opens a TopicAdmin for a connection.
type AdminFactory func(ctx context.Context, conn clusterkit.KafkaConnection) (TopicAdmin, error)

// NewKadmAdmin is the default AdminFactory: a franz-go client with kadm on top.
// Extra kgo options (timeouts, a logger) are appended.
func NewKadmAdmin(conn clusterkit.KafkaConnection, extra ...kgo.Opt) (TopicAdmin, error) {
	cl, err := kgo.NewClient(append(clusterkit.KgoOptions(conn), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("creating a Kafka client for %v: %w", conn.BootstrapServers, err)
	}
	return &kadmAdmin{cl: cl, adm: kadm.NewClient(cl)}, nil
}

type kadmAdmin struct {
	cl  *kgo.Client
	adm *kadm.Client
}

func (a *kadmAdmin) Close() { a.cl.Close() }

func (a *kadmAdmin) ClusterID(ctx context.Context) (string, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topics, only the cluster
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return "", &KafkaUnreachableError{Err: fmt.Errorf("asking Kafka for its cluster id: %w", err)}
	}
	if resp.ClusterID == nil || *resp.ClusterID == "" {
		return "", errors.New("Kafka answered Metadata without a cluster id (brokers before Kafka 0.10.1 do not have one)")
	}
	return *resp.ClusterID, nil
}

func (a *kadmAdmin) DescribeTopics(ctx context.Context, names ...string) (map[string]ObservedTopic, error) {
	// A direct metadata request: kadm's ListTopics answers from kgo's metadata
	// cache, which would hide a topic created a moment ago.
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, fmt.Errorf("reading topic metadata: %w", err)
	}
	byName := make(map[string]kmsg.MetadataResponseTopic, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic != nil {
			byName[*t.Topic] = t
		}
	}
	out := make(map[string]ObservedTopic, len(names))
	var existing []string
	for _, name := range names {
		d, ok := byName[name]
		terr := kerr.ErrorForCode(d.ErrorCode)
		switch {
		case !ok || errors.Is(terr, kerr.UnknownTopicOrPartition):
			out[name] = ObservedTopic{}
		case terr != nil:
			return nil, fmt.Errorf("reading metadata of topic %q: %w", name, terr)
		default:
			o := ObservedTopic{Exists: true, Partitions: int32(len(d.Partitions))}
			for i, p := range d.Partitions {
				if rf := int16(len(p.Replicas)); i == 0 || rf < o.ReplicationFactor {
					o.ReplicationFactor = rf
				}
			}
			out[name] = o
			existing = append(existing, name)
		}
	}
	if len(existing) == 0 {
		return out, nil
	}
	configs, err := a.adm.DescribeTopicConfigs(ctx, existing...)
	if err != nil {
		return nil, fmt.Errorf("reading configs of topics %v: %w", existing, err)
	}
	for _, rc := range configs {
		if rc.Err != nil {
			return nil, fmt.Errorf("reading configs of topic %q: %w", rc.Name, rc.Err)
		}
		o := out[rc.Name]
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				o.CleanupPolicy = c.MaybeValue()
			}
		}
		out[rc.Name] = o
	}
	return out, nil
}

func (a *kadmAdmin) CreateTopic(ctx context.Context, t TopicSpec) error {
	rf := t.ReplicationFactor
	if rf <= 0 {
		rf = -1 // the broker's default.replication.factor
	}
	configs := map[string]*string{}
	for k, v := range TopicCreateConfigs() {
		configs[k] = kadm.StringPtr(v)
	}
	resp, err := a.adm.CreateTopic(ctx, t.CreatePartitions(), rf, configs, t.Name)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		if resp.ErrMessage != "" {
			return fmt.Errorf("creating topic %q: %w: %s", t.Name, err, resp.ErrMessage)
		}
		return fmt.Errorf("creating topic %q: %w", t.Name, err)
	}
	return nil
}

// EnsureTopics creates the missing internal topics and verifies the others.
// It returns one verdict per topic (Action TopicCreate for topics it created)
// and a *KafkaUnreachableError when Kafka could not be asked, or a
// *TopicInvalidError naming every topic that is wrong or could not be created.
func EnsureTopics(ctx context.Context, admin TopicAdmin, servers []string, wants []TopicSpec) ([]TopicVerdict, error) {
	names := make([]string, 0, len(wants))
	for _, w := range wants {
		names = append(names, w.Name)
	}
	observed, err := admin.DescribeTopics(ctx, names...)
	if err != nil {
		return nil, &KafkaUnreachableError{BootstrapServers: servers, Err: err}
	}
	verdicts := make([]TopicVerdict, 0, len(wants))
	var invalid []TopicVerdict
	for _, w := range wants {
		v := VerifyTopic(w, observed[w.Name])
		if v.Action == TopicCreate {
			if err := admin.CreateTopic(ctx, w); err != nil {
				if isConnectionError(err) {
					return nil, &KafkaUnreachableError{BootstrapServers: servers, Err: err}
				}
				v = TopicVerdict{Topic: w, Action: TopicInvalid, CreateFailed: true, Problem: fmt.Sprintf("cannot be created: %v", err)}
			}
		}
		if v.Action == TopicInvalid {
			invalid = append(invalid, v)
		}
		verdicts = append(verdicts, v)
	}
	if len(invalid) > 0 {
		return verdicts, &TopicInvalidError{Verdicts: invalid}
	}
	return verdicts, nil
}

// isConnectionError tells transport failures (retry later) from Kafka's
// answers (a problem with the request).
func isConnectionError(err error) bool {
	var kafkaErr *kerr.Error
	return !errors.As(err, &kafkaErr)
}

// CreatedTopics returns the names of the topics EnsureTopics created.
func CreatedTopics(verdicts []TopicVerdict) []string {
	var out []string
	for _, v := range verdicts {
		if v.Action == TopicCreate {
			out = append(out, v.Topic.Name)
		}
	}
	slices.Sort(out)
	return out
}

// kgoLogger routes franz-go's logs to logr at warn level and above.
type kgoLogger struct{ log logr.Logger }

// NewKgoLogger returns a kgo.Logger that writes franz-go's warnings and
// errors to log.
func NewKgoLogger(log logr.Logger) kgo.Logger { return kgoLogger{log: log.WithName("franz-go")} }

func (l kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level == kgo.LogLevelError {
		l.log.Error(nil, msg, keyvals...)
		return
	}
	l.log.Info(msg, keyvals...)
}
