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

package servers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"time"
)

// EnvSchemaRegistry names the variable that points at a schema registry
// binary; without it the one hack/schema-registry.sh builds is used.
const EnvSchemaRegistry = "CONVEYOR_SCHEMA_REGISTRY"

// SchemaRegistryVersion is the conduit-schema-registry release that
// hack/schema-registry.sh builds.
const SchemaRegistryVersion = "0.2.0"

// SchemaRegistryOptions choose the layers in front of the registry; the
// zero value is the registry over plain HTTP.
type SchemaRegistryOptions struct {
	// TLS, when set, serves HTTPS with this certificate.
	TLS *tls.Certificate
	// User and Password, when User is set, require HTTP basic auth (a
	// stand-in layer).
	User, Password string
	// Compatibility, when set (BACKWARD, FORWARD, FULL or NONE), refuses an
	// Avro schema that breaks it against the subject's latest version the
	// way Confluent's registry does (HTTP 409, error code 409), and answers
	// GET /config (a stand-in layer).
	Compatibility string
}

// SchemaRegistry is a running schema registry: the real server of
// github.com/conduitio/conduit-schema-registry (the Confluent API that
// serializers use: POST /subjects/{s}/versions, GET /schemas/ids/{id},
// GET /subjects/{s}/versions/{v}), in memory, in a process of its own,
// behind a proxy in the test process.
//
// That server has no compatibility checks, no /config, no authentication,
// and does not resolve the version "latest". The proxy adds these (see
// schemaregistry_standin.go): "latest" always, the others through
// [SchemaRegistryOptions]. They are stand-ins: a test that relies on one
// says Standin in its name.
type SchemaRegistry struct {
	process
	// URL is where clients reach the registry (the proxy):
	// http:// or https://127.0.0.1:PORT.
	URL string
	// Backend is the registry process's own plain-HTTP URL.
	Backend string

	srv      *http.Server
	done     chan struct{}
	requests atomic.Int64
}

// StartSchemaRegistry starts a registry with its proxy on free loopback
// ports, logging into dir.
func StartSchemaRegistry(ctx context.Context, dir string, opts SchemaRegistryOptions) (*SchemaRegistry, error) {
	bin, err := findBinary(EnvSchemaRegistry, "schema registry not found: run hack/schema-registry.sh (make test does)",
		filepath.Join(cacheDir(), "schema-registry-"+SchemaRegistryVersion, "schema-registry"))
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &SchemaRegistry{Backend: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	s.process = process{name: "schema registry " + s.Backend, bin: bin,
		args: []string{"--addr", fmt.Sprintf("127.0.0.1:%d", port)}, log: filepath.Join(dir, "schema-registry.log")}
	s.ready = func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, "GET", s.Backend+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		return nil
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	backend, _ := url.Parse(s.Backend)
	var h http.Handler = httputil.NewSingleHostReverseProxy(backend)
	h = latestVersion(s.Backend, h)
	if opts.Compatibility != "" {
		if h, err = compatibility(opts.Compatibility, s.Backend, h); err != nil {
			_ = s.Kill()
			return nil, err
		}
	}
	if opts.User != "" {
		h = basicAuth(opts.User, opts.Password, h)
	}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		inner.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = s.Kill()
		return nil, fmt.Errorf("listening for the schema registry proxy: %w", err)
	}
	scheme := "http"
	if opts.TLS != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*opts.TLS}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	s.URL = scheme + "://" + ln.Addr().String()
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("schema registry proxy stopped: %v\n", err)
		}
	}()
	return s, nil
}

// Requests counts the HTTP requests the registry was sent through its
// URL, so a test can see what a client's cache saved.
func (s *SchemaRegistry) Requests() int64 { return s.requests.Load() }

// Close stops the proxy and kills the registry.
func (s *SchemaRegistry) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
	_ = s.Kill()
}
