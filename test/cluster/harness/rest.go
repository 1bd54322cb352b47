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

package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// Client talks to one worker's Kafka Connect REST API with a bearer token.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// NewClient returns a client for the worker at baseURL.
func NewClient(baseURL, token string) *Client {
	return &Client{BaseURL: baseURL, Token: token, HTTP: &http.Client{Timeout: 20 * time.Second}}
}

// APIError is a non-2xx answer in Kafka Connect's error shape.
type APIError struct {
	Status    int
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d: %s (error_code %d)", e.Status, e.Message, e.ErrorCode)
}

// Do sends a request (body encoded as JSON when not nil) and decodes a 2xx
// answer into out (when not nil). A non-2xx answer returns its status code
// and an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(b, e) != nil || e.Message == "" {
			e.Message = string(b)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, e)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decoding %q: %w", method, path, b, err)
		}
	}
	return resp.StatusCode, nil
}

// PutConnector creates or updates a connector (PUT /connectors/{c}/config),
// retrying while the cluster answers 409 (rebalancing) or 5xx, or the
// worker is unreachable, until ctx ends.
func (c *Client) PutConnector(ctx context.Context, name string, config map[string]string) error {
	var last error
	for {
		code, err := c.Do(ctx, "PUT", "/connectors/"+url.PathEscape(name)+"/config", config, nil)
		if err == nil {
			return nil
		}
		last = err
		if code != 0 && code != http.StatusConflict && code/100 != 5 {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("creating connector %s: %w (last: %v)", name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ConnectorStatus is GET /connectors/{c}/status.
type ConnectorStatus struct {
	Name      string `json:"name"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"connector"`
	Tasks []TaskStatus `json:"tasks"`
	Type  string       `json:"type"`
}

// TaskStatus is one task of a ConnectorStatus.
type TaskStatus struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace"`
	// Stalled is Conveyor's note on a RUNNING task with work and no progress.
	Stalled string `json:"stalled"`
}

// Status returns a connector's status.
func (c *Client) Status(ctx context.Context, name string) (*ConnectorStatus, error) {
	var st ConnectorStatus
	if _, err := c.Do(ctx, "GET", "/connectors/"+url.PathEscape(name)+"/status", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Statuses returns every connector's status (GET /connectors?expand=status).
func (c *Client) Statuses(ctx context.Context) (map[string]*ConnectorStatus, error) {
	var all map[string]struct {
		Status *ConnectorStatus `json:"status"`
	}
	if _, err := c.Do(ctx, "GET", "/connectors?expand=status", nil, &all); err != nil {
		return nil, err
	}
	out := make(map[string]*ConnectorStatus, len(all))
	for n, e := range all {
		if e.Status != nil {
			out[n] = e.Status
		}
	}
	return out, nil
}

// Metrics returns the worker's Prometheus exposition (GET /metrics).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.BaseURL+"/metrics", nil)
	if err != nil {
		return "", err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("GET /metrics: HTTP %d: %s", resp.StatusCode, b)
	}
	return string(b), nil
}

// Placement is where the tasks of connectors run: for each task, its state
// and worker.
type Placement map[TaskKey]TaskStatus

// TaskKey names one task.
type TaskKey struct {
	Connector string
	Task      int
}

func (k TaskKey) String() string { return fmt.Sprintf("%s-%d", k.Connector, k.Task) }

// PlacementOf flattens statuses into a Placement.
func PlacementOf(sts ...*ConnectorStatus) Placement {
	p := Placement{}
	for _, st := range sts {
		for _, t := range st.Tasks {
			p[TaskKey{st.Name, t.ID}] = t
		}
	}
	return p
}

// PerWorker counts RUNNING tasks per worker id.
func (p Placement) PerWorker() map[string]int {
	out := map[string]int{}
	for _, t := range p {
		if t.State == "RUNNING" {
			out[t.WorkerID]++
		}
	}
	return out
}

// Running counts RUNNING tasks, and those of them on a worker in avoid.
func (p Placement) Running(avoid ...string) (running, onAvoided int) {
	for _, t := range p {
		if t.State != "RUNNING" {
			continue
		}
		running++
		for _, a := range avoid {
			if t.WorkerID == a {
				onAvoided++
			}
		}
	}
	return running, onAvoided
}

// On returns the tasks (RUNNING or not) whose worker is id.
func (p Placement) On(id string) []TaskKey {
	var out []TaskKey
	for k, t := range p {
		if t.WorkerID == id {
			out = append(out, k)
		}
	}
	return out
}

// String prints a placement compactly, sorted by task:
// "c-0=RUNNING@w1 c-1=RUNNING@w2".
func (p Placement) String() string {
	items := make([]string, 0, len(p))
	for k, t := range p {
		items = append(items, fmt.Sprintf("%s=%s@%s", k, t.State, t.WorkerID))
	}
	sort.Strings(items)
	return strings.Join(items, " ")
}

// AllRunning holds when n tasks are RUNNING, none on a worker in avoid.
func AllRunning(n int, avoid ...string) func(Placement) bool {
	return func(p Placement) bool {
		run, bad := p.Running(avoid...)
		return len(p) == n && run == n && bad == 0
	}
}

// Balanced holds when n tasks are RUNNING on exactly the given workers,
// each with n/len(workers) or one more.
func Balanced(n int, workers ...string) func(Placement) bool {
	return func(p Placement) bool {
		if !AllRunning(n)(p) {
			return false
		}
		per := p.PerWorker()
		if len(per) != len(workers) {
			return false
		}
		lo := n / len(workers)
		for _, w := range workers {
			if per[w] < lo || per[w] > lo+1 {
				return false
			}
		}
		return true
	}
}

// Placement reads the placement of the named connectors, or of every
// connector when none is named (GET /connectors?expand=status).
func (c *Client) Placement(ctx context.Context, connectors ...string) (Placement, error) {
	var sts []*ConnectorStatus
	if len(connectors) == 0 {
		all, err := c.Statuses(ctx)
		if err != nil {
			return nil, err
		}
		for _, st := range all {
			sts = append(sts, st)
		}
	}
	for _, n := range connectors {
		st, err := c.Status(ctx, n)
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	return PlacementOf(sts...), nil
}

// WaitPlacement polls the placement (see Placement) until cond holds and
// returns it with the moment it was read; on timeout the error shows the
// last placement seen.
func (c *Client) WaitPlacement(ctx context.Context, timeout time.Duration, what string, cond func(Placement) bool, connectors ...string) (Placement, time.Time, error) {
	var p Placement
	var at time.Time
	err := testkit.Until(ctx, timeout, what, func(ctx context.Context) (bool, error) {
		var err error
		p, err = c.Placement(ctx, connectors...)
		if err != nil {
			return false, err
		}
		at = time.Now()
		return cond(p), nil
	})
	if err != nil {
		if len(p) > 200 {
			return p, at, fmt.Errorf("%w; tasks per worker: %v", err, p.PerWorker())
		}
		return p, at, fmt.Errorf("%w; placement: %s", err, p)
	}
	return p, at, nil
}

// Leader returns the group leader's REST URL as this worker sees it (the
// label of kafka_connect_leader_name), or "" when it knows none.
func (c *Client) Leader(ctx context.Context) (string, error) {
	m, err := c.Metrics(ctx)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(m, "\n") {
		rest, ok := strings.CutPrefix(l, "kafka_connect_leader_name{")
		if !ok || !strings.HasSuffix(l, "} 1") {
			continue
		}
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "} 1"), ",") {
			if v, ok := strings.CutPrefix(kv, `leader="`); ok {
				return strings.TrimSuffix(v, `"`), nil
			}
		}
	}
	return "", nil
}

// MetricValue returns the value of one sample of the worker's metrics,
// named with its labels exactly as exposed (for example
// `kafka_connect_task_count{state="RUNNING"}`), and whether it exists.
func MetricValue(exposition, sample string) (float64, bool) {
	for _, l := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
