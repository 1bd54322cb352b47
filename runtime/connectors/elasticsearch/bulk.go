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
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// client sends _bulk requests to the configured URLs in turn.
type client struct {
	s    *settings
	http *http.Client
	auth string // the Authorization header, or ""
	next atomic.Uint32
}

func newClient(s *settings) *client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: s.connectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     s.tls,
		TLSHandshakeTimeout: s.connectTimeout,
		MaxIdleConnsPerHost: s.maxInFlight + 1,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	c := &client{s: s, http: &http.Client{Transport: tr, Timeout: s.readTimeout}}
	switch {
	case s.apiKey.Value() != "":
		c.auth = "ApiKey " + s.apiKey.Value()
	case s.username != "":
		c.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(s.username+":"+s.password.Value()))
	}
	return c
}

func (c *client) close() { c.http.CloseIdleConnections() }

// do sends one request to the next URL. The error never holds a
// credential: URLs have none (parse refuses them) and headers are not
// quoted.
func (c *client) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	base := c.s.urls[int(c.next.Add(1)-1)%len(c.s.urls)]
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("building the request to %s: %w", base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-ndjson")
	}
	req.Header.Set("Accept", "application/json")
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err // a *url.Error: it names the method and the URL
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the response of %s %s%s: %w", method, base, path, err)
	}
	if len(out) > maxResponse {
		// Not retriable: the same request gets the same answer.
		return resp.StatusCode, nil, errTooLarge{fmt.Errorf("the response of %s %s%s is larger than %d bytes: not an Elasticsearch answer to %s records", method, base, path, maxResponse, KeyBatchSize)}
	}
	return resp.StatusCode, out, nil
}

// maxResponse bounds a response read into memory: a _bulk answer of the
// largest batch.size (100000 items of about 200 bytes each) is about a
// third of it.
const maxResponse = 64 << 20

// errTooLarge marks a response above maxResponse; send fails the task
// with it instead of retrying.
type errTooLarge struct{ error }

func (e errTooLarge) Unwrap() error { return e.error }

// errorBody is Elasticsearch's error response: {"error":{...},"status":N}
// (or, from some servers, "error" as a string).
type errorBody struct {
	Error json.RawMessage `json:"error"`
}

type itemError struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// describe renders an error object or string as "type: reason" without a
// preview of the document's values, which Elasticsearch adds to some
// reasons.
func describe(raw json.RawMessage) string {
	var e itemError
	if json.Unmarshal(raw, &e) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.TrimSpace(s)
		}
		return ""
	}
	reason := e.Reason
	if i := strings.Index(reason, "Preview of field's value"); i >= 0 {
		reason = strings.TrimRight(reason[:i], " .")
	}
	if e.Type == "" {
		return reason
	}
	return e.Type + ": " + reason
}

// requestError describes a non-2xx answer to a whole request.
func requestError(status int, body []byte) string {
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil && len(eb.Error) > 0 {
		if d := describe(eb.Error); d != "" {
			return fmt.Sprintf("status %d: %s", status, d)
		}
	}
	return fmt.Sprintf("status %d", status)
}

// retriableStatus is a status worth retrying: the server is busy or down.
func retriableStatus(status int) bool { return status == http.StatusTooManyRequests || status >= 500 }

// bulkResponse is the part of a _bulk answer the sink reads.
type bulkResponse struct {
	Errors bool                  `json:"errors"`
	Items  []map[string]bulkItem `json:"items"`
	// Error is set by servers (ZincSearch) that answer a failed request
	// with 200 and an error; Elasticsearch never does.
	Error json.RawMessage `json:"error"`
}

type bulkItem struct {
	Status int             `json:"status"`
	Error  json.RawMessage `json:"error"`
}

// noErrors reports, without decoding the items, whether a _bulk answer
// says "errors":false: Elasticsearch and OpenSearch write "took" and
// "errors" before "items", so the head of the body tells.
func noErrors(body []byte) bool {
	head := body[:min(len(body), 64)]
	i := bytes.Index(head, []byte(`"errors":`))
	if i < 0 || bytes.Contains(head[:i], []byte(`"items"`)) {
		return false
	}
	rest := bytes.TrimLeft(head[i+len(`"errors":`):], " ")
	return bytes.HasPrefix(rest, []byte("false"))
}

// outcome of one bulk send.
type outcome struct {
	// rejected are the records the server refused as malformed, with why.
	rejected []rejection
	// left are the records not written when err is retriable.
	left []op
	err  error
}

type rejection struct {
	rec    *plugin.SinkRecord
	status int
	reason string
}

func (r rejection) error() error {
	return fmt.Errorf("the server refused the document of record %s with status %d: %s", position(r.rec), r.status, r.reason)
}

