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
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
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
	requests int
	statuses map[int]int // item statuses answered, by status
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "estest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
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

// action is one parsed _bulk action.
type action struct {
	kind, index, id string
	version         int64
	external        bool
	doc             json.RawMessage
	err             []byte // a per-item error body, when the action is invalid
	status          int
}

func (s *Standin) bulk(w http.ResponseWriter, r *http.Request, target string) {
	start := time.Now()
	acts, err := parseBulk(r, target)
	s.mu.Lock()
	s.requests++
	if len(s.failNext) > 0 {
		status := s.failNext[0]
		s.failNext = s.failNext[1:]
		s.mu.Unlock()
		if status == http.StatusTooManyRequests {
			writeJSON(w, status, errorJSON(status, "es_rejected_execution_exception", "rejected execution of coordinating operation [shard_detail=[], coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=1, max_coordinating_and_primary_bytes=0]"))
		} else {
			writeJSON(w, status, errorJSON(status, "cluster_block_exception", "blocked by: [SERVICE_UNAVAILABLE/2/no master];"))
		}
		return
	}
	if err != nil {
		s.mu.Unlock()
		writeJSON(w, 400, errorJSON(400, "illegal_argument_exception", err.Error()))
		return
	}
	var items bytes.Buffer
	failed := false
	for i := range acts {
		a := &acts[i]
		if i > 0 {
			items.WriteByte(',')
		}
		var res []byte
		if s.rejectN > 0 {
			s.rejectN--
			a.status = http.StatusTooManyRequests
			a.err = itemError("es_rejected_execution_exception", "rejected execution of primary operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, primary_operation_bytes=1, max_coordinating_and_primary_bytes=0]", "")
		} else if a.err == nil {
			res = s.apply(a)
		}
		s.statuses[a.status]++
		failed = failed || a.err != nil
		fmt.Fprintf(&items, `{%q:{"_index":%q,"_id":%q,"status":%d`, a.kind, a.index, a.id, a.status)
		if a.err != nil {
			items.WriteString(`,"error":`)
			items.Write(a.err)
		} else {
			items.Write(res)
		}
		items.WriteString("}}")
	}
	s.mu.Unlock()
	var out bytes.Buffer
	fmt.Fprintf(&out, `{"took":%d,"errors":%t,"items":[`, time.Since(start).Milliseconds(), failed)
	out.Write(items.Bytes())
	out.WriteString("]}")
	writeJSON(w, 200, out.Bytes())
}

func itemError(typ, reason, index string) []byte {
	m := map[string]any{"type": typ, "reason": reason}
	if index != "" {
		m["index"] = index
	}
	b, _ := json.Marshal(m)
	return b
}

