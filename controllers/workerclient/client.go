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

// Package workerclient is the operator's typed client for the worker REST
// API (Kafka Connect compatible, plus Conveyor's /limits extension). Request
// and answer bodies are the runtime/connectapi types, so the operator and the
// worker share one definition of every entity.
//
// A Client talks to the Ready worker pods a Resolver found, by pod IP. It
// retries what a distributed worker answers while it rebalances (409 other
// than "already exists", 502/503/504) and transport failures, with
// exponential backoff and a bound on attempts, moving to the next worker on a
// transport failure. Errors answered by a worker are *APIError values that
// keep Kafka Connect's error_code and message and unwrap to the connectapi
// sentinels (errors.Is(err, connectapi.ErrNotFound)).
package workerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// maxBody bounds how much of an answer the client reads.
const maxBody = 4 << 20

// ErrNoWorkers: the resolver found no Ready worker to talk to.
var ErrNoWorkers = errors.New("no ready worker pod to reach")

// Backoff bounds retries: attempt n (from 1) waits Initial*2^(n-1), at most
// Max, before attempt n+1; at most Attempts attempts in all.
type Backoff struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
}

// DefaultBackoff retries for about 3 seconds in 6 attempts, well inside a
// reconcile, so one busy cluster never holds the work queue long.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Attempts: 6}

func (b Backoff) delay(attempt int) time.Duration {
	d := b.Initial
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	return d
}

// Options configures a Client.
type Options struct {
	// Token is the worker's REST bearer token (from the cluster's token
	// Secret); empty sends no Authorization header.
	Token string
	// HTTPClient defaults to a client with RequestTimeout.
	HTTPClient *http.Client
	// RequestTimeout bounds each attempt (default 10s).
	RequestTimeout time.Duration
	// Backoff defaults to DefaultBackoff.
	Backoff Backoff
}

// Client calls the REST API of one ConnectCluster's workers.
type Client struct {
	endpoints []string
	opts      Options
	// next is the endpoint to try first: the one that answered last.
	next int
	// writes counts the requests sent that are not GETs.
	writes int
}

// Writes is how many requests other than GETs the client sent (retries
// not counted): whether a reconcile pass may have changed the runtime.
func (c *Client) Writes() int { return c.writes }

// Endpoints are the worker base URLs the client talks to: the Ready worker
// pods the resolver found.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// New returns a client for the given worker base URLs ("http://10.0.0.7:8083").
// A Client is meant for one reconcile and is not safe for concurrent use.
func New(endpoints []string, opts Options) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, ErrNoWorkers
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 10 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: opts.RequestTimeout}
	}
	if opts.Backoff.Attempts <= 0 {
		opts.Backoff = DefaultBackoff
	}
	eps := make([]string, len(endpoints))
	for i, e := range endpoints {
		eps[i] = strings.TrimRight(e, "/")
	}
	return &Client{endpoints: eps, opts: opts}, nil
}

// APIError is an error answer of a worker: the HTTP status and Kafka
// Connect's error body. The message never holds config values (the worker
// guarantees it), so it is safe for conditions and events.
type APIError struct {
	Method string
	Path   string
	Status int
	// ErrorCode and Message are the body's error_code and message.
	ErrorCode int
	Message   string
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("worker REST %s %s: %d: %s", e.Method, e.Path, e.Status, msg)
}

// Unwrap maps the answer to the connectapi sentinel of its kind.
func (e *APIError) Unwrap() error {
	switch {
	case e.Status == http.StatusNotFound:
		return connectapi.ErrNotFound
	case e.Status == http.StatusBadRequest:
		return connectapi.ErrBadRequest
	case e.Status == http.StatusConflict && strings.Contains(strings.ToLower(e.Message), "already exists"):
		return connectapi.ErrAlreadyExists
	case e.Status == http.StatusConflict:
		return connectapi.ErrRebalanceInProgress
	}
	return nil
}

// retryable reports whether another attempt may succeed.
func (e *APIError) retryable() bool {
	switch e.Status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return errors.Is(e, connectapi.ErrRebalanceInProgress)
}

// IsNotFound reports whether err is a worker's 404.
func IsNotFound(err error) bool { return errors.Is(err, connectapi.ErrNotFound) }

