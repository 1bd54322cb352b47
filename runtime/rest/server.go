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

// Package rest serves the worker's Kafka Connect-compatible REST API on
// port 8083: Kafka Connect's paths, JSON bodies, status codes and error
// shape ({"error_code": N, "message": "..."}), plus Conveyor's extensions
// (GET /connectors/{c}/limits, /health, /readyz, /metrics).
//
// Differences from Kafka Connect, on purpose: client mistakes that Kafka
// answers with 500 (malformed JSON, unknown fields, a missing body) are 400
// here; unknown paths and wrong methods get the JSON error shape too; a
// bearer token can be required; request bodies never appear in logs or
// error messages, because connector configs may hold credentials.
package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/loglevel"
)

// DefaultAddr is where Kafka Connect workers listen.
const DefaultAddr = ":8083"

// Defaults for Config's zero values.
const (
	DefaultRequestTimeout    = 90 * time.Second // Kafka Connect's REST request timeout
	DefaultMaxBodyBytes      = 8 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

// Config configures the REST server. The zero value (plus a herder) is a
// valid open server on DefaultAddr without /metrics.
type Config struct {
	// Addr is the listen address; DefaultAddr when empty.
	Addr string
	// Token, when not empty, is the bearer token every request must carry
	// in "Authorization: Bearer <token>", except /health and /readyz. See
	// ReadTokenFile. Auth, when set, is used instead.
	Token string
	// Auth checks the bearer token (FileToken re-reads a rotated one).
	Auth *TokenCheck
	// Scrub, when not nil, rewrites every response body before it is sent
	// (the worker hides resolved placeholder values with it): see
	// scrubResponses.
	Scrub func(string) string
	// ScrubFor, when not nil, hides the values resolved for one connector;
	// answers about that connector use it instead of Scrub.
	ScrubFor func(connector, msg string) string
	// Gatherer, when not nil, is served on /metrics in Prometheus format.
	Gatherer prometheus.Gatherer
	// Logger receives one line per request (never bodies); slog.Default()
	// when nil.
	Logger *slog.Logger
	// RequestTimeout bounds each herder call (and a forwarded request);
	// DefaultRequestTimeout when zero.
	RequestTimeout time.Duration
	// MaxBodyBytes bounds request bodies (413 beyond); DefaultMaxBodyBytes
	// when zero.
	MaxBodyBytes int64
	// SessionKeys, when not nil, signs the requests this worker forwards
	// and is required to verify those it receives (sign.go); nil neither
	// signs nor checks (a single worker).
	SessionKeys SessionKeys
	// ForwardClient sends writes to the leader; a client with
	// RequestTimeout when nil.
	ForwardClient *http.Client
	// MaxConcurrent (rest.threads.max) bounds the requests served at once;
	// more wait up to RequestTimeout for a slot, then get 503. 0: no bound.
	MaxConcurrent int
	// Loggers, when not nil, are the worker's run-time log levels, served
	// on /admin/loggers (Kafka's KIP-495 shapes).
	Loggers *loglevel.Levels
	// ClusterLoggers, when not nil, sets a level on every worker of the
	// cluster (PUT /admin/loggers/{logger}?scope=cluster): the worker
	// writes it to its config topic.
	ClusterLoggers func(ctx context.Context, logger string, level slog.Level) error
	// Server timeouts; defaults above when zero. The write timeout is
	// RequestTimeout plus 30 s.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
}

// ReadTokenFile reads a bearer token from a file (a mounted Secret), with
// surrounding whitespace trimmed. An empty file is an error: it would turn
// authentication off silently.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading REST token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("REST token file %s is empty: put the token in it or do not configure a token file", path)
	}
	return tok, nil
}

// Server is the REST server of one worker.
type Server struct {
	cfg     Config
	herder  connectapi.Herder
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler
	http    *http.Server
	auth    *TokenCheck
}

// New builds a server for the herder. It does not listen yet.
func New(h connectapi.Herder, cfg Config) (*Server, error) {
	if h == nil {
		return nil, errors.New("rest.New: herder is nil")
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.ForwardClient == nil {
		cfg.ForwardClient = &http.Client{Timeout: cfg.RequestTimeout}
	}
	s := &Server{cfg: cfg, herder: h, log: cfg.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("logger", loglevel.REST) // its name on /admin/loggers
	s.auth = cfg.Auth
	if s.auth == nil {
		s.auth = StaticToken(cfg.Token)
	}
	s.routes()
	s.adminRoutes()
	s.handler = s.logRequests(s.recoverPanics(scrubResponses(cfg.Scrub, cfg.ScrubFor, s.authenticate(s.limitConcurrency(http.HandlerFunc(s.dispatch))))))
	s.http = &http.Server{
		Addr:              cfg.Addr,
		Handler:           s.handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.RequestTimeout + 30*time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Handler is the full handler (logging, auth, routes), for tests and for
// embedding.
func (s *Server) Handler() http.Handler { return s.handler }

// ListenAndServe listens on Config.Addr and serves until Shutdown; it
// returns nil after a Shutdown.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("REST server listening on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(l)
}

// Serve serves on l until Shutdown; it returns nil after a Shutdown.
func (s *Server) Serve(l net.Listener) error {
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits for requests in flight
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close closes the listeners and every connection at once, cutting
// requests still in flight (after a Shutdown that ran out of time).
func (s *Server) Close() error { return s.http.Close() }

// exempt reports whether a path is served without the token.
func (s *Server) exempt(path string) bool {
	switch path {
	case "/health", "/readyz":
		return true
	}
	return false
}

func (s *Server) authenticate(next http.Handler) http.Handler {
	if !s.auth.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.exempt(r.URL.Path) || s.auth.Accepts(r.Header.Get("Authorization")) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="conveyor"`)
		writeError(w, http.StatusUnauthorized, "Authentication required: send the header 'Authorization: Bearer <token>' with the worker's REST token")
	})
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("REST handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				writeError(w, http.StatusInternalServerError, "Internal server error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status a handler wrote, for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests logs method, path, status and duration of each request: never
// the body, the query or headers, which may hold secrets.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelInfo
		switch {
		case rec.status >= 500:
			level = slog.LevelError
		case r.URL.Path == "/health" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics":
			level = slog.LevelDebug // probes and scrapes would flood the log
		}
		s.log.Log(r.Context(), level, "REST request",
			"method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration", time.Since(start), "remote", r.RemoteAddr)
	})
}

// dispatch routes through the mux, answering unknown paths (404) and wrong
// methods (405, with Allow) in the JSON error shape instead of the mux's
// plain text.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // sets the path values
		return
	}
	// No route: let the mux's own handler decide between 404, 405 and a
	// redirect (path cleaning), then replace its plain-text body.
	fb := &captureWriter{header: http.Header{}}
	h.ServeHTTP(fb, r)
	switch fb.status {
	case http.StatusNotFound:
		writeError(w, http.StatusNotFound, "HTTP 404 Not Found: no resource at "+r.URL.Path)
	case http.StatusMethodNotAllowed:
		if allow := fb.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeError(w, http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed: "+r.Method+" is not supported on "+r.URL.Path)
	default:
		for k, v := range fb.header {
			w.Header()[k] = v
		}
		w.WriteHeader(fb.status)
	}
}

// captureWriter records the status and headers of the mux's fallback handler
// and drops its body.
type captureWriter struct {
	header http.Header
	status int
}

func (c *captureWriter) Header() http.Header { return c.header }
func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return len(b), nil
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
}
