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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Worker-to-worker requests (a write forwarded to the leader, task configs
// a follower sends) carry proof that a member of the group sent them: an
// HMAC with the session key the leader shares through the config topic
// (Kafka Connect's KIP-507). The leader refuses such a request without a
// valid signature, so a REST token alone (or a worker of another cluster
// with its own token) cannot get one accepted.
const (
	// HeaderSignature is the base64 HMAC of the request (Kafka's header).
	HeaderSignature = "X-Connect-Authorization"
	// HeaderSignatureAlgorithm names the MAC (Kafka's header).
	HeaderSignatureAlgorithm = "X-Connect-Request-Signature-Algorithm"
	// HeaderSignedAt is when the request was signed (Unix milliseconds);
	// it is signed too, so a request cannot be replayed after MaxSignatureAge.
	HeaderSignedAt = "X-Conveyor-Signed-At"
	// SignatureAlgorithm is the only MAC used.
	SignatureAlgorithm = "HmacSHA256"
	// MaxSignatureAge bounds how old (or how far ahead, for clock skew) a
	// signed request may be.
	MaxSignatureAge = 5 * time.Minute
)

// SessionKeys returns the session key to sign with and the keys a
// signature may verify against (the current one and the one before it);
// ok is false while no leader has written a key yet.
type SessionKeys func() (sign []byte, verify [][]byte, ok bool)

// errNoSessionKey is the answer while no session key is known yet.
var errNoSessionKey = errors.New("no session key has been distributed to this worker yet (the group is forming); try again")

// signature is the HMAC of what identifies a request: method, path, query,
// signing time and body.
func signature(key []byte, method, path, query, signedAt string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, part := range []string{method, path, query, signedAt} {
		m.Write([]byte(part))
		m.Write([]byte{'\n'})
	}
	m.Write(body)
	return m.Sum(nil)
}

// signRequest signs req (its URL must be final) with key.
func signRequest(req *http.Request, body []byte, key []byte, now time.Time) {
	at := strconv.FormatInt(now.UnixMilli(), 10)
	sig := signature(key, req.Method, req.URL.EscapedPath(), req.URL.RawQuery, at, body)
	req.Header.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
	req.Header.Set(HeaderSignatureAlgorithm, SignatureAlgorithm)
	req.Header.Set(HeaderSignedAt, at)
}

// verifySignature checks r's signature against keys.
func verifySignature(r *http.Request, body []byte, keys [][]byte, now time.Time) error {
	got := r.Header.Get(HeaderSignature)
	if got == "" {
		return errors.New("the request carries no " + HeaderSignature + " signature: only a worker of this cluster, with the session key, may send it")
	}
	if alg := r.Header.Get(HeaderSignatureAlgorithm); alg != SignatureAlgorithm {
		return errors.New("signature algorithm " + strconv.Quote(alg) + " is not supported; want " + SignatureAlgorithm)
	}
	at := r.Header.Get(HeaderSignedAt)
	ms, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return errors.New("the " + HeaderSignedAt + " header is not a time in Unix milliseconds")
	}
	if d := now.Sub(time.UnixMilli(ms)); d > MaxSignatureAge || d < -MaxSignatureAge {
		return errors.New("the request was signed " + d.Round(time.Second).String() + " from now, beyond " + MaxSignatureAge.String())
	}
	sig, err := base64.StdEncoding.DecodeString(got)
	if err != nil {
		return errors.New("the " + HeaderSignature + " header is not base64")
	}
	for _, k := range keys {
		if hmac.Equal(sig, signature(k, r.Method, r.URL.EscapedPath(), r.URL.RawQuery, at, body)) {
			return nil
		}
	}
	return errors.New("the request signature does not match this cluster's session key")
}

// needsSignature reports whether r must be signed: it says it was
// forwarded by a worker (forward=false), or it is the internal task
// configs endpoint.
func needsSignature(r *http.Request) bool {
	if strings.EqualFold(r.URL.Query().Get(forwardParam), "false") {
		return true
	}
	return (r.Method == http.MethodPut || r.Method == http.MethodPost) && strings.HasPrefix(r.URL.Path, "/connectors/") && strings.HasSuffix(r.URL.Path, "/tasks")
}