// do sends one request with retries and decodes a 2xx answer into out
// (when out is not nil and the answer has a body). It returns the status.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("encoding the body of %s %s: %w", method, path, err)
		}
	}
	if method != http.MethodGet {
		c.writes++
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var lastErr error
	for attempt := 1; attempt <= c.opts.Backoff.Attempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(c.opts.Backoff.delay(attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, fmt.Errorf("worker REST %s %s: %w (last error: %w)", method, path, ctx.Err(), lastErr)
			case <-t.C:
			}
		}
		ep := c.endpoints[c.next]
		status, err := c.once(ctx, ep, method, path, target, body, out)
		if err == nil {
			return status, nil
		}
		lastErr = err
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			if !apiErr.retryable() {
				return status, err
			}
			continue
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("worker REST %s %s: %w", method, path, err)
		}
		// Transport failure or timeout: the next attempt goes to another worker.
		c.next = (c.next + 1) % len(c.endpoints)
	}
	return 0, fmt.Errorf("worker REST %s %s: giving up after %d attempts: %w", method, path, c.opts.Backoff.Attempts, lastErr)
}

func (c *Client) once(ctx context.Context, ep, method, path, target string, body []byte, out any) (int, error) {
	actx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, ep+target, rd)
	if err != nil {
		return 0, fmt.Errorf("building request %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("worker %s: %w", ep, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, fmt.Errorf("worker %s: reading the answer to %s %s: %w", ep, method, path, err)
	}
	if resp.StatusCode >= 300 {
		apiErr := &APIError{Method: method, Path: path, Status: resp.StatusCode}
		var em connectapi.ErrorMessage
		if json.Unmarshal(data, &em) == nil {
			apiErr.ErrorCode, apiErr.Message = em.ErrorCode, em.Message
		}
		return resp.StatusCode, apiErr
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("worker %s: decoding the answer to %s %s: %w", ep, method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func connectorPath(name string, rest ...string) string {
	p := "/connectors/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// ServerInfo is GET /.
func (c *Client) ServerInfo(ctx context.Context) (connectapi.ServerInfo, error) {
	var out connectapi.ServerInfo
	_, err := c.do(ctx, http.MethodGet, "/", nil, nil, &out)
	return out, err
}

// ListConnectors is GET /connectors: the connector names.
func (c *Client) ListConnectors(ctx context.Context) ([]string, error) {
	var out []string
	_, err := c.do(ctx, http.MethodGet, "/connectors", nil, nil, &out)
	return out, err
}

// Expanded is GET /connectors?expand=status&expand=info&expand=limits&expand=topics:
// every connector of the cluster in one call. A worker that does not know
// Conveyor's limits and topics expansions leaves those fields nil.
func (c *Client) Expanded(ctx context.Context) (map[string]connectapi.ConnectorExpansion, error) {
	var out map[string]connectapi.ConnectorExpansion
	_, err := c.do(ctx, http.MethodGet, "/connectors", url.Values{"expand": {"status", "info", "limits", "topics"}}, nil, &out)
	for name, e := range out {
		if e.Topics != nil {
			e.Topics.Connector = name
		}
	}
	return out, err
}

// CreateConnector is POST /connectors, creating the connector in the given
// initial state ("" for RUNNING). A name in use is connectapi.ErrAlreadyExists.
func (c *Client) CreateConnector(ctx context.Context, name string, config map[string]string, initial connectapi.InitialState) (connectapi.ConnectorInfo, error) {
	var out connectapi.ConnectorInfo
	_, err := c.do(ctx, http.MethodPost, "/connectors", nil,
		connectapi.CreateConnectorRequest{Name: name, Config: config, InitialState: initial}, &out)
	return out, err
}

// PutConnectorConfig is PUT /connectors/{c}/config: creates or replaces the
// config; created says which.
func (c *Client) PutConnectorConfig(ctx context.Context, name string, config map[string]string) (connectapi.ConnectorInfo, bool, error) {
	var out connectapi.ConnectorInfo
	status, err := c.do(ctx, http.MethodPut, connectorPath(name, "config"), nil, config, &out)
	return out, status == http.StatusCreated, err
}

// ConnectorConfig is GET /connectors/{c}/config (placeholders, never secrets).
func (c *Client) ConnectorConfig(ctx context.Context, name string) (map[string]string, error) {
	var out map[string]string
	_, err := c.do(ctx, http.MethodGet, connectorPath(name, "config"), nil, nil, &out)
	return out, err
}

// Connector is GET /connectors/{c}.
func (c *Client) Connector(ctx context.Context, name string) (connectapi.ConnectorInfo, error) {
	var out connectapi.ConnectorInfo
	_, err := c.do(ctx, http.MethodGet, connectorPath(name), nil, nil, &out)
	return out, err
}

// Status is GET /connectors/{c}/status.
func (c *Client) Status(ctx context.Context, name string) (connectapi.ConnectorStateInfo, error) {
	var out connectapi.ConnectorStateInfo
	_, err := c.do(ctx, http.MethodGet, connectorPath(name, "status"), nil, nil, &out)
	return out, err
}

// Pause is PUT /connectors/{c}/pause.
func (c *Client) Pause(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name, "pause"), nil, nil, nil)
	return err
}

// Resume is PUT /connectors/{c}/resume.
func (c *Client) Resume(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name, "resume"), nil, nil, nil)
	return err
}

