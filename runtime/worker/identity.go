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

package worker

import (
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
)

// connectorAdmin is herder.Options.ConnectorAdmin: the admin client of a
// connector outside its tasks (its topic lookups, its sink group's offsets
// through REST). It is the worker's shared one unless the connector's
// admin settings name its own login (admin.override.sasl.jaas.config),
// resolved through the same table, policy and connection as its tasks'
// admin clients: then a client of its own, closed by the returned func.
func connectorAdmin(shared *kadm.Client, conn *clientconfig.Connection, worker map[string]string, policy clientconfig.Policy) func(map[string]string) (*kadm.Client, func(), error) {
	return func(config map[string]string) (*kadm.Client, func(), error) {
		st, err := clientconfig.For(clientconfig.Admin, worker, config, policy)
		if err != nil {
			return nil, nil, err
		}
		if st.Security == nil {
			return shared, func() {}, nil
		}
		opts, err := conn.For(st)
		if err != nil {
			return nil, nil, err
		}
		cl, err := kgo.NewClient(append(opts, st.Opts...)...)
		if err != nil {
			return nil, nil, err
		}
		return kadm.NewClient(cl), cl.Close, nil
	}
}
