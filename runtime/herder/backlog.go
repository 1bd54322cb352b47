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
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Backlog is a connector's backlog, what autoscaling scales on where KEDA
// reads no consumer lag:
//   - a source whose connector implements plugin.BacklogReporter: asked on
//     a fresh instance with its resolved config and its stored offsets;
//   - a sink in share mode: its share group's backlog, per partition the
//     end offset minus the share-partition start offset
//     (DescribeShareGroupOffsets), summed.
//
// Any worker answers it, whether or not it runs the connector: the figure
// is read from the source system, the offsets topic and Kafka at each call,
// never kept in this process, so a worker that restarts (or the one KEDA's
// request happens to reach) answers the same as every other. A connector
// with no such figure (a classic sink, whose lag KEDA's kafka scaler reads;
// a source that does not report one) is a 404 naming the reason.
func (h *Herder) Backlog(ctx context.Context, name string) (plugin.Backlog, error) {
	cfg, err := h.config(name)
	if err != nil {
		return plugin.Backlog{}, err
	}
	p, ok := h.opts.Plugins.Lookup(cfg[plugin.KeyConnectorClass])
	if !ok {
		return plugin.Backlog{}, connectapi.NotFoundf("Connector %s has no backlog: its class %s is not installed", name, cfg[plugin.KeyConnectorClass])
	}
	if p.Kind == plugin.KindSink {
		if !plugin.ShareMode(cfg) {
			return plugin.Backlog{}, connectapi.NotFoundf("Connector %s has no backlog figure: it is a sink in a consumer group (%s), whose lag KEDA's kafka scaler reads; only %s=%s sinks have one",
				name, connectnames.SinkGroup(name), plugin.KeyConsumerGroupType, plugin.GroupTypeShare)
		}
		return h.shareBacklog(ctx, name, cfg)
	}
	if p.NewConnector == nil {
		return plugin.Backlog{}, connectapi.NotFoundf("Connector %s has no backlog figure: class %s has no connector", name, p.Class)
	}
	rep, ok := p.NewConnector().(plugin.BacklogReporter)
	if !ok {
		return plugin.Backlog{}, connectapi.NotFoundf("Connector %s has no backlog figure: class %s does not report one", name, p.Class)
	}
	resolved := cfg
	if h.opts.Resolver != nil {
		if resolved, err = h.resolveFor(ctx, name, cfg); err != nil {
			return plugin.Backlog{}, fmt.Errorf("resolving config placeholders of connector %q: %w", name, err)
		}
	}
	b, err := rep.Backlog(h.opts.Grants.Context(ctx), resolved, storeOffsetReader{h: h, connector: name})
	if errors.Is(err, plugin.ErrNoBacklog) {
		return plugin.Backlog{}, connectapi.NotFoundf("Connector %s has no backlog figure: %v", name, err)
	}
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("reading the backlog of connector %s: %w", name, err)
	}
	return b, nil
}

// backlogUnit is the unit of the connector's Backlog, "" when it has none.
func (h *Herder) backlogUnit(cfg map[string]string) string {
	p, ok := h.opts.Plugins.Lookup(cfg[plugin.KeyConnectorClass])
	switch {
	case !ok:
		return ""
	case p.Kind == plugin.KindSink:
		if plugin.ShareMode(cfg) {
			return plugin.BacklogRecords
		}
		return ""
	case p.NewConnector == nil:
		return ""
	}
	if rep, ok := p.NewConnector().(plugin.BacklogReporter); ok {
		return rep.BacklogUnit(cfg)
	}
	return ""
}

// shareBacklog is ShareGroupBacklog of the sink's share group, through the
// sink's own admin client.
func (h *Herder) shareBacklog(ctx context.Context, name string, cfg map[string]string) (plugin.Backlog, error) {
	adm, done, err := h.connectorAdmin(ctx, name, cfg)
	if err != nil {
		return plugin.Backlog{}, err
	}
	defer done()
	return ShareGroupBacklog(ctx, adm, connectnames.ShareGroup(name), plugin.SplitList(cfg[plugin.KeyTopics]))
}

// ShareGroupBacklog sums, over the partitions of topics and of every other
// topic the share group has state for (a topics.regex sink's), the end
// offset minus the share-partition start offset (DescribeShareGroupOffsets).
// A partition the group has no state for yet counts from its log start
// offset: the sink's share group starts at the earliest offset, as Connect
// sinks do. Records past the start offset that consumers hold or have
// acknowledged out of order count too: the figure is an upper bound by at
// most what the group's consumers have in flight, which the start offset
// passes as they acknowledge.
func ShareGroupBacklog(ctx context.Context, adm *kadm.Client, group string, topics []string) (plugin.Backlog, error) {
	topics = slices.Clone(topics)
	described, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("describing the offsets of share group %s: %w", group, err)
	}
	d := described[group]
	if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
		return plugin.Backlog{}, fmt.Errorf("describing the offsets of share group %s: %w", group, d.Err)
	}
	for t := range d.Offsets {
		if !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	out := plugin.Backlog{Unit: plugin.BacklogRecords}
	if len(topics) == 0 {
		return out, nil
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("listing end offsets of %v: %w", topics, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("listing start offsets of %v: %w", topics, err)
	}
	var firstErr error
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("end offset of %s[%d]: %w", end.Topic, end.Partition, end.Err)
			}
			return
		}
		from := int64(-1)
		if so, ok := d.Offsets[end.Topic][end.Partition]; ok && so.Err == nil {
			from = so.StartOffset
		}
		if from < 0 {
			from = 0
			if st, ok := starts.Lookup(end.Topic, end.Partition); ok && st.Err == nil {
				from = st.Offset
			}
		}
		out.Value += max(end.Offset-from, 0)
	})
	if firstErr != nil {
		return plugin.Backlog{}, firstErr
	}
	return out, nil
}

// storeOffsetReader reads a connector's stored source offsets from the
// worker's offset store (what its tasks resume from).
type storeOffsetReader struct {
	h         *Herder
	connector string
}

func (r storeOffsetReader) Offset(_ context.Context, partition map[string]any) (map[string]any, error) {
	return r.h.opts.Offsets.Offset(r.connector, partition), nil
}

func (r storeOffsetReader) Offsets(ctx context.Context, partitions []map[string]any) ([]map[string]any, error) {
	out := make([]map[string]any, len(partitions))
	for i, p := range partitions {
		out[i], _ = r.Offset(ctx, p)
	}
	return out, nil
}
