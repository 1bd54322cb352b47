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

package main

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/task"
)

// kafkaEnv is an in-process Kafka with one 4-partition topic, the task
// settings of a connector on it and an admin client.
type kafkaEnv struct {
	cluster *kfake.Cluster
	spec    task.Spec // the task, but for its plugin
	client  *kgo.Client
	adm     *kadm.Client
	// running is when the runner first reported RUNNING: its task started,
	// with its database connection open (as the baselines' connection is).
	running atomic.Pointer[time.Time]
}

func ptr[T any](v T) *T { return &v }

// since returns the time since the runner reported RUNNING (or since
// start, when it did not yet).
func (e *kafkaEnv) since(start time.Time) time.Duration {
	if t := e.running.Load(); t != nil {
		return time.Since(*t)
	}
	return time.Since(start)
}

func newKafkaEnv(topic, connector string, cfg map[string]string) (*kafkaEnv, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	if err != nil {
		return nil, err
	}
	e := &kafkaEnv{cluster: c}
	// The converters are the worker's defaults: JSON with schemas.
	e.spec = task.Spec{
		Common: task.Common{
			ID: task.ID{Connector: connector}, Config: cfg,
			Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
			Status: task.StatusFunc(func(_ task.ID, st task.State, _ string) {
				if st == task.StateRunning {
					e.running.CompareAndSwap(nil, ptr(time.Now()))
				}
			}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			// The worker's default offset.flush.interval.ms.
			OffsetFlushInterval: 10 * time.Second,
		},
		Connector: cfg,
	}
	e.client, err = kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		c.Close()
		return nil, err
	}
	e.adm = kadm.NewClient(e.client)
	return e, nil
}

func (e *kafkaEnv) close() {
	e.client.Close()
	e.cluster.Close()
}

// startRunner builds the runner of spec as the worker does and starts it;
// stop stops it.
func startRunner(ctx context.Context, spec task.Spec) (r task.Runner, stop func(), err error) {
	if r, err = task.New(spec); err != nil {
		return nil, nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, nil, err
	}
	return r, func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}, nil
}