// send writes ops with _bulk, retrying (up to max.retries, with backoff)
// the whole request after 429, 5xx and network errors and the items the
// server answered 429 or 5xx. Items answered 200/201, 404 (a delete of a
// missing document) and 409 (a version conflict: the server holds this or
// a newer version) are done; 400s are malformed documents. Any other
// answer is an error that fails the task.
func (c *client) send(ctx context.Context, ops []op, body *bytes.Buffer) outcome {
	var out outcome
	pending := ops
	for attempt := 0; ; attempt++ {
		body.Reset()
		for _, o := range pending {
			body.Write(o.lines)
		}
		status, resp, err := c.do(ctx, http.MethodPost, "/_bulk", body.Bytes())
		retry := pending[:0:0]
		switch {
		case err != nil && ctx.Err() != nil:
			out.left, out.err = pending, plugin.Retriable(fmt.Errorf("sending %d records: %w", len(pending), context.Cause(ctx)))
			return out
		case errors.As(err, new(errTooLarge)):
			out.err = err
			return out
		case err != nil:
			retry, err = pending, plugin.Retriable(err)
		case retriableStatus(status):
			retry, err = pending, plugin.Retriable(fmt.Errorf("_bulk request of %d records: %s", len(pending), requestError(status, resp)))
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			out.err = fmt.Errorf("_bulk request refused (%s): check %s and %s, or %s, and the user's privileges on the indices", requestError(status, resp), KeyUsername, KeyPassword, KeyAPIKey)
			return out
		case status == http.StatusRequestEntityTooLarge:
			out.err = fmt.Errorf("_bulk request of %d records (%d bytes) is too large for the server (%s): lower %s", len(pending), body.Len(), requestError(status, resp), KeyBatchSize)
			return out
		case status < 200 || status > 299:
			out.err = fmt.Errorf("_bulk request of %d records failed: %s", len(pending), requestError(status, resp))
			return out
		case noErrors(resp):
			return out
		default:
			var br bulkResponse
			if jerr := json.Unmarshal(resp, &br); jerr != nil {
				out.err = fmt.Errorf("decoding the _bulk response (status %d): %w", status, jerr)
				return out
			}
			if len(br.Error) > 0 && string(br.Error) != `""` && string(br.Error) != "null" {
				retry, err = pending, plugin.Retriable(fmt.Errorf("_bulk request of %d records: the server answered %d with the error %s", len(pending), status, describe(br.Error)))
				break
			}
			if len(br.Items) != len(pending) {
				out.err = fmt.Errorf("the _bulk response has %d items for %d actions", len(br.Items), len(pending))
				return out
			}
			for i, item := range br.Items {
				var it bulkItem
				for _, v := range item { // one key: the action
					it = v
				}
				switch {
				case it.Status >= 200 && it.Status <= 299, it.Status == http.StatusNotFound && isDelete(pending[i]), it.Status == http.StatusConflict:
				case retriableStatus(it.Status):
					retry = append(retry, pending[i])
					err = plugin.Retriable(fmt.Errorf("%d of %d items answered %d (%s)", len(retry), len(pending), it.Status, describe(it.Error)))
				case it.Status == http.StatusBadRequest:
					out.rejected = append(out.rejected, rejection{rec: pending[i].rec, status: it.Status, reason: describe(it.Error)})
				default:
					out.err = fmt.Errorf("the server refused record %s with status %d: %s", position(pending[i].rec), it.Status, describe(it.Error))
					return out
				}
			}
		}
		if len(retry) == 0 {
			return out
		}
		if attempt >= c.s.maxRetries {
			out.left, out.err = retry, fmt.Errorf("after %d retries: %w", attempt, err)
			return out
		}
		if !sleep(ctx, backoff(c.s.retryBackoff, attempt)) {
			out.left, out.err = retry, plugin.Retriable(fmt.Errorf("retrying %d records: %w", len(retry), context.Cause(ctx)))
			return out
		}
		pending = retry
	}
}

func isDelete(o op) bool { return bytes.HasPrefix(o.lines, []byte(`{"delete"`)) }

// maxBackoff bounds one pause between retries.
const maxBackoff = 10 * time.Second

// backoff is base·2^attempt, at most maxBackoff, minus up to a fifth of
// jitter (so that tasks do not retry in step).
func backoff(base time.Duration, attempt int) time.Duration {
	d := base << min(attempt, 20)
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// sleep waits d, or less when ctx ends (then false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// errCredentials marks a ping the server refused for its credentials.
var errCredentials = errors.New("the server refused the credentials")

// ping asks the server for its info (GET /) and returns its answer's
// version line, or an error saying what to fix.
func (c *client) ping(ctx context.Context) (string, error) {
	status, body, err := c.do(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return "", err
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "", fmt.Errorf("%w (%s)", errCredentials, requestError(status, body))
	case status < 200 || status > 299:
		return "", errors.New("the server answered " + requestError(status, body))
	}
	var info struct {
		Version struct {
			Number       string `json:"number"`
			Distribution string `json:"distribution"`
		} `json:"version"`
	}
	_ = json.Unmarshal(body, &info)
	return strings.TrimSpace(info.Version.Distribution + " " + info.Version.Number), nil
}
