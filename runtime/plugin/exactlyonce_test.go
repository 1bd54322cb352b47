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

package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

type plainSource struct{ nopConnector }

type eosSource struct{ nopConnector }

func (eosSource) ExactlyOnceSupport(map[string]string) plugin.ExactlyOnceSupport {
	return plugin.ExactlyOnceSupported
}

type nopConnector struct{}

func (nopConnector) Validate(context.Context, map[string]string) []plugin.FieldError { return nil }
func (nopConnector) Start(context.Context, plugin.ConnectorContext, map[string]string) error {
	return nil
}
func (nopConnector) NaturalLimit(context.Context) (int, plugin.Reason, error) {
	return plugin.NoLimit, plugin.TasksMax, nil
}
func (nopConnector) TaskConfigs(int) ([]map[string]string, error) { return nil, nil }
func (nopConnector) Stop() error                                  { return nil }

func sourcePlugin(conn func() plugin.Connector) plugin.Plugin {
	return plugin.Plugin{Class: "test.Source", Kind: plugin.KindSource, NewConnector: conn}
}

func errorsOn(res plugin.ValidationResult, key string) []string {
	var out []string
	for _, fe := range res.Errors() {
		if fe.Name == key {
			out = append(out, fe.Message)
		}
	}
	return out
}

// A connector that asks for exactly.once.support=required fails
// validation, naming the key, when its plugin does not declare support or
// the worker has exactly-once off; a connector that declares it passes.
func TestRequiredExactlyOnceWithoutSupportFailsValidation(t *testing.T) {
	cfg := map[string]string{"name": "c", "connector.class": "test.Source", plugin.KeyExactlyOnceSupport: plugin.ExactlyOnceRequired}
	ctx := context.Background()

	res := plugin.ValidateConfig(ctx, sourcePlugin(func() plugin.Connector { return plainSource{} }), cfg, plugin.WithWorkerExactlyOnce(plugin.WorkerExactlyOnceEnabled))
	msgs := errorsOn(res, plugin.KeyExactlyOnceSupport)
	if len(msgs) != 1 || !strings.Contains(msgs[0], "does not declare exactly-once support") || !strings.Contains(msgs[0], plugin.KeyExactlyOnceSupport) {
		t.Fatalf("errors on %s: %q, want one saying the connector lacks support", plugin.KeyExactlyOnceSupport, msgs)
	}

	res = plugin.ValidateConfig(ctx, sourcePlugin(func() plugin.Connector { return eosSource{} }), cfg, plugin.WithWorkerExactlyOnce(plugin.WorkerExactlyOnceEnabled))
	if res.ErrorCount != 0 {
		t.Fatalf("a connector declaring support was refused: %v", res.Errors())
	}

	res = plugin.ValidateConfig(ctx, sourcePlugin(func() plugin.Connector { return eosSource{} }), cfg, plugin.WithWorkerExactlyOnce(plugin.WorkerExactlyOnceDisabled))
	if msgs := errorsOn(res, plugin.KeyExactlyOnceSupport); len(msgs) != 1 || !strings.Contains(msgs[0], "exactly.once.source.support") {
		t.Fatalf("required on a worker without exactly-once: errors %q, want one naming exactly.once.source.support", msgs)
	}

	bad := map[string]string{"name": "c", "connector.class": "test.Source", plugin.KeyTransactionBoundary: plugin.BoundaryConnector}
	res = plugin.ValidateConfig(ctx, sourcePlugin(func() plugin.Connector { return eosSource{} }), bad, plugin.WithWorkerExactlyOnce(plugin.WorkerExactlyOnceEnabled))
	if msgs := errorsOn(res, plugin.KeyTransactionBoundary); len(msgs) != 1 {
		t.Fatalf("transaction.boundary=connector without a boundary-defining connector: errors %q, want one", msgs)
	}
	bad[plugin.KeyTransactionBoundary] = "sometimes"
	res = plugin.ValidateConfig(ctx, sourcePlugin(func() plugin.Connector { return eosSource{} }), bad)
	if msgs := errorsOn(res, plugin.KeyTransactionBoundary); len(msgs) == 0 {
		t.Fatal("transaction.boundary=sometimes passed validation")
	}
}
