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
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// topicCreator creates a source task's topics before their first record
// (KIP-158), through an admin client with the connector's admin settings;
// a topic that exists is left as it is. Only the sender calls it.
type topicCreator struct {
	cfg    *plugin.TopicCreation
	common *Common
	log    *slog.Logger
	client *kgo.Client
	known  map[string]bool
}

// ensure creates topic unless it exists or was seen before.
func (c *topicCreator) ensure(ctx context.Context, topic string) error {
	if c.known[topic] {
		return nil
	}
	if c.client == nil {
		cl, err := kgo.NewClient(c.common.clientOpts(clientconfig.Admin, nil)...)
		if err != nil {
			return fmt.Errorf("creating the admin client for topic creation: %w", err)
		}
		c.client = cl
	}
	adm := kadm.NewClient(c.client)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("looking up topic %q: %w", topic, err)
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		c.known[topic] = true // exists: left as it is
		return nil
	}
	g := c.cfg.For(topic)
	resp, err := adm.CreateTopic(ctx, g.Partitions, g.ReplicationFactor, g.Configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %q (topic.creation group %s): %w", topic, g.Name, err)
	}
	if err == nil {
		c.log.Info("created the topic", "topic", topic, "group", g.Name, "partitions", g.Partitions, "replication_factor", g.ReplicationFactor)
	}
	c.known[topic] = true
	return nil
}

func (c *topicCreator) close() {
	if c.client != nil {
		c.client.Close()
	}
}