// parseBulk reads the NDJSON body: an action line, then (except for
// delete) a source line.
func parseBulk(r *http.Request, target string) ([]action, error) {
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 100<<20)
	var out []action
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var head map[string]struct {
			Index       string `json:"_index"`
			ID          any    `json:"_id"`
			Version     *int64 `json:"version"`
			VersionType string `json:"version_type"`
		}
		if err := json.Unmarshal(b, &head); err != nil || len(head) != 1 {
			return nil, fmt.Errorf("Malformed action/metadata line [%d], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]", line)
		}
		var a action
		for k, v := range head {
			a.kind, a.index = k, v.Index
			if a.index == "" {
				a.index = target
			}
			switch id := v.ID.(type) {
			case string:
				a.id = id
			case nil:
			default:
				return nil, fmt.Errorf("Malformed action/metadata line [%d], _id must be a string", line)
			}
			if v.Version != nil {
				a.version = *v.Version
			}
			a.external = v.VersionType == "external" || v.VersionType == "external_gt"
		}
		switch a.kind {
		case "index", "create", "update":
			if !sc.Scan() {
				return nil, fmt.Errorf("Validation Failed: 1: no requests added; the action on line [%d] has no source", line)
			}
			line++
			a.doc = append(json.RawMessage(nil), bytes.TrimSpace(sc.Bytes())...)
		case "delete":
		default:
			return nil, fmt.Errorf("Malformed action/metadata line [%d], expected field [create], [delete], [index] or [update] but found [%s]", line, a.kind)
		}
		switch {
		case a.index == "":
			a.status, a.err = 400, itemError("action_request_validation_exception", "Validation Failed: 1: index is missing;", "")
		case a.kind == "update":
			a.status, a.err = 400, itemError("illegal_argument_exception", "the stand-in does not implement update actions", a.index)
		case a.kind == "delete" && a.id == "":
			a.status, a.err = 400, itemError("action_request_validation_exception", "Validation Failed: 1: id is missing;", "")
		case a.external && a.id == "":
			a.status, a.err = 400, itemError("action_request_validation_exception", "Validation Failed: 1: an id must be provided if version type or value are set;", "")
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// apply performs one valid action with mu held; it sets a.status (and
// a.err) and returns the rest of a successful item.
func (s *Standin) apply(a *action) []byte {
	ix := s.indices[a.index]
	if ix == nil {
		ix = &index{docs: map[string]json.RawMessage{}, versions: map[string]int64{}, mapping: map[string]string{}}
		s.indices[a.index] = ix
	}
	if a.id == "" {
		a.id = "auto-" + strconv.Itoa(len(ix.versions)+1)
	}
	cur, seen := ix.versions[a.id]
	_, exists := ix.docs[a.id]
	conflict := func() []byte {
		a.status = http.StatusConflict
		if a.external {
			a.err = itemError("version_conflict_engine_exception", fmt.Sprintf("[%s]: version conflict, current version [%d] is higher or equal to the one provided [%d]", a.id, cur, a.version), a.index)
		} else {
			a.err = itemError("version_conflict_engine_exception", fmt.Sprintf("[%s]: version conflict, document already exists (current version [%d])", a.id, cur), a.index)
		}
		return nil
	}
	next := cur + 1
	if a.external {
		if seen && a.version <= cur {
			return conflict()
		}
		next = a.version
	}
	if a.kind == "delete" {
		ix.versions[a.id] = next
		if !exists {
			a.status = http.StatusNotFound
			return result("not_found", next)
		}
		delete(ix.docs, a.id)
		a.status = http.StatusOK
		return result("deleted", next)
	}
	if a.kind == "create" && exists {
		return conflict()
	}
	if reason := ix.check(a.doc, a.id); reason != "" {
		a.status = http.StatusBadRequest
		a.err = itemError("document_parsing_exception", reason, a.index)
		return nil
	}
	ix.docs[a.id] = a.doc
	ix.versions[a.id] = next
	if exists {
		a.status = http.StatusOK
		return result("updated", next)
	}
	a.status = http.StatusCreated
	return result("created", next)
}

func result(res string, version int64) []byte {
	return []byte(fmt.Sprintf(`,"_version":%d,"result":%q,"_shards":{"total":1,"successful":1,"failed":0},"_seq_no":%d,"_primary_term":1`, version, res, version))
}

// check maps the document's top-level fields dynamically and returns why
// it cannot be indexed, or "".
func (ix *index) check(doc json.RawMessage, id string) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return fmt.Sprintf("[1:1] failed to parse: the source of document with id '%s' is not a JSON object", id)
	}
	kinds := map[string]string{}
	for name, raw := range fields {
		k := kindOf(raw)
		if k == "" {
			continue // null and arrays: no mapping decided here
		}
		want, ok := ix.mapping[name]
		if !ok {
			kinds[name] = k
			continue
		}
		if !fits(want, k, raw) {
			if want == "object" {
				return fmt.Sprintf("object mapping for [%s] tried to parse field [%s] as object, but found a concrete value", name, name)
			}
			return fmt.Sprintf("[1:2] failed to parse field [%s] of type [%s] in document with id '%s'. Preview of field's value: '%s'", name, want, id, preview(raw))
		}
	}
	for name, k := range kinds {
		ix.mapping[name] = k
	}
	return ""
}

func kindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "text"
	case '{':
		return "object"
	case 't', 'f':
		return "boolean"
	case 'n', '[':
		return ""
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "float"
	}
	return "long"
}

// fits reports whether a value of kind got can go into a field mapped as
// want, with Elasticsearch's coercions (numbers from numeric strings, text
// from any scalar).
func fits(want, got string, raw json.RawMessage) bool {
	switch want {
	case got:
		return true
	case "text":
		return got != "object"
	case "long", "float":
		if got == "long" || got == "float" {
			return true
		}
		if got == "text" {
			var s string
			_ = json.Unmarshal(raw, &s)
			_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			return err == nil
		}
	case "boolean":
		if got == "text" {
			var s string
			_ = json.Unmarshal(raw, &s)
			return s == "true" || s == "false" || s == ""
		}
	}
	return false
}

func preview(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	if len(s) > 20 {
		s = s[:20]
	}
	return s
}
