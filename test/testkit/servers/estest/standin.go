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

// Package estest is a stand-in for an Elasticsearch server: an HTTP server
// on a loopback port that answers the `_bulk` API as Elasticsearch
// documents it (https://www.elastic.co/guide/en/elasticsearch/reference/current/docs-bulk.html),
// with in-memory indices, so the sink's error handling can be tested where
// no Elasticsearch can run. No Elasticsearch or OpenSearch server runs on
// the project's machines; ZincSearch does (the smoke test), but its _bulk
// never reports a per-item error.
//
// What it answers like Elasticsearch:
//   - every response has `X-Elastic-Product: Elasticsearch` (the go client
//     refuses a server without it), except 401 and 403, as Elasticsearch;
//   - GET / (the info document), POST /_bulk and /{index}/_bulk,
//     GET /{index}/_count, GET /{index}/_doc/{id};
//   - index and create actions: 201 "created" or 200 "updated"; create of
//     an existing document 409; with version_type external, 409
//     version_conflict_engine_exception unless the version is higher than
//     the stored one (deleted documents keep their version, as
//     Elasticsearch keeps delete tombstones for index.gc_deletes);
//   - delete: 200 "deleted" or 404 "not_found";
//   - dynamic mapping of top-level fields: the first document to hold a
//     field fixes its type (long, double, boolean, text, object), and a
//     later document whose value cannot be that type gets 400
//     document_parsing_exception (a mapping conflict); a document that is
//     no JSON object gets 400 too;
//   - "errors": true when any item failed; "took" and "errors" before
//     "items", as Elasticsearch writes them;
//   - Basic and ApiKey authentication (401 security_exception with
//     WWW-Authenticate) when credentials are set.
//
// Faults a test injects: whole requests answered 429 or 503, items
// answered 429 es_rejected_execution_exception, and an outage (the
// listener closed, then opened again on the same address).
//
// Not modelled: shards, refresh (documents are visible at once), update
// actions (answered 400), routing, pipelines, nested field mappings.
package estest

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit/certs"
)

// Standin is the stand-in server.
type Standin struct {
	// URL is the server's base URL (http://127.0.0.1:PORT).
	URL string
	// Username and Password, or APIKey (the encoded form), when set, are
	// required on every request.
	Username, Password, APIKey string

	addr    string
	srv     *http.Server
	tlsConf *tls.Config // serve https when set

	mu       sync.Mutex
	indices  map[string]*index
	failNext []int // statuses for the next whole _bulk requests
	rejectN  int   // items to answer 429 next
	// Set by WithholdAnswersAfter: items still answered before the answers
	// of later _bulk requests are withheld, until release is closed.
	withhold   bool
	answerLeft int
	release    chan struct{}
	requests   int
	statuses   map[int]int // item statuses answered, by status
}

type index struct {
	docs     map[string]json.RawMessage
	versions map[string]int64 // every id ever written, deleted ones too
	mapping  map[string]string
}

// Start starts a stand-in on 127.0.0.1 and a free port.
func Start() (*Standin, error) { return start(nil) }

// StartTLS starts a stand-in that serves https with a new self-signed
// certificate for 127.0.0.1, and writes that certificate (the CA a client
// must trust) as PEM into caFile.
func StartTLS(caFile string) (*Standin, error) {
	certPEM, keyPEM, err := certs.SelfSigned("estest", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(caFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return start(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
}

func start(tc *tls.Config) (*Standin, error) {
	s := &Standin{indices: map[string]*index{}, statuses: map[int]int{}, tlsConf: tc}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("estest: listening: %w", err)
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	if tc != nil {
		s.URL = "https://" + s.addr
	}
	s.serve(ln)
	return s, nil
}

func (s *Standin) serve(ln net.Listener) {
	if s.tlsConf != nil {
		ln = tls.NewListener(ln, s.tlsConf)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)} // refused TLS handshakes are what some tests do
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Close stops the server.
func (s *Standin) Close() {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	_ = srv.Close()
}

// Down closes the listener and every connection: clients get connection
// refused until Up.
func (s *Standin) Down() {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	_ = srv.Close()
}

// Up listens again on the same address (retrying for a few seconds if the
// port is briefly taken).
func (s *Standin) Up() error {
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			s.serve(ln)
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("estest: listening on %s again: %w", s.addr, err)
}

// FailRequests makes the next whole _bulk requests answer these statuses
// (429: es_rejected_execution_exception; 5xx: an unavailable cluster), one
// each, without applying them.
func (s *Standin) FailRequests(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, statuses...)
}

// WithholdAnswersAfter makes the stand-in apply and answer the next n
// items of _bulk requests as usual, then apply every later _bulk request
// without answering it, until ReleaseAnswers: the client's writes are in
// the index, unacknowledged, as when a cluster stalls after writing. Tests
// use it to hold a sink in the middle of its writes, with documents
// written whose offsets it cannot commit (its Flush waits for the answers).
func (s *Standin) WithholdAnswersAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.withhold {
		s.withhold, s.release = true, make(chan struct{})
	}
	s.answerLeft = n
}

// ReleaseAnswers answers the requests WithholdAnswersAfter withheld, and
// answers later ones at once.
func (s *Standin) ReleaseAnswers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.withhold {
		s.withhold = false
		close(s.release)
	}
}

