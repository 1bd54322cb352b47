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

// Connector validates its configuration and copies it to every task.
type Connector struct {
	cc     plugin.ConnectorContext
	config map[string]string
}

// Validate checks the settings and asks the server for its info (GET /),
// which proves the URL and the credentials.
func (c *Connector) Validate(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err != nil {
		var ce *plugin.ConfigError
		if errors.As(err, &ce) {
			return ce.Fields
		}
		return []plugin.FieldError{{Name: KeyURL, Message: err.Error()}}
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

// Start keeps the configuration.
func (c *Connector) Start(_ context.Context, cc plugin.ConnectorContext, config map[string]string) error {
	if _, err := parse(config); err != nil {
		return err
	}
	c.cc, c.config = cc, config
	return nil
}

// NaturalLimit is the partition count of the topics.
func (c *Connector) NaturalLimit(ctx context.Context) (int, plugin.Reason, error) {
	return plugin.SinkNaturalLimit(ctx, c.cc, c.config)
}

// TaskConfigs returns max copies of the configuration.
func (c *Connector) TaskConfigs(max int) ([]map[string]string, error) {
	return plugin.SinkTaskConfigs(c.config, max), nil
}

// Stop does nothing.
func (c *Connector) Stop() error { return nil }
