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
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/loglevel"
)

// Client is one Kafka client of a task: its connection and its settings
// from the table of client properties (runtime/clientconfig).
type Client struct {
	// Kafka replaces Common.Kafka for this client when the settings name
	// the client's own identity (a connector's SASL login); nil keeps it.
	Kafka []kgo.Opt
	clientconfig.Settings
}

// connectorClients resolves the settings of a connector's producer,
// consumer and admin clients: the worker's producer.*, consumer.* and
// admin.* keys with the connector's *.override.* keys over them, each
// override allowed by the policy. An error names the key.
func connectorClients(s Spec) (map[clientconfig.Kind]Client, error) {
	worker := map[clientconfig.Kind]map[string]string{clientconfig.Producer: s.Producer, clientconfig.Consumer: s.Consumer, clientconfig.Admin: s.Admin}
	out := make(map[clientconfig.Kind]Client, len(clientconfig.Kinds))
	for _, kind := range clientconfig.Kinds {
		st, err := clientconfig.For(kind, worker[kind], s.Connector, s.Policy)
		if err != nil {
			return nil, err
		}
		cl, err := newClient(st, s.Connection)
		if err != nil {
			return nil, err
		}
		out[kind] = cl
	}
	return out, nil
}

// newClient gives settings that name their own identity their connection.
func newClient(st clientconfig.Settings, conn *clientconfig.Connection) (Client, error) {
	cl := Client{Settings: st}
	if st.Security == nil {
		return cl, nil
	}
	if conn == nil {
		return Client{}, fmt.Errorf("%s: this runner has no Kafka connection to give the client its own identity", st.Key(clientconfig.KeySecurityProtocol))
	}
	var err error
	cl.Kafka, err = conn.For(st)
	return cl, err
}

// clientOpts puts the log adapter first, so a logger among the worker's
// options wins, then the client's connection (the worker's options, or
// the connector's own identity), then the runner's own options, then the
// client's settings, which win over the runner's defaults.
func (c *Common) clientOpts(kind clientconfig.Kind, own []kgo.Opt) []kgo.Opt {
	cl := c.Clients[kind]
	conn := c.Kafka
	if cl.Kafka != nil {
		conn = cl.Kafka
	}
	opts := make([]kgo.Opt, 0, 1+len(conn)+len(own)+len(cl.Opts))
	opts = append(opts, kgo.WithLogger(kgoLogger{c.Logger.With("component", loglevel.Kafka)}))
	opts = append(opts, conn...)
	opts = append(opts, own...)
	return append(opts, cl.Opts...)
}