// RejectItems makes the next n items of _bulk requests answer 429
// es_rejected_execution_exception, without applying them.
func (s *Standin) RejectItems(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectN += n
}

// Count is the number of documents in an index.
func (s *Standin) Count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.indices[name]; ix != nil {
		return len(ix.docs)
	}
	return 0
}

// IDs returns the ids of an index's documents, sorted.
func (s *Standin) IDs(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if ix := s.indices[name]; ix != nil {
		for id := range ix.docs {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Doc returns a document's source, or nil.
func (s *Standin) Doc(name, id string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.indices[name]; ix != nil {
		return ix.docs[id]
	}
	return nil
}

// Statuses returns how many items were answered with each status so far.
func (s *Standin) Statuses() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for k, v := range s.statuses {
		out[k] = v
	}
	return out
}

// Requests is the number of _bulk requests received (failed ones too).
func (s *Standin) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Reset drops every index and counter (not the credentials).
func (s *Standin) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indices, s.statuses, s.requests, s.failNext, s.rejectN = map[string]*index{}, map[int]int{}, 0, nil, 0
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if status != http.StatusUnauthorized && status != http.StatusForbidden {
		h.Set("X-Elastic-Product", "Elasticsearch")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorJSON is Elasticsearch's error body.
func errorJSON(status int, typ, reason string) []byte {
	e := map[string]any{"type": typ, "reason": reason}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"root_cause": []any{e}, "type": typ, "reason": reason}, "status": status})
	return b
}

func (s *Standin) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.Username == "" && s.APIKey == "" {
		return true
	}
	got := r.Header.Get("Authorization")
	if got == "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="security" charset="UTF-8"`)
		writeJSON(w, http.StatusUnauthorized, errorJSON(401, "security_exception", "missing authentication credentials for REST request ["+r.URL.Path+"]"))
		return false
	}
	if s.APIKey != "" && got == "ApiKey "+s.APIKey {
		return true
	}
	if s.Username != "" && got == "Basic "+base64.StdEncoding.EncodeToString([]byte(s.Username+":"+s.Password)) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="security" charset="UTF-8"`)
	writeJSON(w, http.StatusUnauthorized, errorJSON(401, "security_exception", "unable to authenticate user for REST request ["+r.URL.Path+"]"))
	return false
}

func (s *Standin) handle(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/" && r.Method == http.MethodGet:
		writeJSON(w, 200, []byte(`{"name":"standin","cluster_name":"conveyor-standin","cluster_uuid":"standin","version":{"number":"8.15.0","build_flavor":"default","lucene_version":"9.11.1","minimum_wire_compatibility_version":"7.17.0","minimum_index_compatibility_version":"7.0.0"},"tagline":"You Know, for Search"}`))
	case parts[len(parts)-1] == "_bulk" && len(parts) <= 2 && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		target := ""
		if len(parts) == 2 {
			target = parts[0]
		}
		s.bulk(w, r, target)
	case len(parts) == 2 && parts[1] == "_count" && r.Method == http.MethodGet:
		writeJSON(w, 200, []byte(fmt.Sprintf(`{"count":%d,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0}}`, s.Count(parts[0]))))
	case len(parts) == 3 && parts[1] == "_doc" && r.Method == http.MethodGet:
		src := s.Doc(parts[0], parts[2])
		if src == nil {
			writeJSON(w, 404, []byte(fmt.Sprintf(`{"_index":%q,"_id":%q,"found":false}`, parts[0], parts[2])))
			return
		}
		writeJSON(w, 200, []byte(fmt.Sprintf(`{"_index":%q,"_id":%q,"found":true,"_source":%s}`, parts[0], parts[2], src)))
	default:
		writeJSON(w, 400, errorJSON(400, "illegal_argument_exception", "request ["+r.Method+" "+r.URL.Path+"] is not served by the stand-in"))
	}
}
