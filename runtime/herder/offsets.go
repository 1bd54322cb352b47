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

package herder

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// Keys of sink connector offsets in the REST API, as in Kafka Connect.
const (
	sinkTopicKey     = "kafka_topic"
	sinkPartitionKey = "kafka_partition"
	sinkOffsetKey    = "kafka_offset"
)

const (
	msgAltered = "The Connect framework-managed offsets for this connector have been altered successfully. " +
		"However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
	msgReset = "The Connect framework-managed offsets for this connector have been reset successfully. " +
		"However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses."
)

func (h *Herder) isSink(cfg map[string]string) bool {
	p, ok := h.opts.Plugins.Lookup(cfg[plugin.KeyConnectorClass])
	return ok && p.Kind == plugin.KindSink
}

// Offsets implements connectapi.Herder.
func (h *Herder) Offsets(ctx context.Context, name string) (connectapi.ConnectorOffsets, error) {
	cfg, err := h.config(name)
	if err != nil {
		return connectapi.ConnectorOffsets{}, err
	}
	var out connectapi.ConnectorOffsets
	if h.isSink(cfg) {
		adm, done, err := h.connectorAdmin(ctx, name, cfg)
		if err != nil {
			return out, err
		}
		defer done()
		resp, err := adm.FetchOffsets(ctx, connectnames.SinkGroup(name))
		if errors.Is(err, kerr.GroupIDNotFound) {
			return out, nil // the sink has not committed anything yet
		}
		if err != nil {
			return out, fmt.Errorf("fetching offsets of group %s: %w", connectnames.SinkGroup(name), err)
		}
		for _, o := range resp.Sorted() {
			if o.Err != nil || o.At < 0 {
				continue
			}
			out.Offsets = append(out.Offsets, connectapi.ConnectorOffset{
				Partition: map[string]any{sinkTopicKey: o.Topic, sinkPartitionKey: o.Partition},
				Offset:    map[string]any{sinkOffsetKey: o.At},
			})
		}
		return out, nil
	}
	for _, o := range h.opts.Offsets.Offsets(name) {
		out.Offsets = append(out.Offsets, connectapi.ConnectorOffset{Partition: o.Partition, Offset: o.Offset})
	}
	return out, nil
}

func (h *Herder) checkStopped(ctx context.Context, name string) (map[string]string, error) {
	if err := h.checkLeader(ctx); err != nil {
		return nil, err
	}
	cfg, err := h.config(name)
	if err != nil {
		return nil, err
	}
	if h.opts.Configs.TargetState(name) != store.TargetStopped || len(h.opts.Configs.TaskConfigs(name)) > 0 {
		return nil, connectapi.BadRequestf("%s", connectapi.OffsetsNotStoppedMessage(name))
	}
	return cfg, nil
}

// AlterOffsets implements connectapi.Herder.
func (h *Herder) AlterOffsets(ctx context.Context, name string, offsets connectapi.ConnectorOffsets) (connectapi.Message, error) {
	cfg, err := h.checkStopped(ctx, name)
	if err != nil {
		return connectapi.Message{}, err
	}
	if len(offsets.Offsets) == 0 {
		return connectapi.Message{}, connectapi.BadRequestf("The offsets to be altered must not be empty")
	}
	if h.isSink(cfg) {
		return h.alterSinkOffsets(ctx, name, cfg, offsets)
	}
	var puts []store.SourceOffset
	for _, o := range offsets.Offsets {
		if o.Partition == nil {
			return connectapi.Message{}, connectapi.BadRequestf("Source partitions may not be null")
		}
		puts = append(puts, store.SourceOffset{Partition: o.Partition, Offset: o.Offset})
	}
	if err := h.opts.Offsets.Put(ctx, name, puts); err != nil {
		return connectapi.Message{}, fmt.Errorf("altering offsets of connector %s: %w", name, err)
	}
	return connectapi.Message{Message: msgAltered}, nil
}