// Stop is PUT /connectors/{c}/stop; it works on a FAILED connector too.
func (c *Client) Stop(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name, "stop"), nil, nil, nil)
	return err
}

// Restart is POST /connectors/{c}/restart?includeTasks=..&onlyFailed=...
// It returns the status with the instances being restarted (nil when the
// worker answered 204, i.e. neither flag was set).
func (c *Client) Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (*connectapi.ConnectorStateInfo, error) {
	q := url.Values{}
	q.Set("includeTasks", strconv.FormatBool(includeTasks))
	q.Set("onlyFailed", strconv.FormatBool(onlyFailed))
	var out connectapi.ConnectorStateInfo
	status, err := c.do(ctx, http.MethodPost, connectorPath(name, "restart"), q, nil, &out)
	if err != nil || status == http.StatusNoContent {
		return nil, err
	}
	return &out, nil
}

// RestartTask is POST /connectors/{c}/tasks/{t}/restart.
func (c *Client) RestartTask(ctx context.Context, name string, task int) error {
	_, err := c.do(ctx, http.MethodPost, connectorPath(name, "tasks", strconv.Itoa(task), "restart"), nil, nil, nil)
	return err
}

// DeleteConnector is DELETE /connectors/{c}. A connector that is already
// gone is not an error (a retried delete may find it deleted).
func (c *Client) DeleteConnector(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, connectorPath(name), nil, nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// Validate is PUT /connector-plugins/{class}/config/validate. An unknown
// class is connectapi.ErrNotFound.
func (c *Client) Validate(ctx context.Context, class string, config map[string]string) (connectapi.ConfigInfos, error) {
	var out connectapi.ConfigInfos
	_, err := c.do(ctx, http.MethodPut, "/connector-plugins/"+url.PathEscape(class)+"/config/validate", nil, config, &out)
	return out, err
}

// Plugins is GET /connector-plugins (connectors only, as Kafka's default).
func (c *Client) Plugins(ctx context.Context) ([]connectapi.PluginInfo, error) {
	var out []connectapi.PluginInfo
	_, err := c.do(ctx, http.MethodGet, "/connector-plugins", nil, nil, &out)
	return out, err
}

// Limits is Conveyor's GET /connectors/{c}/limits.
func (c *Client) Limits(ctx context.Context, name string) (connectapi.Limits, error) {
	var out connectapi.Limits
	_, err := c.do(ctx, http.MethodGet, connectorPath(name, "limits"), nil, nil, &out)
	return out, err
}

// Topics is GET /connectors/{c}/topics: the topics the connector used.
func (c *Client) Topics(ctx context.Context, name string) (connectapi.ActiveTopicsInfo, error) {
	var out map[string]connectapi.ActiveTopicsInfo
	if _, err := c.do(ctx, http.MethodGet, connectorPath(name, "topics"), nil, nil, &out); err != nil {
		return connectapi.ActiveTopicsInfo{}, err
	}
	info := out[name]
	info.Connector = name
	return info, nil
}

// Offsets is GET /connectors/{c}/offsets.
func (c *Client) Offsets(ctx context.Context, name string) (connectapi.ConnectorOffsets, error) {
	var out connectapi.ConnectorOffsets
	_, err := c.do(ctx, http.MethodGet, connectorPath(name, "offsets"), nil, nil, &out)
	return out, err
}

// AlterOffsets is PATCH /connectors/{c}/offsets (KIP-875); the connector
// must be STOPPED. It returns the worker's message.
func (c *Client) AlterOffsets(ctx context.Context, name string, offsets connectapi.ConnectorOffsets) (connectapi.Message, error) {
	var out connectapi.Message
	_, err := c.do(ctx, http.MethodPatch, connectorPath(name, "offsets"), nil, offsets, &out)
	return out, err
}

// ResetOffsets is DELETE /connectors/{c}/offsets (KIP-875); the connector
// must be STOPPED. It returns the worker's message.
func (c *Client) ResetOffsets(ctx context.Context, name string) (connectapi.Message, error) {
	var out connectapi.Message
	_, err := c.do(ctx, http.MethodDelete, connectorPath(name, "offsets"), nil, nil, &out)
	return out, err
}
