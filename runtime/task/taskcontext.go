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
	"log/slog"
	"sync"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

type sourceTaskContext struct {
	life   *lifecycle
	log    *slog.Logger
	reader plugin.OffsetReader
}

func (c *sourceTaskContext) Logger() *slog.Logger { return c.log }

func (c *sourceTaskContext) Go(f func() error) { c.life.goPlugin(f) }

func (c *sourceTaskContext) OffsetReader() plugin.OffsetReader { return c.reader }

// offsetReader serves a task's offset reads from the OffsetStore.
type offsetReader struct {
	store     OffsetStore
	connector string
}

func (o *offsetReader) Offset(ctx context.Context, partition map[string]any) (map[string]any, error) {
	out, err := o.Offsets(ctx, []map[string]any{partition})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (o *offsetReader) Offsets(ctx context.Context, partitions []map[string]any) ([]map[string]any, error) {
	out, err := o.store.Read(ctx, o.connector, partitions)
	if err != nil {
		return nil, fmt.Errorf("reading source offsets of connector %s: %w", o.connector, err)
	}
	if len(out) != len(partitions) {
		return nil, fmt.Errorf("offset store returned %d offsets for %d partitions", len(out), len(partitions))
	}
	return out, nil
}

// sinkTaskContext is what the runner offers the sink task.
type sinkTaskContext struct {
	r   *SinkRunner
	log *slog.Logger

	mu        sync.Mutex
	commitReq bool
	resets    map[data.TopicPartition]int64
}

func (c *sinkTaskContext) Logger() *slog.Logger { return c.log }

func (c *sinkTaskContext) Go(f func() error) { c.r.goPlugin(f) }

// Assignment is called by the task from within Put/Open/Close (with the
// runner's mu held) or from its own goroutines, so it reads a snapshot.
func (c *sinkTaskContext) Assignment() []data.TopicPartition {
	if p := c.r.assignSnap.Load(); p != nil {
		return append([]data.TopicPartition(nil), (*p)...)
	}
	return nil
}

func (c *sinkTaskContext) Pause(tps ...data.TopicPartition) {
	if cl := c.r.clientSnap.Load(); cl != nil {
		cl.PauseFetchPartitions(tpMap(tps))
	}
}

func (c *sinkTaskContext) Resume(tps ...data.TopicPartition) {
	if cl := c.r.clientSnap.Load(); cl != nil {
		cl.ResumeFetchPartitions(tpMap(tps))
	}
}

func (c *sinkTaskContext) RequestCommit() {
	c.mu.Lock()
	c.commitReq = true
	c.mu.Unlock()
}

func (c *sinkTaskContext) takeCommitRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := c.commitReq
	c.commitReq = false
	return req
}

func (c *sinkTaskContext) ResetOffsets(offsets map[data.TopicPartition]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resets == nil {
		c.resets = map[data.TopicPartition]int64{}
	}
	for tp, o := range offsets {
		c.resets[tp] = o
	}
}

// ErrantRecordReporter is there when the connector has a dead letter
// queue or errors.log.enable=true, as in Kafka Connect.
func (c *sinkTaskContext) ErrantRecordReporter() plugin.ErrantRecordReporter {
	if c.r.cfg.Errors.DLQTopic == "" && !c.r.cfg.Errors.Log {
		return nil
	}
	return errantReporter{c.r}
}

func (c *sinkTaskContext) takeResets() map[data.TopicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.resets
	c.resets = nil
	return r
}

func tpMap(tps []data.TopicPartition) map[string][]int32 {
	m := map[string][]int32{}
	for _, tp := range tps {
		m[tp.Topic] = append(m[tp.Topic], tp.Partition)
	}
	return m
}