func sinkPartition(p map[string]any) (string, int32, error) {
	topic, ok := p[sinkTopicKey].(string)
	if !ok || topic == "" {
		return "", 0, connectapi.BadRequestf("Kafka partitions must have a valid topic name under the key %q", sinkTopicKey)
	}
	part, ok := asInt(p[sinkPartitionKey])
	if !ok || part < 0 || part > math.MaxInt32 {
		return "", 0, connectapi.BadRequestf("Kafka partitions must have a valid partition number under the key %q", sinkPartitionKey)
	}
	return topic, int32(part), nil
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

func (h *Herder) alterSinkOffsets(ctx context.Context, name string, cfg map[string]string, offsets connectapi.ConnectorOffsets) (connectapi.Message, error) {
	commit := kadm.Offsets{}
	del := kadm.TopicsSet{}
	external := map[plugin.TopicPartition]*int64{}
	for _, o := range offsets.Offsets {
		topic, part, err := sinkPartition(o.Partition)
		if err != nil {
			return connectapi.Message{}, err
		}
		if o.Offset == nil {
			del.Add(topic, part)
			external[plugin.TopicPartition{Topic: topic, Partition: part}] = nil
			continue
		}
		at, ok := asInt(o.Offset[sinkOffsetKey])
		if !ok || at < 0 {
			return connectapi.Message{}, connectapi.BadRequestf("Kafka offsets must be non-negative integers under the key %q", sinkOffsetKey)
		}
		commit.Add(kadm.Offset{Topic: topic, Partition: part, At: at, LeaderEpoch: -1})
		external[plugin.TopicPartition{Topic: topic, Partition: part}] = &at
	}
	if err := h.alterExternalOffsets(ctx, name, cfg, external, false); err != nil {
		return connectapi.Message{}, err
	}
	group := connectnames.SinkGroup(name)
	adm, done, err := h.connectorAdmin(ctx, name, cfg)
	if err != nil {
		return connectapi.Message{}, err
	}
	defer done()
	if len(commit) > 0 {
		if err := adm.CommitAllOffsets(ctx, group, commit); err != nil {
			return connectapi.Message{}, fmt.Errorf("committing offsets of group %s: %w", group, err)
		}
	}
	if len(del) > 0 {
		resp, err := adm.DeleteOffsets(ctx, group, del)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return connectapi.Message{}, fmt.Errorf("deleting offsets of group %s: %w", group, err)
		}
	}
	return connectapi.Message{Message: msgAltered}, nil
}

// ResetOffsets implements connectapi.Herder.
func (h *Herder) ResetOffsets(ctx context.Context, name string) (connectapi.Message, error) {
	cfg, err := h.checkStopped(ctx, name)
	if err != nil {
		return connectapi.Message{}, err
	}
	if h.isSink(cfg) {
		if err := h.alterExternalOffsets(ctx, name, cfg, nil, true); err != nil {
			return connectapi.Message{}, err
		}
		group := connectnames.SinkGroup(name)
		adm, done, err := h.connectorAdmin(ctx, name, cfg)
		if err != nil {
			return connectapi.Message{}, err
		}
		defer done()
		resp, err := adm.DeleteGroup(ctx, group)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return connectapi.Message{}, fmt.Errorf("deleting group %s: %w", group, err)
		}
		return connectapi.Message{Message: msgReset}, nil
	}
	if err := h.opts.Offsets.DeleteAll(ctx, name); err != nil {
		return connectapi.Message{}, fmt.Errorf("resetting offsets of connector %s: %w", name, err)
	}
	return connectapi.Message{Message: msgReset}, nil
}

// alterExternalOffsets lets a sink connector that keeps its offsets
// outside Kafka (plugin.SinkOffsetAlterer, such as the PostgreSQL sink with
// exactly.once) alter them first, so they follow the consumer group's.
func (h *Herder) alterExternalOffsets(ctx context.Context, name string, cfg map[string]string, offsets map[plugin.TopicPartition]*int64, all bool) error {
	p, ok := h.opts.Plugins.Lookup(cfg[plugin.KeyConnectorClass])
	if !ok || p.NewConnector == nil {
		return nil
	}
	alt, ok := p.NewConnector().(plugin.SinkOffsetAlterer)
	if !ok {
		return nil
	}
	resolved, err := h.resolveForValidation(ctx, name, cfg)
	if err != nil {
		return connectapi.BadRequestf("%s", err)
	}
	if err := alt.AlterSinkOffsets(ctx, resolved, offsets, all); err != nil {
		return fmt.Errorf("altering the offsets connector %s stores itself: %s", name, h.scrubFor(name, err.Error()))
	}
	return nil
}
