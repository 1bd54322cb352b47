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

package task

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Runner is what the herder drives; SourceRunner and SinkRunner implement it.
type Runner interface {
	// Start runs the task in its own goroutine.
	Start(ctx context.Context) error
	// Pause and Resume set the target state.
	Pause()
	Resume()
	// Stop stops gracefully within ctx's deadline, else abandons the task
	// and returns ErrStopTimeout; it returns the error that failed the task.
	Stop(ctx context.Context) error
	// State is the task's current state; Err the error that failed it.
	State() State
	Err() error
	// Done is closed once the task finished.
	Done() <-chan struct{}
}

var (
	_ Runner = (*SourceRunner)(nil)
	_ Runner = (*SinkRunner)(nil)
)

// Spec is one task of a connector as the worker runs it. New is the one
// way to build a runner of a connector's task: the worker, and the tests
// and benchmarks that run a connector, all go through it, so they get the
// same converters, transforms, errors.* handling, topics and client
// settings.
type Spec struct {
	// Common holds the ID, the task configuration (Config), the Kafka
	// client options, Status, Metrics, Logger, the offset flush settings,
	// RetryBackoff and TransformedTopic. New sets KeyConverter,
	// ValueConverter, Transforms and Errors from Connector: a Spec that
	// sets them is refused.
	Common
	// Plugin implements the connector; New makes a fresh task of it.
	Plugin plugin.Plugin
	// Connector is the connector's configuration, placeholders resolved:
	// its converters (over WorkerConverters), transforms, errors.* keys
	// and, for a sink, topics or topics.regex. Required.
	Connector map[string]string
	// WorkerConverters are the worker's converter settings (key.converter,
	// value.converter and their sub-keys): the defaults of Connector's.
	WorkerConverters map[string]string
	// Producer, Consumer and Admin hold the worker's producer.*,
	// consumer.* and admin.* settings without the prefix: Kafka client
	// properties of runtime/clientconfig's table. The connector's
	// producer.override.*, consumer.override.* and admin.override.* keys
	// go over them, as far as Policy allows.
	Producer, Consumer, Admin map[string]string
	// Policy is the worker's connector.client.config.override.policy; the
	// zero value is Kafka's default (All).
	Policy clientconfig.Policy
	// Connection is how the worker reaches Kafka (Common.Kafka in parts):
	// a client whose settings name its own identity (a connector's
	// sasl.jaas.config) gets Connection.Base with that identity. Nil
	// refuses such settings.
	Connection *clientconfig.Connection
	// ConsumerInstanceID, when set, makes a sink task's consumer a static
	// member of its group (see SinkConfig.InstanceID).
	ConsumerInstanceID string
	// Offsets stores a source connector's offsets; required for sources.
	Offsets OffsetStore
	// WrapSource, when set, wraps the source task the plugin made (the
	// worker notes the topics a task writes to this way).
	WrapSource func(plugin.SourceTask) plugin.SourceTask
	// ExactlyOnce, when set, runs a source task transactionally; Offsets
	// must then implement TransactionalOffsets.
	ExactlyOnce *ExactlyOnce
	// TopicCreation is the worker's topic.creation.enable: a source
	// connector's topic.creation.* keys (KIP-158) create its topics.
	TopicCreation bool
}

// New creates the runner of one task of s.Plugin; Start runs it.
func New(s Spec) (Runner, error) {
	c := s.Common
	if c.KeyConverter != nil || c.ValueConverter != nil || c.Transforms != nil || c.Errors != (ErrorConfig{}) {
		return nil, fmt.Errorf("task %s: New builds the converters, transforms and errors.* handling from Spec.Connector; leave them unset in Spec.Common", c.ID)
	}
	if s.Connector == nil {
		return nil, fmt.Errorf("task %s: Spec.Connector (the connector configuration) is required", c.ID)
	}
	var err error
	if c.KeyConverter, err = converter.FromConfig(true, s.Connector, s.WorkerConverters); err != nil {
		return nil, err
	}
	if c.ValueConverter, err = converter.FromConfig(false, s.Connector, s.WorkerConverters); err != nil {
		return nil, err
	}
	c.Transforms = s.Connector
	// The errors.* keys are connector settings; task configs need not
	// carry them.
	if c.Errors, err = ParseErrorConfig(s.Plugin.Kind, s.Connector); err != nil {
		return nil, err
	}
	if c.Clients, err = connectorClients(s); err != nil {
		return nil, fmt.Errorf("task %s: %w", c.ID, err)
	}
	switch s.Plugin.Kind {
	case plugin.KindSource:
		if s.Plugin.NewSourceTask == nil {
			return nil, fmt.Errorf("plugin %s has no source task", s.Plugin.Class)
		}
		// Like Kafka Connect's producers, ask the broker to create a
		// missing topic (it decides whether it may). It goes with the
		// producer's own options, which it keeps whichever identity
		// the producer logs in with (Client.Kafka replaces Common.Kafka).
		p := c.Clients[clientconfig.Producer]
		p.Opts = append(slices.Clip(p.Opts), kgo.AllowAutoTopicCreation())
		c.Clients[clientconfig.Producer] = p
		st := s.Plugin.NewSourceTask()
		if s.WrapSource != nil {
			st = s.WrapSource(st)
		}
		sc := SourceConfig{Common: c, Task: st, Offsets: s.Offsets, ExactlyOnce: s.ExactlyOnce}
		if s.TopicCreation {
			tc, fes := plugin.ParseTopicCreation(s.Connector)
			if len(fes) > 0 {
				return nil, fmt.Errorf("task %s: %w", c.ID, &plugin.ConfigError{Fields: fes})
			}
			sc.TopicCreation = tc
		}
		return NewSourceRunner(sc)
	case plugin.KindSink:
		if s.Plugin.NewSinkTask == nil {
			return nil, fmt.Errorf("plugin %s has no sink task", s.Plugin.Class)
		}
		sc := SinkConfig{Common: c, Task: s.Plugin.NewSinkTask(), InstanceID: s.ConsumerInstanceID, Share: plugin.ShareMode(s.Connector)}
		sc.Topics = plugin.SplitList(s.Connector[plugin.KeyTopics])
		if len(sc.Topics) == 0 {
			sc.TopicsRegex = strings.TrimSpace(s.Connector[plugin.KeyTopicsRegex])
		}
		cs := c.Clients[clientconfig.Consumer]
		sc.MaxPollRecords, sc.FetchMaxBytes, sc.FetchMaxPartitionBytes = cs.MaxPollRecords, cs.FetchMaxBytes, cs.FetchMaxPartitionBytes
		return NewSinkRunner(sc)
	}
	return nil, fmt.Errorf("plugin %s has unknown kind %q", s.Plugin.Class, s.Plugin.Kind)
}
