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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/conveyor-dev/conveyor/runtime/configprovider"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/rest"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// defaultResolver is the resolver a worker uses when none is given. In
// distributed mode only ${secret:} is on, plus ${file:} and ${env:} within
// the lists the cluster's owner rendered into the worker config
// (config.providers.*.allowed.*); standalone mode keeps every provider, as
// the one who runs it owns the machine.
func defaultResolver(cfg *workerconfig.Config, standalone bool) *configprovider.Resolver {
	var secrets configprovider.Provider
	if sp, err := configprovider.NewInClusterSecretProvider(); err == nil {
		secrets = sp
	}
	if standalone {
		return configprovider.Standard(secrets)
	}
	return configprovider.Distributed(secrets, configprovider.Access{FilePaths: cfg.AllowedFilePaths, EnvVariables: cfg.AllowedEnvVariables})
}

// scrubOf returns the resolver's Scrub, or nil when it has none.
func scrubOf(r herder.Resolver) func(string) string {
	if s, ok := r.(herder.Scrubber); ok {
		return s.Scrub
	}
	return nil
}

// serviceAccountTokenFile is where Kubernetes mounts the pod's token.
const serviceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// hideOwnCredentials makes the resolver's Scrub hide the worker's own
// credentials (the files it reads: REST and metrics tokens, TLS key, SASL
// password, the ServiceAccount token), so no log line or shared answer can
// show one even if a message quotes it. Files that do not exist are
// skipped.
func hideOwnCredentials(r herder.Resolver, cfg *workerconfig.Config) {
	h, ok := r.(interface{ Hide(value, label string) })
	if !ok {
		return
	}
	for _, f := range []struct{ key, path string }{
		{workerconfig.KeyRestAuthTokenFile, cfg.RestAuthTokenFile},
		{workerconfig.KeyMetricsAuthTokenFile, cfg.MetricsAuthTokenFile},
		{workerconfig.KeySSLKeyLocation, cfg.SSLKeyLocation},
		{workerconfig.KeySASLPasswordFile, cfg.SASLPasswordFile},
		{"serviceaccount token", serviceAccountTokenFile},
	} {
		if f.path == "" {
			continue
		}
		if b, err := os.ReadFile(f.path); err == nil && len(b) > 0 {
			h.Hide(string(b), "[hidden: "+f.key+"]")
		}
	}
}

// scrubForOf returns the resolver's ScrubFor, or nil when it has none.
func scrubForOf(r herder.Resolver) func(connector, msg string) string {
	if s, ok := r.(herder.Scrubber); ok {
		return s.ScrubFor
	}
	return nil
}

// scrubLogger wraps log so that every message and attribute passes through
// the resolver's Scrub before it is written.
func scrubLogger(log *slog.Logger, r herder.Resolver) *slog.Logger {
	scrub := scrubOf(r)
	if scrub == nil {
		return log
	}
	return slog.New(configprovider.ScrubHandler(log.Handler(), scrub))
}

// restAuth is the REST token check: the token file, re-read when it
// changes, or none when rest.auth.token.file is unset.
func restAuth(cfg *workerconfig.Config, log *slog.Logger) (*rest.TokenCheck, error) {
	if cfg.RestAuthTokenFile == "" {
		return rest.StaticToken(""), nil
	}
	t, err := rest.FileToken(cfg.RestAuthTokenFile, 0, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", workerconfig.KeyRestAuthTokenFile, err)
	}
	return t, nil
}

// startMetrics serves /metrics and /backlog/{connector} on metrics.port (when set) behind the
// metrics token, on the REST server's host. It returns nil when metrics
// are served by the REST server instead.
func (w *Worker) startMetrics(scrub func(string) string) (*http.Server, error) {
	cfg := w.cfg
	if cfg.MetricsPort == 0 {
		return nil, nil
	}
	auth := rest.StaticToken("")
	if cfg.MetricsAuthTokenFile != "" {
		var err error
		if auth, err = rest.FileToken(cfg.MetricsAuthTokenFile, 0, w.log); err != nil {
			return nil, fmt.Errorf("%s: %w", workerconfig.KeyMetricsAuthTokenFile, err)
		}
	}
	addr := net.JoinHostPort(cfg.RestHostName, strconv.Itoa(cfg.MetricsPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s (%s): %w", addr, workerconfig.KeyMetricsPort, err)
	}
	srv := rest.NewMetricsServer(w.metrics.Registry(), auth, scrub, w.log, w.herder.Backlog)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("metrics server stopped", "addr", addr, "err", err)
		}
	}()
	return srv, nil
}

func (w *Worker) stopMetrics(ctx context.Context) {
	if w.metricsSrv != nil {
		_ = w.metricsSrv.Shutdown(ctx)
	}
}

// scrubTopicUsed records a task's topic in the status topic with the
// connector's resolved values hidden: a topic named through a placeholder
// is recorded as its placeholder.
func scrubTopicUsed(put func(ctx context.Context, connector, topic string, task int) error, r herder.Resolver) func(ctx context.Context, connector, topic string, task int) error {
	scrub := scrubForOf(r)
	if scrub == nil {
		return put
	}
	return func(ctx context.Context, connector, topic string, task int) error {
		return put(ctx, connector, scrub(connector, topic), task)
	}
}
