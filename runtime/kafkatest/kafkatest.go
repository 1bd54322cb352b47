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

// Package kafkatest starts the in-process Kafka (franz-go's kfake) that
// runtime tests run against, with the clients and log openers they need.
// kfake differs from Kafka in places; tests that depend on such a place
// say so where they do.
package kafkatest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
)

// Cluster starts a one-broker kfake cluster with opts, closed when the
// test ends, and returns it with the client options that reach it.
func Cluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, []kgo.Opt) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
}

// Admin returns an admin client with the client options opts, closed when
// the test ends.
func Admin(t testing.TB, opts []kgo.Opt) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// Opener opens the worker's internal topics (configs, offsets, status) as
// kafkalog logs with the client options opts, creating each topic that is
// missing (a store.LogOpener).
func Opener(opts []kgo.Opt) func(ctx context.Context, topic kafkalog.Topic, apply func(kafkalog.Record)) (*kafkalog.Log, error) {
	return func(ctx context.Context, topic kafkalog.Topic, apply func(kafkalog.Record)) (*kafkalog.Log, error) {
		topic.Create = true
		return kafkalog.Open(ctx, kafkalog.Config{Topic: topic, ClientOpts: opts, Apply: apply})
	}
}
