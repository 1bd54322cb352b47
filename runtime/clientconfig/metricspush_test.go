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

package clientconfig

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client asks the brokers for a client metrics subscription (KIP-714,
// GetTelemetrySubscriptions) only with enable.metrics.push=true; kfake
// subscribes every client that asks to every metric, as a broker with a
// catch-all subscription does.
func TestClientMetricsPushOnlyWhenAskedFor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Each client on a broker of its own, counting its subscription requests.
	asked := map[string]*atomic.Int32{}
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{{"default", nil}, {"off", map[string]string{"enable.metrics.push": "false"}}, {"on", map[string]string{"enable.metrics.push": "true"}}} {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		n := &atomic.Int32{}
		asked[tc.name] = n
		c.ControlKey(int16(kmsg.GetTelemetrySubscriptions), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			n.Add(1)
			return nil, nil, false
		})
		s, err := Parse(Producer, func(n string) string { return "producer." + n }, tc.props)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := Connection{Base: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}}.For(s)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		// franz-go starts on client metrics with its first produce.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The client that wants them asks once its first record is written;
	// the others had the same time to ask.
	for asked["on"].Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the client with enable.metrics.push=true never asked for a subscription")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if d, o := asked["default"].Load(), asked["off"].Load(); d != 0 || o != 0 {
		t.Fatalf("subscription requests: %d by the default client, %d with enable.metrics.push=false; want none", d, o)
	}
}
