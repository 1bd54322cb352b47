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

package elasticsearch

import (
	"context"
	"errors"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// esConnector is the connector: its tasks share the topics' partitions
// (or, in share mode, the share group's records), each with the whole
// configuration.
type esConnector struct{ plugin.PartitionSinkConnector }

func newConnector() plugin.Connector {
	return &esConnector{plugin.PartitionSinkConnector{Fallback: KeyURL, Parse: func(c map[string]string) error { _, err := parse(c); return err }, Check: check}}
}

// ToleratesShareGroup: yes. With key.ignore=false a document's external
// version is its record's offset, so an older record delivered after a
// newer one is refused by the server as a version conflict (which the
// sink ignores) and a redelivered record changes nothing; with
// key.ignore=true every record is its own document (topic+partition+offset),
// written again the same on redelivery.
func (*esConnector) ToleratesShareGroup(map[string]string) (bool, string) {
	return true, ""
}

// check asks the server for its info (GET /), which proves the URL and
// the credentials.
func check(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err != nil {
		return plugin.AsFieldErrors(err, KeyURL)
	}
	cl := newClient(s)
	defer cl.close()
	ctx, cancel := context.WithTimeout(ctx, min(s.readTimeout, 10*time.Second))
	defer cancel()
	if _, err := cl.ping(ctx); err != nil {
		name := KeyURL
		if errors.Is(err, errCredentials) {
			name = KeyUsername
			if s.apiKey.Value() != "" {
				name = KeyAPIKey
			}
		}
		return []plugin.FieldError{{Name: name, Message: "reaching the server: " + err.Error()}}
	}
	return nil
}
