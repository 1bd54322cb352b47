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

package plugin

import (
	"context"
	"errors"
)

// AsFieldErrors turns an error of a configuration check into field
// errors: those of a *ConfigError or a FieldError, or else one error on
// the fallback field.
func AsFieldErrors(err error, fallback string) []FieldError {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce.Fields
	}
	var fe FieldError
	if errors.As(err, &fe) {
		return []FieldError{fe}
	}
	return []FieldError{{Name: fallback, Message: err.Error()}}
}

// PartitionSinkConnector is the whole Connector of a sink whose tasks
// share the work through the consumer group, each with the connector's
// full configuration: its natural limit is the partition count of its
// topics ([TopicPartitions]). Parse checks the configuration (at Validate
// and Start); Check, when set, adds checks against the destination system
// at Validate (reachability, credentials).
type PartitionSinkConnector struct {
	// Fallback names the field an error of Parse that names none is put on.
	Fallback string
	Parse    func(config map[string]string) error
	Check    func(ctx context.Context, config map[string]string) []FieldError

	cc     ConnectorContext
	config map[string]string
}

// Validate runs Parse and then Check.
func (c *PartitionSinkConnector) Validate(ctx context.Context, config map[string]string) []FieldError {
	if err := c.Parse(config); err != nil {
		return AsFieldErrors(err, c.Fallback)
	}
	if c.Check == nil {
		return nil
	}
	return c.Check(ctx, config)
}

// Start parses the configuration and keeps it.
func (c *PartitionSinkConnector) Start(_ context.Context, cc ConnectorContext, config map[string]string) error {
	if err := c.Parse(config); err != nil {
		return err
	}
	c.cc, c.config = cc, config
	return nil
}

// NaturalLimit is the partition count of the topics.
func (c *PartitionSinkConnector) NaturalLimit(ctx context.Context) (int, Reason, error) {
	return SinkNaturalLimit(ctx, c.cc, c.config)
}

// TaskConfigs returns max copies of the configuration.
func (c *PartitionSinkConnector) TaskConfigs(max int) ([]map[string]string, error) {
	return SinkTaskConfigs(c.config, max), nil
}

// Stop does nothing.
func (c *PartitionSinkConnector) Stop() error { return nil }
