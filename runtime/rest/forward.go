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

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// forwardParam marks a request forwarded by a follower. A worker that gets
// a forwarded write while it is not the leader answers 409 instead of
// forwarding again, so a request makes at most one hop (Kafka uses the same
// query parameter).
const forwardParam = "forward"

// forwardedHeaders are the request headers a forwarded request keeps: the
// credentials, so the leader authenticates the caller, and content headers.
var forwardedHeaders = []string{"Authorization", "Content-Type", "Accept"}

// forward proxies a write to the leader and relays its answer.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, body []byte, leaderURL string) {
	if strings.EqualFold(r.URL.Query().Get(forwardParam), "false") {
		writeError(w, http.StatusConflict, connectapi.MessageForwardLoop)
		return
	}
	if leaderURL == "" {
		writeError(w, http.StatusConflict, connectapi.MessageNoLeader)
		return
	}
	target, err := forwardURL(leaderURL, r)
	if err != nil {
		s.log.Error("leader URL is not valid", "leader", leaderURL, "error", err)
		writeError(w, http.StatusInternalServerError, "The leader's advertised REST URL is not valid: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, target, bytes.NewReader(body))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Building the request to the leader failed: "+err.Error())
		return
	}
	for _, h := range forwardedHeaders {
		if v := r.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	if s.cfg.SessionKeys != nil {
		key, _, ok := s.cfg.SessionKeys()
		if !ok {
			writeError(w, http.StatusConflict, connectapi.MessageForwardLoop)
			return
		}
		signRequest(req, body, key, time.Now())
	}
	resp, err := s.cfg.ForwardClient.Do(req)
	if err != nil {
		s.log.Warn("forwarding a request to the leader failed", "method", r.Method, "path", r.URL.Path, "leader", leaderURL, "error", err)
		writeError(w, http.StatusInternalServerError, "IO Error trying to forward REST request to the leader at "+leaderURL)
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Location", "WWW-Authenticate", "Allow"} {
		if v := resp.Header.Values(h); len(v) > 0 {
			w.Header()[h] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	// Read through a limit: responses are scrubbed whole in memory, and
	// the answering worker may not be a well-behaved one.
	if n, _ := io.Copy(w, io.LimitReader(resp.Body, maxForwardedBody+1)); n > maxForwardedBody {
		s.log.Warn("the leader's answer to a forwarded request was cut at the limit", "method", r.Method, "path", r.URL.Path, "leader", leaderURL, "limit_bytes", maxForwardedBody)
	}
}

// maxForwardedBody bounds the answer to a forwarded request that a
// follower passes on: far above any real REST answer (the status of a
// thousand connectors is a few MB).
const maxForwardedBody = 64 << 20

// forwardURL is the leader's URL for r: same path and query, plus
// forward=false.
func forwardURL(leaderURL string, r *http.Request) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(leaderURL, "/"))
	if err != nil {
		return "", err
	}
	if base.Scheme == "" || base.Host == "" {
		return "", &url.Error{Op: "parse", URL: leaderURL, Err: errNoSchemeOrHost}
	}
	q := r.URL.Query()
	q.Set(forwardParam, "false")
	u := *base
	u.Path = base.Path + r.URL.Path
	u.RawPath = base.EscapedPath() + r.URL.EscapedPath()
	u.RawQuery = q.Encode()
	return u.String(), nil
}

type forwardURLError string

func (e forwardURLError) Error() string { return string(e) }

const errNoSchemeOrHost = forwardURLError("want scheme://host:port, e.g. http://10.0.0.7:8083")

// SendTaskConfigs sends task configs generated on a follower to the
// leader's internal PUT /connectors/{c}/tasks, with the cluster's bearer
// token when one is set, signed with the session key from keys (when not
// nil). The body is never logged: task configs may hold placeholders of
// secrets.
func SendTaskConfigs(ctx context.Context, client *http.Client, keys SessionKeys, leaderURL, token, connector string, cfgs []map[string]string) error {
	if leaderURL == "" {
		return fmt.Errorf("sending task configs of connector %s: no leader known (a rebalance is underway)", connector)
	}
	base, err := url.Parse(strings.TrimSuffix(leaderURL, "/"))
	if err != nil || base.Scheme == "" || base.Host == "" {
		return fmt.Errorf("sending task configs of connector %s: leader URL %q is not valid: %s", connector, leaderURL, errNoSchemeOrHost)
	}
	u := *base
	u.Path = base.Path + "/connectors/" + connector + "/tasks"
	u.RawPath = base.EscapedPath() + "/connectors/" + url.PathEscape(connector) + "/tasks"
	u.RawQuery = forwardParam + "=false"
	if cfgs == nil {
		cfgs = []map[string]string{}
	}
	body, err := json.Marshal(cfgs)
	if err != nil {
		return fmt.Errorf("encoding task configs of connector %s: %w", connector, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("sending task configs of connector %s: %w", connector, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if keys != nil {
		key, _, ok := keys()
		if !ok {
			return fmt.Errorf("sending task configs of connector %s: %w", connector, errNoSessionKey)
		}
		signRequest(req, body, key, time.Now())
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("sending task configs of connector %s to the leader at %s: %w", connector, leaderURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var e struct {
		Message string `json:"message"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
	return fmt.Errorf("sending task configs of connector %s to the leader at %s: %d %s", connector, leaderURL, resp.StatusCode, e.Message)
}
