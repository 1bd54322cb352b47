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
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// PartitionCounts reads the partition count of each topic with one metadata
// request: the input of the pre-run estimate of a sink. A topic that does
// not exist is left out of the map (the estimate then says "unknown"); any
// other per-topic failure, or a failed request, is an error naming it.
func PartitionCounts(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int32, error) {
	out := make(map[string]int32, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("reading the partitions of topics %v: %w", topics, err)
	}
	for _, t := range topics {
		d, ok := details[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if d.Err != nil {
			return nil, fmt.Errorf("reading the partitions of topic %q: %w", t, d.Err)
		}
		out[t] = int32(len(d.Partitions))
	}
	return out, nil
}

// SinkLag is the total consumer lag (records) of a sink's consumer group
// connect-<name>: the status.lag of a sink. nil when the group has no
// committed offsets yet (a sink that never committed has no lag to speak of,
// KEDA's offsetResetPolicy=earliest counts its backlog instead).
func SinkLag(ctx context.Context, adm *kadm.Client, group string) (*int64, error) {
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("reading the lag of consumer group %q: %w", group, err)
	}
	l, ok := lags[group]
	if !ok {
		return nil, nil
	}
	if err := l.Error(); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the lag of consumer group %q: %w", group, err)
	}
	committed := false
	for _, ps := range l.Lag {
		for _, m := range ps {
			committed = committed || m.Commit.At >= 0
		}
	}
	if !committed {
		return nil, nil
	}
	total := l.Lag.Total()
	return &total, nil
}
